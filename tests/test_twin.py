"""A run trained once under a root: a ladder's rung at the proxy's own value is the runs another ladder trained
(sweep/study/twin.py); `sweep verify --plan` trained that rung once per ladder before."""
import json
from pathlib import Path

import pandas as pd
import yaml

from sweep.rules.ladder import tuning_compute
from sweep.study import twin
from tests.sweep_helpers import VERIFY_SPEC as SPEC
from trainer.config import RunConfig

GRID = ("--values", "2^-9,2^-7,2^-5", "--seeds", "1", "--refine", "0", "--parametrizations", "mup")


def points(root: Path, folder: str, axis: str, at: int) -> pd.DataFrame:
    table = pd.read_parquet(root / folder / "points.parquet")
    return table[table[axis] == at].sort_values("value").reset_index(drop=True)


def test_the_rung_two_ladders_share_is_trained_once_and_counted_once(tmp_path, run_cli, monkeypatch):
    monkeypatch.setenv("SWEEP_ROOT", str(tmp_path))
    monkeypatch.chdir(tmp_path)
    spec = tmp_path / "spec.yaml"
    spec.write_text(yaml.safe_dump(SPEC))
    assert run_cli("proxy", spec, "--width", "32")[0] == 0
    code, out, err = run_cli("verify", spec, "--widths", "32,64", *GRID)
    assert code == 0, out + err
    code, out, err = run_cli("verify", spec, "--across", "steps=20,40", *GRID)
    assert code == 0, out + err
    shared = tmp_path / "v-verify-lr-across-steps-40" / "runs"
    results = [json.loads((run / "result.json").read_text()) for run in sorted(shared.iterdir())]
    trained = str(tmp_path / "v-verify-lr" / "runs")
    assert len(results) == 3 and all(r["reused_from"].startswith(trained) for r in results)
    assert not any((run / "checkpoints").exists() for run in shared.iterdir())  # nothing trained there
    assert not any("reused_from" in json.loads((run / "result.json").read_text())
                   for run in (tmp_path / "v-verify-lr-across-steps-20" / "runs").iterdir())  # another rung: trained
    width = points(tmp_path, "v-verify-lr", "width", 32)
    steps = points(tmp_path, "v-verify-lr-across-steps", "steps", 40)
    assert list(steps["loss"]) == list(width["loss"]) and steps["reused"].all() and not width["reused"].any()
    assert list(steps["loss_init"]) == list(width["loss_init"])  # its curve is readable where it would have been
    summary = json.loads((tmp_path / "v-verify-lr-across-steps" / "summary.json").read_text())
    assert summary["reused"] == [{"at": 40.0, "runs": 3}]

    spent = tuning_compute(str(tmp_path), [], lambda cfg: 1.0, 1, 1.0, "v")["verify_flops"]
    shapes = {}
    for folder in ("v-verify-lr", "v-verify-lr-across-steps"):
        for shape in json.loads((tmp_path / folder / "summary.json").read_text())["shapes"]:
            shapes[(folder, shape["at"])] = 6 * shape["params"] * shape["tokens"] * 3
    assert spent == sum(shapes.values()) - shapes[("v-verify-lr-across-steps", 40)]


def test_a_twin_is_taken_only_from_the_index_the_tool_wrote_inside_the_root(tmp_path):
    """An index entry leading out of the root, to a folder with another config, or to a run not completed is no twin:
    the run is trained."""
    cfg = RunConfig.parse({"model": {"name": "mlp", "width": 8}, "data": {"kind": "synthetic-vectors"}, "steps": 4,
                           "output": {"root": str(tmp_path), "study": "a", "run": "r"}})
    other = cfg.model_copy(update={"output": cfg.output.model_copy(update={"study": "b"})})
    index = twin.index_path(cfg)
    index.parent.mkdir(parents=True)
    assert twin.twin_of(cfg) is None  # nothing indexed
    outside = tmp_path.parent / f"{tmp_path.name}-outside"
    outside.mkdir()
    (outside / "result.json").write_text(json.dumps({"status": "completed"}))
    (outside / "config.yaml").write_text(cfg.to_yaml())
    for entry in ({"run": f"../{outside.name}"}, {"run": 3}, [1], {"run": "b/runs/r"}):
        index.write_text(json.dumps(entry))
        assert twin.twin_of(cfg) is None, entry
    folder = other.run_dir()
    folder.mkdir(parents=True)
    (folder / "config.yaml").write_text(other.model_copy(update={"steps": 5}).to_yaml())  # another run's config
    (folder / "result.json").write_text(json.dumps({"status": "completed"}))
    assert twin.twin_of(cfg) is None
    (folder / "config.yaml").write_text(other.to_yaml())
    (folder / "result.json").write_text(json.dumps({"status": "diverged"}))
    assert twin.twin_of(cfg) is None
    (folder / "result.json").write_text(json.dumps({"status": "completed"}))
    assert twin.twin_of(cfg) == folder.resolve()
    assert twin.twin_of(other) is None  # a run is never its own twin
    index.write_text("{not json")
    assert twin.twin_of(cfg) is None
