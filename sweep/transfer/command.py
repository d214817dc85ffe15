"""`sweep transfer`: the best proxy trial (or a chosen one) → a complete RunConfig for the full-size run.

The proxy's own RunConfig (stored on the trial) goes through the rules of `sweep.rules` in their stated
order; the result is a full run (`output.kind: full`, checkpoints at every evaluation so it can resume)
whose provenance names the study, the storage (never a password), the trial and its value, the proxy's
shape and budget, the verify drift when one was measured, and every rule with its before and after.
It writes under the results root of this command (the full run's `output.root` too), never under the root
the stored trial names: the storage may be someone else's.
"""
from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from rich.console import Console
from rich.table import Table

from proxies.registry import count_parameters
from sweep.errors import InputError
from sweep.forecast.live import INFORMATIVE, band, capped, ceiling, ratios, shape, without_ratios
from sweep.paths import named_inside, results_root
from sweep.rules import Change, Target
from sweep.rules.fitted import EXTRAPOLATION
from sweep.rules.ladder import ladder_runs, measured_anchors, measured_laws, predicted_loss, tuning_compute
from sweep.rules.memory import device_memory, sharding_change, with_sharding
from sweep.rules.plan import transfer_run
from sweep.rules.prior import slope_chain
from sweep.rules.roles import role_laws, role_lines, role_records
from sweep.rules.summary import read_summary
from sweep.study.lookup import load_studies, locate, pick_trial, read_curve
from sweep.study.spec import check_builder_named, load_spec
from sweep.study.study import package_version
from trainer.atomic import atomic_path
from trainer.config import Provenance, RunConfig

LIMITS = ("Tensor Programs V proves transfer across width only: regularization and depth transfer, and the batch and "
          "horizon rules, are empirical. Compare the full run's first evaluations with the proxy's before trusting it.")


def run_transfer(spec_path: Path, target: Target, *, trial: str, proxy_width: int | None, storage: str | None,
                 password_env: str | None, out: Path | None, console: Console,
                 device_memory_gb: float | None = None) -> Path:
    target.check()
    name, url = locate(str(spec_path), storage=storage, password_env=password_env)
    study, chosen = pick_trial(name, url, width=proxy_width, parametrization="mup", trial=trial)
    proxy = RunConfig.from_yaml(chosen.user_attrs["config"])
    given = load_spec(spec_path) if spec_path.suffix in (".yaml", ".yml") or spec_path.is_file() else None
    check_builder_named(proxy.model.name, given, f"trial {chosen.number} of {study.study_name}")
    source = proxy.data.open(proxy.seed)
    tokens_per_example = source.tokens_per_example
    b_noise = measured_noise_scale(chosen) if target.batch_rule == "noise" else None
    root = str(results_root().resolve())  # never the root the stored trial names: the storage may be someone else's
    proxy_steps = proxy.total_steps(tokens_per_example)
    point = {"width": proxy.model.width, "depth": proxy.model.depth, "batch_size": proxy.batch_size,
             "tokens": proxy_steps * proxy.batch_size * tokens_per_example}
    this = f"{study.study_name}#{chosen.number}"
    anchors = measured_anchors(root, name, this, point)
    laws = measured_laws(root, name, target.prior, target.batch_size or proxy.batch_size) \
        + role_laws(root, name, proxy, target.prior)
    result = transfer_run(proxy, target, tokens_per_example, b_noise, laws, anchors)
    result.warnings += [f"the law of {law['param']} across {law['axis']} was measured from the settings of "
                        f"{law['trial'] or 'an unnamed source'}, not this trial's ({this})"
                        for law in result.laws if law["trial"] != this]
    check_one_step(result.config, tokens_per_example)

    changes = list(result.changes)
    sharding, memory_line = sharding_change(result.config, source.model_options(), device_memory(device_memory_gb))
    if sharding is not None:
        changes.append(sharding)
    checkpoint = result.config.checkpoint
    if checkpoint.every == 0:
        every = result.config.eval.every
        checkpoint = checkpoint.model_copy(update={"every": every})
        why = "a full run checkpoints at every evaluation to resume"
        changes.append(Change("full-run", "checkpoint.every", 0, every, why))
    verify = read_summary(root, name)
    roles = role_records(root, name, proxy)
    for law in result.laws:
        if law["param"] in roles and law["axis"] == "width":
            roles[law["param"]]["fitted"] = law["after"]
    full_tokens = result.config.total_steps(tokens_per_example) * result.config.batch_size * tokens_per_example
    params = [count_parameters(c.model.name, c.model.width, c.model.depth, "mup",
                               **{**source.model_options(), **c.model.options}) for c in (proxy, result.config)]
    prediction, no_prediction = predicted_loss(root, name, params[1], full_tokens)
    if prediction:
        result.warnings += live_band(root, name, prediction, result.config, tokens_per_example)
    tuning = tuning_compute(root, load_studies(name, url), cached_params(source.model_options()), tokens_per_example,
                            6 * params[1] * full_tokens, name)
    provenance = Provenance(
        study=study.study_name, trial=chosen.number, storage=url.redacted, trial_value=chosen.value,
        created_by=f"sweep transfer {package_version()}",
        proxy={**point, "parametrization": proxy.model.parametrization, "steps": proxy_steps},
        verify=verify_record(verify, roles), rules=[c.record() for c in changes], laws=result.laws,
        prediction=prediction, tuning=tuning)
    sized = with_sharding(result.config) if sharding is not None else result.config
    full = RunConfig.parse({**sized.model_dump(mode="json"), "checkpoint": checkpoint.model_dump(),
                            "output": {**proxy.output.model_dump(), "root": root, "study": name, "kind": "full",
                                       "run": None},
                            "provenance": provenance.model_dump(mode="json")})
    path = out or Path(root) / name / "transfer" / f"w{full.model.width}-d{full.model.depth}-b{full.batch_size}.yaml"
    named_inside(path, Path(root), "--out")  # ROOT/NAME/transfer linked out of the root was written through
    with atomic_path(path) as tmp:
        tmp.write_text(full.to_yaml())
    console.print(f"from trial {chosen.number} of {study.study_name} (objective {chosen.value:.4f})")
    console.print(changes_table(changes))
    console.print(f"memory: {memory_line}")
    explain(full.provenance, verify, result.warnings, spec_path, console, no_prediction)
    console.print(f"wrote {path}; launch it with: sweep launch {path} (recorded for `sweep status`)")
    return path


def explain(provenance: Provenance, verify: dict | None, warnings: list[str], spec_path: Path,
            console: Console, no_prediction: str = "") -> None:
    """The verify verdict, the fitted laws beside the textbook's values, the prediction, the tuning share, the
    warnings and the limits."""
    if not verify:
        console.print(f"[yellow]no verify yet[/]: `sweep verify {spec_path}` measures whether the optimum holds "
                      "across width")
    elif verify["parametrizations"].get("mup", {}).get("passed") is False:
        drift = verify["parametrizations"]["mup"]["drift"]
        console.print(f"[red]verify failed[/]: the μP optimum drifted {drift:.2f} octaves")
    elif verify["parametrizations"].get("mup", {}).get("passed") is None and verify.get("laws", {}).get("mup"):
        console.print(f"[yellow]verify undecided[/]: {verify['laws']['mup'].get('certificate', '')}")
    for law in provenance.laws:
        flag = " [red]EXTRAPOLATED[/]" if law["extrapolated"] else ""
        poor = law.get("poor_at") and f"; [yellow]fitted through poor optima[/] at {law['axis']} " + \
            ", ".join(f"{v:g}" for v in law["poor_at"])
        console.print(f"fitted {law['param']} across {law['axis']}: {show(law['before'])} → {show(law['after'])} "
                      f"[{show(law['interval'][0])}, {show(law['interval'][1])}] (slope {law['slope']:.3f}); textbook "
                      + ", ".join(f"{k} {show(v)}" for k, v in law["textbook"].items()) + flag + (poor or ""))
        console.print(f"  slope: {slope_chain(law)}")
    for param, (before, after, low, high, axes) in combined(provenance.laws).items():
        console.print(f"fitted {param} across {' and '.join(axes)}: {show(before)} → {show(after)} "
                      f"[{show(low)}, {show(high)}] (each law's interval, compounded)")
    p = provenance.prediction
    if p:
        console.print(f"predicted final val loss {p['loss']:.4f} [{p['low']:.4f}, {p['high']:.4f}] ({p['level']:.0%}; "
                      f"{p['point'] + ' below' if p.get('point') else p['source'] + ', ' + p['form']}, "
                      f"{p['points']} ladder points, rms {p['rms']:.4f})")
        forms = p.get("forms", [])
        for form in forms if len(forms) > 1 else []:  # where two forms are fitted the interval holds both
            error = "-" if form["standard_error"] is None else f"{form['standard_error']:.4f}"
            console.print(f"  {form['form']}: {form['loss']:.4f} [{form['low']:.4f}, {form['high']:.4f}], residual "
                          f"standard error {error}")
        if p.get("held_out"):
            console.print(f"  {held_out_line(p['held_out'])}")
        for line in reach_lines(p):
            console.print(f"[yellow]warning[/]: {line}")
        if p.get("refine"):
            r = p["refine"]
            console.print(f"  while it trains: from {r['fraction'][0]:.0%} of the run the trainer predicts the final "
                          f"loss from its own curve (loss ratios of {r['runs']} ladder runs on its schedule, widths "
                          f"{', '.join(map(str, r['widths']))}); `sweep status` shows it")
        elif p.get("no_refine"):
            console.print(f"  while it trains: no final loss from its own curve: {p['no_refine']}")
    else:
        console.print(f"[yellow]no prediction[/]: {no_prediction or 'none measured'}")
    t = provenance.tuning
    console.print(f"tuning compute: {t['proxy_flops'] + t['verify_flops']:.3g} FLOPs (sweep {t['proxy_flops']:.3g}, "
                  f"verify {t['verify_flops']:.3g}) = {100 * t['share']:.3g}% of the full run's {t['full_flops']:.3g} "
                  "(C ≈ 6·N·D, Kaplan et al. 2020; Tensor Programs V spent 7% tuning GPT-3 6.7B)"
                  + ("; the tuning cost more than the full run" if t["share"] > 1 else ""))
    for line in role_lines(provenance.verify.get("roles", {})):
        console.print(line)
    for warning in warnings:
        console.print(f"[yellow]warning[/]: {warning}")
    console.print(f"[yellow]note[/]: {LIMITS}")


def live_band(root: str, name: str, prediction: dict, config: RunConfig, tokens_per_example: int) -> list[str]:
    """The whole predicted curve into `prediction` (sweep/forecast/live.py: collapsed from the ladder's runs, capped
    by the narrower run on the full run's schedule), which the trainer logs; or, where there is none, why, recorded
    (`no_band`: the report says it) and returned as the warning. Beside it the loss ratios (`refine`) from which the
    trainer predicts the final loss at each evaluation, where the ladder ran the full run's schedule."""
    runs = ladder_runs(root, name)
    steps = config.total_steps(tokens_per_example)
    end = {"width": config.model.width, "depth": config.model.depth, "batch_size": config.batch_size, "step": steps,
           "tokens": steps * config.batch_size * tokens_per_example}
    cap = ceiling(runs, {**end, "lr": config.optimizer.lr})  # the ceiling holds at the full run's own LR
    prediction.update(capped(prediction, cap))  # the interval `sweep status` shows is the one the band ends at
    curve = band([shape(rows) for rows in runs], prediction, float(prediction.get("E", 0.0)), cap) if runs else None
    every = ladder_runs(root, name, every_seed=True)
    refine = ratios(every, end)
    if refine:
        prediction["refine"] = refine
    else:
        prediction["no_refine"] = without_ratios(every, end)
    if curve:
        prediction["curve"] = curve
        return []
    prediction["no_band"] = (f"the ladder's curves scaled to the prediction's interval are wider than "
                             f"±{INFORMATIVE:.0%} of the loss at every fraction, too wide to hold the run to (more "
                             "ladder points or seeds narrow the interval)" if runs else
                             "no ladder run's validation curve was found to draw its shape from")
    return [f"no live band: {prediction['no_band']}"]


def held_out_line(h: dict) -> str:
    """The law fitted without the ladder's largest rung, predicting it: how far off, and whether its interval held."""
    verdict = "its interval holds it" if h["holds"] else "[yellow]its interval misses it[/]: trust the prediction less"
    return (f"held out: the largest rung (N {h['params']:.3g}, D {h['tokens']:.3g}) predicted {h['loss']:.4f} "
            f"[{h['low']:.4f}, {h['high']:.4f}] from the others, measured {h['measured']:.4f} ({h['error']:+.2%}); "
            f"{verdict}")


def reach_lines(p: dict) -> list[str]:
    """What a user holding a run to the prediction should know: how far past the ladder it reaches (past
    EXTRAPOLATION× the largest measured N or D), and an interval cut at 0 (it can flag only a run above it)."""
    beyond = p.get("beyond") or {}
    far = [f"{k} ×{v:.3g}" for k, v in beyond.items() if v > EXTRAPOLATION]
    lines = [f"the prediction reaches past the ladder's largest point ({', '.join(far)}): its interval prices the "
             "points' noise, not whether the law holds that far"] if far else []
    if p.get("cut_at_zero"):
        lines.append(f"the prediction's interval reached below 0 and is cut there: it can flag only a run that ends "
                     f"above {p['high']:.4f}")
    return lines


def combined(laws: list[dict]) -> dict[str, tuple]:
    """Per setting moved by two or more laws: (proxy value, target value, low, high, axes), the interval the product
    of each law's factor θ'/θ over its own interval: every law's error at once, the widest the laws allow."""
    out = {}
    for law in laws:
        factor_low, factor_high = (end / law["before"] for end in law["interval"])
        before, _, low, high, axes = out.get(law["param"], (law["before"], None, 1.0, 1.0, []))
        out[law["param"]] = (before, law["after"], low * factor_low, high * factor_high, [*axes, law["axis"]])
    return {param: (before, after, before * low, before * high, axes)
            for param, (before, after, low, high, axes) in out.items() if len(axes) > 1}


def measured_noise_scale(trial) -> float:
    """The last gradient noise scale B_simple (examples) in the proxy trial's curve."""
    curve = read_curve(trial)
    if curve is not None and "noise_scale" in curve and curve["noise_scale"].notna().any():
        return float(curve["noise_scale"].dropna().iloc[-1])
    raise InputError("--batch-rule noise: the proxy trial's curve holds no gradient noise scale "
                     "(eval.noise_scale_batches: 0); pick another rule or sweep with it on")


def cached_params(options: dict) -> Callable[[RunConfig], float]:
    """A trial config's parameter count (the data's model options under its own), counted once per shape."""
    counts: dict[str, float] = {}

    def params_of(c: RunConfig) -> float:
        m, merged = c.model, {**options, **c.model.options}
        key = json.dumps([m.name, m.width, m.depth, m.parametrization, merged], sort_keys=True, default=str)
        if key not in counts:
            counts[key] = count_parameters(m.name, m.width, m.depth, m.parametrization, **merged)
        return counts[key]
    return params_of


def check_one_step(config: RunConfig, tokens_per_example: int) -> None:
    """A token budget below one step of the target's batch would train another budget than the one asked for."""
    step = config.batch_size * tokens_per_example
    if config.tokens is not None and config.tokens < step:
        raise InputError(f"--tokens: the budget {config.tokens} is below one step of the target ({step} tokens at "
                         f"batch {config.batch_size}); give --tokens of at least one step or a smaller --batch-size")


def verify_record(summary: dict | None, roles: dict[str, dict]) -> dict:
    """The verify drift of optimizer.lr, and under `roles` each carried per-role setting's (`sweep.rules.roles`)."""
    record = {"roles": roles} if roles else {}
    if not summary:
        return record
    return {**record, "param": summary["param"], "widths": summary["widths"], "seeds": summary["seeds"],
            "max_drift": summary["max_drift"],
            **{f"drift_{p}": v["drift"] for p, v in summary["parametrizations"].items()},
            **{f"noise_{p}": v["noise"] for p, v in summary["parametrizations"].items()}}


def changes_table(changes: list[Change]) -> Table:
    table = Table(title="proxy → full run: every setting a rule changed")
    for column in ("setting", "proxy", "full run", "rule", "why"):
        table.add_column(column)
    for c in changes:
        table.add_row(c.field, show(c.before), show(c.after), c.rule, c.formula)
    return table


def show(value) -> str:
    return f"{value:.4g}" if isinstance(value, float) else str(value)
