"""A run trained once under a root: a ladder's rung at the proxy's own value is the runs another ladder trained
(sweep/study/twin.py); `sweep verify --plan` trained that rung once per ladder before."""
import json
from pathlib import Path

import pandas as pd
import pytest
import yaml

from sweep.forecast.design import Ladder, shared_runs, total
from sweep.rules.ladder import tuning_compute
from sweep.rules.prior import Prior
from sweep.study import twin
from tests.sweep_helpers import VERIFY_SPEC as SPEC
from trainer.config import RunConfig

GRID = ("--values", "2^-9,2^-7,2^-5", "--seeds", "1", "--refine", "0", "--parametrizations", "mup")


def points(root: Path, folder: str, axis: str, at: int) -> pd.DataFrame:
    table = pd.read_parquet(root / folder / "points.parquet")
    return table[table[axis] == at].sort_values("value").reset_index(drop=True)


def test_the_rung_every_ladder_shares_is_trained_once_and_counted_once(tmp_path, run_cli, monkeypatch):
    """The width ladder trains the proxy's own runs; the tokens, batch and depth ladders at the proxy's value take
    them (the tokens rung as `tokens: 1280` where the proxy says `steps: 40`), each from where it was trained, and
    the tuning compute counts them once."""
    monkeypatch.setenv("SWEEP_ROOT", str(tmp_path))
    monkeypatch.chdir(tmp_path)
    spec = tmp_path / "spec.yaml"
    spec.write_text(yaml.safe_dump(SPEC))
    assert run_cli("proxy", spec, "--width", "32")[0] == 0
    code, out, err = run_cli("verify", spec, "--widths", "32,64", *GRID)
    assert code == 0, out + err
    shared = {"tokens": ("640,1280", 1280), "batch_size": ("16,32", 32), "depth": ("1,2", 2)}  # a plan's ladders
    for axis, (values, _) in shared.items():
        code, out, err = run_cli("verify", spec, "--across", f"{axis}={values}", *GRID)
        assert code == 0, out + err
    runs = tmp_path / "v-verify-lr-across-tokens-1280" / "runs"
    results = [json.loads((run / "result.json").read_text()) for run in sorted(runs.iterdir())]
    assert len(results) == 3 and all(r["reused_from"].startswith("v-verify-lr/runs/") for r in results)  # in the root
    assert not any((run / "checkpoints").exists() for run in runs.iterdir())  # nothing trained there
    assert not any("reused_from" in json.loads((run / "result.json").read_text())
                   for run in (tmp_path / "v-verify-lr-across-tokens-640" / "runs").iterdir())  # another rung: trained
    width = points(tmp_path, "v-verify-lr", "width", 32)
    for axis, (_, proxy) in shared.items():
        taken = points(tmp_path, f"v-verify-lr-across-{axis}", axis, proxy)
        assert list(taken["loss"]) == list(width["loss"]) and taken["reused"].all(), axis
        assert list(taken["loss_init"]) == list(width["loss_init"])  # its curve is readable where it would have been
        summary = json.loads((tmp_path / f"v-verify-lr-across-{axis}" / "summary.json").read_text())
        assert summary["reused"] == [{"at": float(proxy), "runs": 3}]
    assert not width["reused"].any()

    spent = tuning_compute(str(tmp_path), [], lambda cfg: 1.0, 1, 1.0, "v")["verify_flops"]
    cost = {}
    for folder in ("v-verify-lr", *(f"v-verify-lr-across-{axis}" for axis in shared)):
        for shape in json.loads((tmp_path / folder / "summary.json").read_text())["shapes"]:
            cost[(folder, shape["at"])] = 6 * shape["params"] * shape["tokens"] * 3
    taken = sum(cost[(f"v-verify-lr-across-{axis}", proxy)] for axis, (_, proxy) in shared.items())
    assert spent == pytest.approx(sum(cost.values()) - taken)


def test_a_twin_is_taken_only_from_the_index_the_tool_wrote_inside_the_root(tmp_path):
    """An index entry leading out of the root, to a folder with another config, or to a run not completed is no twin:
    the run is trained."""
    cfg = RunConfig.parse({"model": {"name": "mlp", "width": 8}, "data": {"kind": "synthetic-vectors"}, "steps": 4,
                           "output": {"root": str(tmp_path), "study": "a", "run": "r"}})
    other = cfg.model_copy(update={"output": cfg.output.model_copy(update={"study": "b"})})
    index = twin.index_path(cfg, 1)
    index.parent.mkdir(parents=True)
    assert twin.twin_of(cfg, 1) is None  # nothing indexed
    outside = tmp_path.parent / f"{tmp_path.name}-outside"
    outside.mkdir()
    (outside / "result.json").write_text(json.dumps({"status": "completed"}))
    (outside / "config.yaml").write_text(cfg.to_yaml())
    for entry in ({"run": f"../{outside.name}"}, {"run": 3}, [1], {"run": "b/runs/r"}):
        index.write_text(json.dumps(entry))
        assert twin.twin_of(cfg, 1) is None, entry
    folder = other.run_dir()
    folder.mkdir(parents=True)
    (folder / "config.yaml").write_text(other.model_copy(update={"steps": 5}).to_yaml())  # another run's config
    (folder / "result.json").write_text(json.dumps({"status": "completed"}))
    assert twin.twin_of(cfg, 1) is None
    (folder / "config.yaml").write_text(other.to_yaml())
    (folder / "result.json").write_text(json.dumps({"status": "diverged"}))
    assert twin.twin_of(cfg, 1) is None
    (folder / "result.json").write_text(json.dumps({"status": "completed"}))
    assert twin.twin_of(cfg, 1) == folder.resolve()
    assert twin.twin_of(other, 1) is None  # a run is never its own twin
    index.write_text("{not json")
    assert twin.twin_of(cfg, 1) is None


def trained_pair(root: Path, **changes) -> tuple[RunConfig, RunConfig]:
    """A run trained and indexed in study a, and its twin's config in study b."""
    from trainer.loop import train

    cfg = RunConfig.parse({"model": {"name": "mlp", "width": 8}, "data": {"kind": "synthetic-vectors"}, "steps": 6,
                           "eval": {"every": 3, "batches": 1}, "output": {"root": str(root), "study": "a", "run": "r"},
                           **changes})
    assert train(cfg).status == "completed"
    twin.record(cfg, 1)
    return cfg, cfg.model_copy(update={"output": cfg.output.model_copy(update={"study": "b", "run": "s"})})


def test_a_twin_whose_curve_is_not_its_result_is_trained_again(tmp_path):
    """A curve part of another run copied over the twin's (its last loss not the one its result records) is not
    taken: the points would hold a loss the run never reached."""
    cfg, other = trained_pair(tmp_path)
    folder = twin.curve_folder(cfg)
    part = next(folder.glob("part-*.parquet"))
    rows = pd.read_parquet(part)
    rows["val_loss"] = rows["val_loss"] + 0.25
    rows.to_parquet(part, index=False)
    assert twin.take(other, 1) is None and not other.run_dir().exists()


def test_a_copied_root_takes_its_own_runs_and_names_them_inside_it(tmp_path):
    """A results root copied elsewhere: the configs there name the old root, but the twin is the copy's own run,
    its curve read in the copy, `reused_from` relative to the root; with the old root gone nothing is read there."""
    import shutil

    old, copy = tmp_path / "old", tmp_path / "copy"
    cfg, _ = trained_pair(old)
    shutil.copytree(old, copy)
    shutil.rmtree(old)
    here = cfg.model_copy(update={"output": cfg.output.model_copy(update={"root": str(copy), "study": "b"})})
    result = twin.take(here, 1)
    assert result is not None and result["reused_from"] == "a/runs/r"
    assert not old.exists()


def test_an_index_that_cannot_be_written_leaves_the_run_standing(tmp_path):
    """An index entry made a folder (or a read-only index): recording the completed run does not fail it."""
    cfg, other = trained_pair(tmp_path)
    entry = twin.index_path(cfg, 1)
    entry.unlink()
    entry.mkdir()
    twin.record(cfg, 1)
    assert entry.is_dir() and twin.take(other, 1) is None


def test_the_plan_prices_the_proxys_own_rung_once_as_verify_then_trains_it():
    """`sweep plan`'s total: each ladder's runs, less those of the proxy's rung another ladder of its setting trains
    (the union of their grids × seeds, counted by brute force here)."""
    def ladder(axis, spread, seeds, param="optimizer.lr"):
        return Ladder(axis, param, axis, Prior(0.0, spread, "test"), 32.0, 512.0, 4.0, 256.0, lambda v: 10.0 * v,
                      rungs=[32.0, 64.0, 128.0], seeds=seeds)

    ladders = [ladder("width", 0.1, 2), ladder("tokens", 0.9, 3), ladder("depth", 0.4, 5),
               ladder("batch_size", 0.4, 2, param="optimizer.warmup_fraction")]
    assert len({ld.grid for ld in ladders}) == 3  # grids of several reaches
    union = {}
    for ld in ladders:
        for k in range(-(ld.grid // 2), ld.grid // 2 + 1):
            union.setdefault(ld.param, set()).update((k, s) for s in range(ld.seeds))
    every = sum(ld.grid * ld.seeds for ld in ladders)
    assert shared_runs(ladders) == every - sum(len(runs) for runs in union.values()) > 0
    assert total(ladders) == pytest.approx(sum(ld.flops() for ld in ladders) - shared_runs(ladders) * 320.0)
    assert shared_runs(ladders[:1]) == 0 and total([]) == 0


def test_the_trial_line_says_the_steps_it_trained_and_the_runs_it_took():
    """`after N steps` is what the trial trained: its runs' steps together, a run taken from a twin not among them
    (it said "after 100 steps over 2 seeds" for two 50-step runs, and "after 0 steps" for two taken ones)."""
    import optuna

    from sweep.backends.live import finished_line

    def line(steps, runs, reused):
        trial = optuna.trial.create_trial(value=2.5, params={}, distributions={}, user_attrs={
            "steps": steps, "runs": [f"r{i}" for i in range(runs)], "reused": [{"seed": i} for i in range(reused)]})
        return finished_line(trial)

    assert "after 50 steps ·" in line(50, 1, 0)
    assert "after 100 steps in 2 runs ·" in line(100, 2, 0)
    assert "after 50 steps, 1 run taken as trained ·" in line(50, 2, 1)
    assert "after 0 steps, 2 runs taken as trained ·" in line(0, 2, 2)


def test_a_taken_run_reaches_the_trackers_its_config_asks_for(tmp_path):
    """A taken run was in Parquet only: a study's runs in TensorBoard (or MLflow, W&B) lacked every rung another
    study trained. The taken curve is sent as training it would have been, each step once (a second take sends
    nothing more)."""
    from tests.test_tracking import tensorboard_scalars
    from trainer.tracking import TensorBoard

    cfg, other = trained_pair(tmp_path, logging={"tensorboard": str(tmp_path / "tb")})
    assert twin.take(other, 1) is not None
    for tag in ("train_loss", "val_loss"):
        trained = tensorboard_scalars(TensorBoard.folder(cfg), tag)
        assert tensorboard_scalars(TensorBoard.folder(other), tag) == trained and trained, tag
    (other.run_dir() / "result.json").unlink()  # a kill before the result: taken again, the trackers not sent twice
    assert twin.take(other, 1) is not None
    assert tensorboard_scalars(TensorBoard.folder(other), "train_loss") == tensorboard_scalars(
        TensorBoard.folder(cfg), "train_loss")
