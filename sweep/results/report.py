"""`sweep report`: one self-contained HTML file of a sweep, from coordinate check to full run.

Sections: what a user decides from first (sweep/results/decide.py: the transferred settings beside the
textbook's, each law as prior → measured → posterior, the predicted band with the full run on it, the verdicts),
then the coordinate check, the sweep's history, parameter importance and parallel coordinates
(its μP study; `sweep results`' plots), the Figure-1 plot of `sweep verify` with its drift, each
transferred config with its provenance, and the full runs' curves beside the proxy trials whose
settings they carry. Images are embedded as data URIs and nothing is fetched, so the file opens
offline and can be mailed. A section whose step has not run says which command makes it.
One line of inline script marks each image the browser loaded and sized once the page has loaded
(`data-rendered`, its pixel width), which the headless-browser test reads back from the DOM.

Every text the page shows is escaped by construction: the page is built from `Markup` templates (Jinja's escaper,
markupsafe) whose `.format` escapes each value, so a study name, a path or a field read back from a file the run or
a user wrote reaches the page as text, never as markup; only a fragment built the same way passes whole.
"""
from __future__ import annotations

import base64
import io
from pathlib import Path

import matplotlib.pyplot as plt
import pandas as pd
from markupsafe import Markup
from rich.console import Console

from sweep.paths import inside_root, results_root, stored_model
from sweep.results.compare import compare_figure
from sweep.results.compare import read_curve as read_run_curve
from sweep.results.decide import opening
from sweep.results.plots import write_plots
from sweep.results.runs_table import run_rows
from sweep.results.scope import Scope
from sweep.rules.prior import chain_text
from sweep.rules.summary import axis_folder, interval_text, ladder_widths, octaves, read_summary, verify_name
from sweep.study.lookup import load_studies, locate
from trainer.atomic import atomic_path
from trainer.config import RunConfig

STYLE = """body{font-family:system-ui,sans-serif;max-width:1100px;margin:2em auto;color:#222}
section{border-top:1px solid #ccc;padding:.5em 0 1.5em}img{max-width:100%}pre{background:#f6f6f6;padding:1em;
overflow-x:auto;font-size:12px}table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:3px 8px}
.missing{color:#a60}"""
MARK_RENDERED = Markup("<script>addEventListener('load',()=>document.querySelectorAll('img').forEach(i=>"
                 "{if(i.complete&&i.naturalWidth)i.dataset.rendered=i.naturalWidth}))</script>")


def png_tag(data: bytes, alt: str) -> Markup:
    return Markup('<img alt="{}" src="data:image/png;base64,{}">').format(alt, base64.b64encode(data).decode())


def figure_png(figure: plt.Figure) -> bytes:
    buffer = io.BytesIO()
    figure.savefig(buffer, dpi=90, format="png", bbox_inches="tight")
    plt.close(figure)
    return buffer.getvalue()


def missing(command: str) -> Markup:
    return Markup('<p class="missing">not run yet: <code>{}</code></p>').format(command)


def section(key: str, title: str, body: Markup) -> Markup:
    return Markup('<section id="{}"><h2>{}</h2>{}</section>').format(key, title, body)


def coord_check_section(root: Path, model: str) -> Markup:
    folder = inside_root(root / "coord-check" / f"{model}-mup", root, "coord-check")
    if not (folder / "coord_check.png").is_file():
        return missing(f"sweep coord-check --model {model}")
    verdict = pd.read_parquet(inside_root(folder / "verdict.parquet", root, "coord-check"))
    passed = int(verdict["passed"].sum())
    return (Markup("<p>{} of {} module checks pass ({})</p>").format(passed, len(verdict), folder)
            + png_tag(inside_root(folder / "coord_check.png", root, "coord-check").read_bytes(), "coordinate check"))


def sweep_sections(study, plots: Path) -> dict[str, Markup]:
    written, skipped = write_plots(study, plots, top=5)
    names = {p.stem: p for p in written}
    out = {}
    for key in ("history", "importance", "parallel"):
        out[key] = png_tag(names[key].read_bytes(), key) if key in names else \
            Markup('<p class="missing">{}</p>').format(skipped.get(key, skipped.get("all", "no plot")))
    return out


def verify_section(root: Path, name: str, spec: str) -> Markup:
    summary = read_summary(root, name)
    if summary is None:
        return missing(f"sweep verify {spec}")
    folder = root / verify_name(name, "optimizer.lr")
    one = (summary.get("seeds") or 1) == 1
    row = Markup("<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>")
    rows = Markup("").join(row.format(p, octaves(v.get("drift")),
                                      "unknown (one seed)" if one else "±" + octaves(v.get("noise")),
                                      ("undecided" if p == "mup" else "") if v["passed"] is None
                                      else "pass" if v["passed"] else "FAIL")
                           for p, v in summary["parametrizations"].items())
    shown = {key: summary.get(key, "?") for key in ("param", "widths", "seeds", "max_drift")}
    return (Markup("<p>optimum of {param} across widths {widths}, {seeds} seed(s); bound {max_drift} octave(s)</p>"
                   "<table><tr><th>parametrization</th><th>drift (octaves)</th><th>seed noise</th><th>verdict</th>"
                   "</tr>{rows}</table>").format(**shown, rows=rows)
            + law_line(summary.get("laws", {}).get("mup"))
            + png_tag(inside_root(folder / "figure1.png", root, "verify").read_bytes(), "figure 1")
            + Markup("").join(ladder_section(root, name, axis, **at) for axis, at in ladders(root, name)))


def ladders(root: Path, name: str) -> list[tuple[str, dict]]:
    """(axis, {} or {width} or {batch}) of every LR ladder's folder: the proxy's point, a second width's
    (`--ladder-width`), another batch's (`--ladder-batch`)."""
    found = []
    for axis in ("batch_size", "tokens", "steps", "depth"):
        found += [(axis, {})] + [(axis, {"width": w}) for w in ladder_widths(root, name, "optimizer.lr", axis)]
        found += [(axis, {"batch": b}) for b in ladder_widths(root, name, "optimizer.lr", axis, "b")]
    return found


def law_line(law: dict | None) -> Markup:
    """μP's width law: its slope prior → measured → posterior and its equivalence verdict ("" when none)."""
    if not law:
        return Markup("")
    return Markup("<p>μP width law: {}; {}</p>").format(chain_text(law), law.get("certificate", ""))


def ladder_section(root: Path, name: str, axis: str, width: int | None = None, batch: int | None = None) -> Markup:
    """A `sweep verify --across AXIS` law (at a second width: `--ladder-width`; at another batch: `--ladder-batch`),
    its certificate and its Figure 1 ("" when not measured)."""
    summary = read_summary(root, name, axis=axis, width=width, batch=batch)
    law = (summary or {}).get("laws", {}).get("mup")
    if not law:
        return Markup("")
    folder = root / axis_folder(name, "optimizer.lr", axis, width, batch)
    at = f" at width {width}" if width else f" at batch {batch}" if batch else ""
    return (Markup("<h3>across {}{}</h3><p>optimal LR ∝ {}^s, s = {:.3f} {}; {}</p><p>slope: {}</p>").format(
                axis, at, axis, law["slope"], interval_text(law), law["certificate"], chain_text(law))
            + png_tag(inside_root(folder / "figure1.png", root, "verify").read_bytes(), f"figure 1 across {axis}"))


def transfer_section(root: Path, name: str, spec: str) -> Markup:
    configs = sorted((root / name / "transfer").glob("*.yaml"))
    if not configs:
        return missing(f"sweep transfer {spec} --width W")
    return Markup("").join(Markup("<h3>{}</h3><pre>{}</pre>").format(
        path.name, RunConfig.load(inside_root(path, root, "transfer")).to_yaml()) for path in configs)


def proxy_vs_full_section(where: Scope) -> Markup:
    """`sweep compare` of every full run with the proxy runs of the trial it came from, x = fraction of the run."""
    runs = run_rows(where)
    full = runs[runs["kind"] == "full"]
    if full.empty:
        return missing("sweep train ROOT/NAME/transfer/CONFIG.yaml")
    sources = set(zip(full["provenance_study"], full["provenance_trial"], strict=True))
    from_source = runs[["provenance_study", "provenance_trial"]].apply(tuple, axis=1).isin(sources)
    proxies = runs[(runs["kind"] == "proxy") & from_source]
    shown = pd.concat([full, proxies]).reset_index(drop=True)
    curves = {run.path: read_run_curve(run, "val_loss") for run in shown.itertuples()}
    return png_tag(figure_png(compare_figure(shown, curves, "fraction", "val_loss")), "proxy vs full")


def build_report(spec_or_name: str, *, storage: str | None, password_env: str | None) -> tuple[str, Path]:
    name, url = locate(spec_or_name, storage=storage, password_env=password_env)
    studies = load_studies(name, url)
    root = results_root().resolve()
    mup = [s for s in studies if s.user_attrs.get("parametrization") == "mup"] or studies
    proxy = mup[-1]  # the widest μP study
    model = stored_model(proxy.user_attrs, url.redacted)
    verify = verify_section(root, name, spec_or_name)  # read (and refused when bad) before any plot is written
    transfer = transfer_section(root, name, spec_or_name)
    plots = sweep_sections(proxy, root / name / "plots" / proxy.study_name)
    scope = Scope(root, name, (url,))
    decide = Markup(opening(root, name, scope, lambda figure, alt: png_tag(figure_png(figure), alt)))  # it escapes
    # every value it writes (sweep/results/decide.py); as a plain str, section() escaped its tags into the page
    parts = [
        section("decide", "What to decide from: settings, laws, prediction, verdicts", decide),
        section("coord-check", "Coordinate check", coord_check_section(root, model)),
        section("history", f"Sweep history ({proxy.study_name})", plots["history"]),
        section("importance", "Parameter importance (PED-ANOVA)", plots["importance"]),
        section("parallel", "Parallel coordinates", plots["parallel"]),
        section("verify", "Verify: the optimum across widths (Figure 1)", verify),
        section("transfer", "Transferred config and its provenance", transfer),
        section("curves", "Full runs beside their proxy trials", proxy_vs_full_section(scope)),
    ]
    page = Markup("<!doctype html><html><head><meta charset='utf-8'><title>{name}: μP sweep report</title>"
                  "<style>{style}</style></head><body><h1>{name}: μP sweep report</h1>"
                  "<p>storage {storage} · studies {studies}</p>{parts}{mark}</body></html>").format(
        name=name, style=Markup(STYLE), storage=url.redacted, studies=", ".join(s.study_name for s in studies),
        parts=Markup("").join(parts), mark=MARK_RENDERED)
    return page, root / name / "report.html"


def run_report(spec_or_name: str, *, storage: str | None, password_env: str | None, out: Path | None,
               console: Console) -> Path:
    page, default = build_report(spec_or_name, storage=storage, password_env=password_env)
    path = out or default
    with atomic_path(path) as tmp:
        tmp.write_text(page)
    console.print(f"report: {path} ({len(page) / 1e6:.1f} MB, self-contained)")
    return path
