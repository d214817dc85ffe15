"""Per-role settings through `sweep transfer`: carried as tuned, with what `sweep verify` measured for each.

A role's multipliers (`optimizer.roles.<role>.lr_mult`, `.weight_decay_mult`, `model.init.<role>`) are width-free
under μP (a role's LR is base LR × μP multiplier × lr_mult), so the full run keeps the proxy's values. Whether
each optimum really stays put is `sweep verify --param PATH`'s question; its summary, when there is one, goes into
the full run's provenance (`provenance.verify.roles`), and a setting whose μP optimum drifted past verify's bound,
or that was never verified, is reported by name rather than carried in silence. Under `--role-rule fitted` a
setting whose verify measured a width law with an interval follows it instead (`role_laws`, sweep/rules/plan.py).
A role's width exponent (`lr_width_exp`) is a rule, not a width-free constant: carried as it is, it moves that
role's LR at the target by (W'/W₀)^e, and transfer names it.
"""
from __future__ import annotations

from pathlib import Path

from sweep.rules.fitted import Law
from sweep.rules.prior import prior_for
from sweep.rules.summary import axis_folder, has_interval, octaves, read_summary
from trainer.config import RunConfig


def role_settings(cfg: RunConfig) -> dict[str, float]:
    """{RunConfig path: value} of every per-role setting away from 1."""
    settings = {f"model.init.{role}": v for role, v in cfg.model.init.given().items()}
    for role, (lr_mult, wd_mult) in cfg.optimizer.roles.given().items():
        for field, value in (("lr_mult", lr_mult), ("weight_decay_mult", wd_mult)):
            if value != 1.0:
                settings[f"optimizer.roles.{role}.{field}"] = value
    return settings


def role_records(root: str | Path, spec_name: str, cfg: RunConfig) -> dict[str, dict]:
    """{path: {value, and when verified: widths, drift and noise (octaves), passed, and poor_at: the widths whose μP
    optimum was a poor fit, when any}} per carried role setting;
    {value, rule: "width"} per role width exponent (`lr_width_exp`: a width rule, carried as it is, which moves the
    role's LR at the target by m^e; what verify checks under it is the role's lr_mult)."""
    records = {f"optimizer.roles.{role}.lr_width_exp": {"value": e, "rule": "width"}
               for role, e in cfg.optimizer.roles.width_exps().items()}
    for path, value in role_settings(cfg).items():
        summary = read_summary(root, spec_name, path)
        record = {"value": value}
        if summary:
            mup = summary.get("parametrizations", {}).get("mup", {})
            poor = sorted(row["width"] for row in summary.get("optima", [])
                          if row.get("parametrization") == "mup" and row.get("poor_fit") and "width" in row)
            record.update(widths=summary.get("widths", []), drift=mup.get("drift"), noise=mup.get("noise"),
                          passed=mup.get("passed"), **({"poor_at": poor} if poor else {}))
        records[path] = record
    return records


def role_laws(root: str | Path, spec_name: str, cfg: RunConfig, prior: str = "published") -> tuple[Law, ...]:
    """The μP width law `sweep verify --param PATH` measured for each per-role setting of `cfg`, where it has an
    interval: the posterior over μP's prior (the role's table exponent holds, sweep/rules/prior.py), or the
    measurement alone (`prior` "none")."""
    laws = []
    for path in role_settings(cfg):
        summary = read_summary(root, spec_name, path)
        law = (summary or {}).get("laws", {}).get("mup")
        if law is not None and has_interval(law):
            published = prior_for(path, "width") if prior == "published" else None
            laws.append(Law.updated(path, "width", law, (min(law["at"]), max(law["at"])), axis_folder(spec_name, path),
                                    published, summary.get("source")))
    return tuple(laws)


def role_lines(records: dict[str, dict]) -> list[str]:
    """One console line per carried role setting: verified and held, held but measured through a poor fit, drifted,
    not verified, or a width rule."""
    lines = []
    for path, r in records.items():
        if r.get("rule") == "width":
            lines.append(f"carried {path} = {r['value']:g}: a width rule, the role's LR × (width / base width)^e at "
                         f"every width; `sweep verify SPEC --param {path.removesuffix('lr_width_exp')}lr_mult` checks "
                         "that the role's optimum holds under it")
        elif "passed" not in r:
            lines.append(f"[yellow]not verified[/]: {path} = {r['value']:.4g} carried from the proxy; "
                         f"`sweep verify SPEC --param {path}` checks that its optimum holds across width")
        elif "fitted" in r:
            lines.append(f"fitted {path}: {r['value']:.4g} → {r['fitted']:.4g} by its width law (verify: drift "
                         f"{octaves(r['drift'])} octaves over widths {span(r['widths'])})")
        elif r["passed"] is False:
            lines.append(f"[red]drifts[/]: {path} = {r['value']:.4g}: its μP optimum moved {octaves(r['drift'])} "
                         f"octaves over widths {span(r['widths'])}; carried as tuned: `--role-rule fitted` "
                         "carries it by its width law, or re-tune it nearer the target width")
        elif r.get("poor_at"):
            lines.append(f"[yellow]carried, poorly measured[/]: {path} = {r['value']:.4g} (verify: drift "
                         f"{octaves(r['drift'])} octaves, but its optimum at width "
                         f"{', '.join(map(str, r['poor_at']))} is a poor fit, e.g. at the grid's edge: widen "
                         f"`sweep verify SPEC --param {path}`'s grid)")
        else:
            lines.append(f"carried {path} = {r['value']:.4g} (verify: drift {octaves(r['drift'])} ± "
                         f"{octaves(r['noise'])} octaves)")
    return lines


def span(widths: list[int]) -> str:
    return f"{widths[0]}–{widths[-1]}" if widths else "?"
