"""The loss-spike guard: an injected hot batch is logged, skipped, or rewound past; resume across a rewind."""
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pandas as pd
import pytest
import torch

from proxies import mup_builder
from proxies.data import open_data
from proxies.gpt import GPT
from trainer.checkpoint import list_checkpoints
from trainer.config import GuardConfig, RunConfig
from trainer.curves import read_curves
from trainer.guard import SpikeGuard, events_path
from trainer.loop import train

HOT_STEP = 10
N_TOKENS = 20000


class HotGPT(GPT):
    """A GPT whose logits are scaled ×30 on one batch (identified by its first window): a 'hot batch'."""

    def __init__(self, width, depth, parametrization, hot=(), **options):
        super().__init__(width, depth, parametrization, **options)
        self.hot = torch.tensor(hot, dtype=torch.long)

    def forward(self, idx):
        logits = super().forward(idx)
        if len(self.hot) and (idx == self.hot).all(dim=1).any():
            return logits * 30
        return logits


@mup_builder(base_width=64)
def hot_gpt(width, depth, parametrization="mup", **options):
    return HotGPT(width, depth, parametrization, **options)


def hot_window(step: int, seed: int = 0, batch: int = 8, seq: int = 32) -> list[int]:
    """The first input window of the training batch at `step` (1-based), as the trainer draws it."""
    data = open_data("synthetic-tokens", seq_len=seq, n_tokens=N_TOKENS, seed=seed)
    gen = torch.Generator().manual_seed(seed)
    for _ in range(step):
        x, _ = data.batch("train", batch, gen)
    return x[0].tolist()


def config(root, guard: dict | None, hot_step: int | None = HOT_STEP, run="r", **changes) -> dict:
    return {
        "model": {"name": f"{__name__}:hot_gpt", "width": 64, "depth": 1,
                  "options": {"hot": hot_window(hot_step) if hot_step else []}},
        "data": {"kind": "synthetic-tokens", "seq_len": 32, "options": {"n_tokens": N_TOKENS}},
        "optimizer": {"lr": 0.01}, "schedule": {"kind": "constant"},
        "batch_size": 8, "steps": 16, "log_every": 1,
        "eval": {"every": 8, "batches": 1, "noise_scale_batches": 0},
        "checkpoint": {"every": 4},
        "guard": guard or {"enabled": False},
        "output": {"root": str(root), "study": "g", "run": run},
        **changes,
    }


REWIND = {"enabled": True, "action": "rewind", "window": 4, "rewind_steps": 4, "ring_every": 2, "ring_size": 3}


def curve(cfg: RunConfig) -> pd.DataFrame:
    return read_curves(cfg.curves_root(), run=cfg.run_id()).set_index("step")


def events(cfg: RunConfig) -> pd.DataFrame:
    path = events_path(cfg)
    return pd.read_parquet(path) if path.exists() else pd.DataFrame()


def weights(cfg: RunConfig) -> dict:
    return torch.load(list_checkpoints(cfg.run_dir() / "checkpoints")[-1], weights_only=True)["model"]


def test_rewind_restores_skips_the_batches_and_leaves_a_clean_curve(tmp_path):
    """Classic bugs: replaying the hot batch after restoring (data position restored too), a curve that
    keeps the spike or the abandoned steps, or a rewind that lands on a checkpoint less than N steps old."""
    plain = RunConfig.parse(config(tmp_path, None, run="plain"))
    guarded = RunConfig.parse(config(tmp_path, REWIND, run="guarded"))
    assert train(plain).status == "completed"
    seen, on_disk = [], {}

    def after_rewind(row):  # the first step logged after the rewind: what a resume would find on disk
        seen.append(row["step"])
        if row["step"] == 7 and seen.count(7) == 2:
            on_disk.update({d: [p.name for p in list_checkpoints(guarded.run_dir() / d)]
                            for d in ("checkpoints", "guard-ring")})

    assert train(guarded, on_log=after_rewind).status == "completed"
    # the abandoned branch's checkpoint 8 is gone (a resume would replay it); the ring ends at the restored step
    assert on_disk == {"checkpoints": ["step-000000004.pt"], "guard-ring": ["step-000000004.pt", "step-000000006.pt"]}
    spiked, clean = curve(plain)["train_loss"], curve(guarded)["train_loss"]
    assert spiked[HOT_STEP] > 3 * spiked[HOT_STEP - 1]  # the hot batch really spikes an unguarded run
    assert list(clean.index) == list(range(1, 17))  # every step once: the abandoned 7–9 were dropped and redone
    assert clean.max() <= clean[1] * 1.05  # no spike left in the curve
    ev = events(guarded)
    assert len(ev) == 1
    row = ev.iloc[0]
    assert (row["step"], row["kind"], row["restored_step"], row["skip_from"], row["skip_to"]) == \
        (HOT_STEP, "rewind", 6, 7, 10)
    assert row["loss"] > 3 * row["rolling_mean"] and row["threshold"] == 1.5 * row["rolling_mean"]
    # steps 1–6 are the plain run's; step 7 onwards trains on batches 11, 12, … instead of 7, 8, …
    pd.testing.assert_series_equal(clean.loc[1:6], spiked.loc[1:6])
    assert clean[7] != spiked[7]
    assert [p.name for p in list_checkpoints(guarded.run_dir() / "guard-ring")][-1] == "step-000000014.pt"


def test_log_only_records_the_spike(tmp_path):
    plain = RunConfig.parse(config(tmp_path, None, run="plain"))
    logged = RunConfig.parse(config(tmp_path, {**REWIND, "action": "log"}, run="logged"))
    train(plain)
    train(logged)
    pd.testing.assert_series_equal(curve(logged)["train_loss"], curve(plain)["train_loss"])  # nothing changed
    ev = events(logged)
    assert ev["kind"].tolist() == ["spike"] and ev["step"].tolist() == [HOT_STEP]
    assert ev["restored_step"].isna().all()


def test_skip_makes_no_update_on_the_hot_batch(tmp_path):
    skip = RunConfig.parse(config(tmp_path, {**REWIND, "action": "skip"}, run="skip"))
    assert train(skip).status == "completed"
    ev = events(skip)
    assert ev["kind"].tolist() == ["skip"] and (ev["skip_from"].item(), ev["skip_to"].item()) == (HOT_STEP, HOT_STEP)
    c = curve(skip)
    assert pd.isna(c.loc[HOT_STEP, "grad_norm"])  # no clip, no step
    after = c["train_loss"].loc[HOT_STEP + 1:]
    assert after.max() < c["train_loss"][HOT_STEP - 1] * 1.05  # the weights did not take the hot gradient


def test_max_rewinds_stops_the_run_with_a_reason(tmp_path):
    cfg = RunConfig.parse(config(tmp_path, {**REWIND, "max_rewinds": 0}))
    result = train(cfg)
    assert result.status == "diverged" and "spike guard" in result.reason and "max_rewinds 0" in result.reason
    assert events(cfg)["kind"].tolist() == ["stop"]


KILLER = textwrap.dedent("""
    import os, signal, sys
    sys.path.insert(0, {tests!r})
    from test_guard import config
    from trainer.config import RunConfig
    from trainer.loop import train
    seen = []
    def on_log(row):
        seen.append(row["step"])
        # the second time: after the rewind went back past it
        if row["step"] == {kill_at} and seen.count({kill_at}) == 2:
            os.kill(os.getpid(), signal.SIGKILL)
    train(RunConfig.parse(config({root!r}, {guard!r}, run="killed")), on_log=on_log)
""")


def test_resume_after_kill_9_across_a_rewind_is_bit_identical(tmp_path):
    """kill -9 at step 8 after the rewind (the run had reached step 9 before it): resuming must not
    resurrect the abandoned branch's checkpoint 8, replay the skipped batches, or lose the event."""
    straight = RunConfig.parse(config(tmp_path, REWIND, run="straight"))
    train(straight)
    tests = str(Path(__file__).parent)
    script = KILLER.format(tests=tests, kill_at=8, root=str(tmp_path), guard=REWIND)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(Path(tests).parent), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == -9, proc.stderr
    killed = RunConfig.parse(config(tmp_path, REWIND, run="killed"))
    assert not (killed.run_dir() / "result.json").exists()
    assert len(events(killed)) == 1  # the event was on disk before the kill
    assert train(killed, resume=True).status == "completed"
    a, b = curve(straight), curve(killed)
    assert list(b.index) == list(range(1, 17))
    for column in ("train_loss", "grad_norm", "lr", "val_loss"):
        assert a[column].equals(b[column]), column
    pd.testing.assert_frame_equal(events(straight), events(killed))
    for name, value in weights(straight).items():
        assert torch.equal(value, weights(killed)[name]), name


def test_rules_flag_exactly_what_they_say(tmp_path):
    """Ratio and z-score thresholds on a known window; a spike never joins the window; nan is always a spike."""
    ratio = SpikeGuard(GuardConfig(window=4, factor=1.5), tmp_path, None)
    assert ratio.check(1, float("nan")) is not None  # even before the window is full
    assert all(ratio.check(s, 2.0) is None for s in range(2, 6))
    spike = ratio.check(6, 3.01)
    assert (spike.mean, spike.threshold) == (2.0, 3.0)
    assert ratio.check(7, 2.99) is None and ratio.window == [2.0, 2.0, 2.0, 2.99]  # 3.01 never entered
    z = SpikeGuard(GuardConfig(window=4, rule="zscore", zscore=2.0), tmp_path, None)
    assert all(z.check(s, loss) is None for s, loss in enumerate([1.0, 2.0, 3.0, 2.0]))
    assert z.check(5, 3.5).threshold == pytest.approx(2 + 2 * 0.5 ** 0.5)  # mean 2, population std √½
    assert z.check(6, 3.4) is None


def test_a_step_due_for_both_checkpoints_serialises_the_state_once(tmp_path):
    """Classic bug: at a step where the regular and the ring checkpoint are both due, the same state is serialised
    twice (twice the write time and I/O of a large model). The ring's is a hard link to the regular one."""
    cfg = RunConfig.parse(config(tmp_path, {**REWIND, "ring_every": 2}, hot_step=None,
                                 checkpoint={"every": 4, "keep": 10}))
    assert train(cfg).status == "completed"
    regular, ring = cfg.run_dir() / "checkpoints", cfg.run_dir() / "guard-ring"
    assert [p.name for p in list_checkpoints(ring)] == ["step-000000010.pt", "step-000000012.pt", "step-000000014.pt"]
    inode = {p.name: p.stat().st_ino for p in list_checkpoints(regular)}
    assert {p.name: p.stat().st_ino == inode.get(p.name) for p in list_checkpoints(ring)} == \
        {"step-000000010.pt": False, "step-000000012.pt": True, "step-000000014.pt": False}


def test_a_sharded_checkpoint_folder_is_linked_file_by_file(tmp_path):
    from trainer.checkpoint import link_checkpoint

    source = tmp_path / "checkpoints" / "step-000000004"
    (source / "sub").mkdir(parents=True)
    for name in ("__0_0.distcp", "sub/.metadata"):
        (source / name).write_bytes(name.encode())
    target = link_checkpoint(source, tmp_path / "ring", keep=2)
    assert target == tmp_path / "ring" / "step-000000004"
    assert not (tmp_path / "ring" / ".step-000000004.partial").exists()
    for name in ("__0_0.distcp", "sub/.metadata"):
        assert (target / name).stat().st_ino == (source / name).stat().st_ino
