"""What `sweep verify` leaves for others to read: ROOT/NAME-verify-SETTING/summary.json across width (the grid,
the seeds, each parametrization's drift, noise and verdict, the law), ROOT/NAME-verify-SETTING-across-AXIS/
summary.json across another axis, and figure1.png beside each; `sweep transfer` records the width summary in the
full run's provenance and applies the laws of the others (`--batch-rule fitted`), `sweep report` shows them.

The certificate a law earns depends on its axis: across width, μP's (the interval contains 0 and lies inside
± max_drift per octave of the measured range); across batch size, which of the linear (s = 1, Goyal et al.
2017) and square-root (s = ½, Malladi et al. 2022) rules the interval holds; across tokens or steps, the
horizon exponent itself (Bjorck et al. 2025 measure LR* ∝ D^−β with β > 0).
"""
from __future__ import annotations

import json
import math
from pathlib import Path

from trainer.atomic import atomic_path


def verify_name(spec_name: str, param: str) -> str:
    """NAME-verify-lr for optimizer.lr; a per-role setting keeps its role (NAME-verify-embedding-lr_mult,
    NAME-verify-init-readout), so two roles' grids never share a study."""
    parts = param.split(".")
    if param.startswith(("optimizer.roles.", "model.init.")) and len(parts) > 2:
        return f"{spec_name}-verify-{'-'.join(parts[2:]) if parts[0] == 'optimizer' else 'init-' + parts[2]}"
    return f"{spec_name}-verify-{parts[-1]}"


def axis_folder(spec_name: str, param: str, axis: str = "width") -> str:
    """NAME-verify-SETTING across width (as before axes existed), NAME-verify-SETTING-across-AXIS otherwise."""
    name = verify_name(spec_name, param)
    return name if axis == "width" else f"{name}-across-{axis.rsplit('.', 1)[-1]}"


def certificate(axis: str, parametrization: str, law: dict, max_drift: float) -> dict:
    """{certificate: one line, passed: bool | None} for a law {slope, low, high, at} along `axis`."""
    low, high = law["low"], law["high"]
    inside = "inside" if low <= 1 <= high else "outside"
    if axis == "width" and parametrization == "mup":
        band = max_drift / math.log2(max(law["at"]) / min(law["at"]))
        passed = bool(low <= 0 <= high and -band <= low and high <= band)
        return {"certificate": f"μP: the interval {'holds' if low <= 0 <= high else 'excludes'} 0, band ±{band:.2f} "
                               f"— {'pass' if passed else 'FAIL'}", "passed": passed, "band": band}
    if axis == "batch_size":
        sqrt = "inside" if low <= 0.5 <= high else "outside"
        return {"certificate": f"linear (s = 1) {inside} the interval, square root (s = ½) {sqrt}", "passed": None}
    if axis in ("tokens", "steps"):
        return {"certificate": f"the horizon exponent: the optimum scales as {axis}^{law['slope']:.3f}",
                "passed": None}
    return {"certificate": f"the optimum scales as {axis}^{law['slope']:.3f}", "passed": None}


def write_summary(folder: Path, summary: dict) -> None:
    with atomic_path(folder / "summary.json") as tmp:
        tmp.write_text(json.dumps(summary, indent=2))


def read_summary(root: str | Path, spec_name: str, param: str = "optimizer.lr", axis: str = "width") -> dict | None:
    path = Path(root) / axis_folder(spec_name, param, axis) / "summary.json"
    return json.loads(path.read_text()) if path.is_file() else None
