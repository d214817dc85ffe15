"""What `sweep verify` leaves for others to read: ROOT/NAME-verify-SETTING/summary.json (the grid, the seeds,
each parametrization's drift, noise and verdict) and figure1.png; `sweep transfer` records the summary in the
full run's provenance, `sweep report` shows both."""
from __future__ import annotations

import json
from pathlib import Path

from trainer.atomic import atomic_path


def verify_name(spec_name: str, param: str) -> str:
    """NAME-verify-lr for optimizer.lr; a per-role setting keeps its role (NAME-verify-embedding-lr_mult,
    NAME-verify-init-readout), so two roles' grids never share a study."""
    parts = param.split(".")
    if param.startswith(("optimizer.roles.", "model.init.")) and len(parts) > 2:
        return f"{spec_name}-verify-{'-'.join(parts[2:]) if parts[0] == 'optimizer' else 'init-' + parts[2]}"
    return f"{spec_name}-verify-{parts[-1]}"


def write_summary(folder: Path, summary: dict) -> None:
    with atomic_path(folder / "summary.json") as tmp:
        tmp.write_text(json.dumps(summary, indent=2))


def read_summary(root: str | Path, spec_name: str, param: str = "optimizer.lr") -> dict | None:
    path = Path(root) / verify_name(spec_name, param) / "summary.json"
    return json.loads(path.read_text()) if path.is_file() else None
