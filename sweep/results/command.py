"""`sweep results`: the ranked trials of a sweep's studies, and their plots."""
from __future__ import annotations

import sys
from pathlib import Path

from rich.console import Console

from sweep.errors import InputError
from sweep.paths import results_root
from sweep.results.table import optimizer_choices, optimizer_ranking, rich_table, to_json, trials_frame
from sweep.study.lookup import load_studies, locate


def run_results(spec_or_name: str, *, width: int | None, top: int, fmt: str, storage: str | None,
                password_env: str | None, plots: bool, console: Console) -> None:
    if top < 1:
        raise InputError(f"--top: must be at least 1, got {top}")
    name, url = locate(spec_or_name, storage=storage, password_env=password_env)
    studies = load_studies(name, url, width)
    frames = {s.study_name: trials_frame(s, results_root()) for s in studies}
    if fmt == "table":
        for study in studies:
            study_name, frame = study.study_name, frames[study.study_name]
            title = f"{study_name}: top {min(top, len(frame))} of {len(frame)} trials"
            console.print(rich_table(frame.head(top), title))
            ranking = optimizer_ranking(frame, optimizer_choices(study))
            if not ranking.empty:
                console.print(rich_table(ranking, f"{study_name}: optimizers by their best trial"))
    elif fmt == "csv":
        for i, (study_name, frame) in enumerate(frames.items()):
            frame.head(top).assign(study=study_name).to_csv(sys.stdout, index=False, header=i == 0)
    else:
        print(to_json({n: f.head(top) for n, f in frames.items()}))
    if plots:
        from sweep.results.plots import write_plots  # matplotlib: only when plots are written

        notes = Console(stderr=True) if fmt != "table" else console
        for study in studies:
            out = results_root() / name / "plots" / study.study_name
            written, skipped = write_plots(study, Path(out), top)
            if written:
                notes.print(f"plots of {study.study_name}: {out}/ ({', '.join(p.name for p in written)})")
            for plot, why in skipped.items():
                notes.print(f"[dim]{plot} plot skipped: {why}[/]")
