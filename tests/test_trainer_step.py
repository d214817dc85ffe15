"""The training step and loop: each test names the classic bug it would catch."""
import math

import mup
import pytest
import torch
import torch.nn.functional as F
from torch import nn

from proxies import mup_builder
from proxies.data import open_data
from proxies.registry import build_model
from trainer import runtime as rt
from trainer.checkpoint import CheckpointError, list_checkpoints
from trainer.config import RunConfig
from trainer.curves import read_curves
from trainer.loop import Trainer, train
from trainer.optim import build_optimizer
from trainer.resolve import resolve
from trainer.schedule import Schedule, make_scheduler


def config(tmp_path, **overrides) -> RunConfig:
    base = {
        "model": {"name": "gpt", "width": 128, "depth": 1},
        "data": {"kind": "synthetic-tokens", "seq_len": 32, "options": {"n_tokens": 20000}},
        "batch_size": 8, "steps": 6, "log_every": 1,
        "eval": {"every": 3, "batches": 2, "noise_scale_batches": 0},
        "output": {"root": str(tmp_path), "study": "t"},
    }
    for key, value in overrides.items():
        base[key] = {**base[key], **value} if isinstance(value, dict) and key in base else value
    return RunConfig.parse(base)


def curves(cfg):
    return read_curves(cfg.curves_root(), run=cfg.run_id()).set_index("step")


def final_weights(cfg):
    path = list_checkpoints(cfg.run_dir() / "checkpoints")[-1]
    return torch.load(path, weights_only=True)["model"]


def test_matches_a_reference_loop_step_for_step(tmp_path):
    """The trainer's weights after 4 steps equal a textbook loop's, bit for bit on CPU.

    Catches a missing zero_grad (gradients pile up), the scheduler stepped before the optimizer,
    clipping after the step, or a schedule that drops the μP LR multipliers.
    """
    cfg = config(tmp_path, steps=4, optimizer={"lr": 0.01, "weight_decay": 0.1, "grad_clip": 0.5},
                 schedule={"kind": "cosine", "warmup_steps": 2})
    train(cfg)

    data = open_data("synthetic-tokens", seq_len=32, n_tokens=20000, seed=cfg.seed)
    torch.manual_seed(cfg.seed)
    model = build_model("gpt", 128, 1, "mup", **data.model_options())
    opt = build_optimizer(model, lr=0.01, weight_decay=0.1, betas=(0.9, 0.95))
    sched = make_scheduler(opt, Schedule("cosine", 4, 2))
    gen = torch.Generator().manual_seed(cfg.seed)
    for _ in range(4):
        x, y = data.batch("train", 8, gen)
        opt.zero_grad(set_to_none=True)
        F.cross_entropy(model(x).flatten(0, 1), y.flatten()).backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 0.5)
        opt.step()
        sched.step()
    for name, value in model.state_dict().items():
        assert torch.equal(value, final_weights(cfg)[name]), name


def test_lr_follows_schedule_from_the_first_step(tmp_path):
    """Step t uses lr·factor(t): the first step takes the tiny warmup LR (scheduler after optimizer)."""
    cfg = config(tmp_path, optimizer={"lr": 0.02}, schedule={"kind": "linear", "warmup_steps": 3})
    train(cfg)
    schedule = Schedule("linear", 6, 3)
    logged = curves(cfg)["lr"]
    for step, lr in logged.items():
        assert lr == pytest.approx(0.02 * schedule(step - 1)), step
    assert logged[1] == pytest.approx(0.02 / 4)


def test_fp16_unscales_before_clipping(tmp_path):
    """With a GradScaler the logged pre-clip norm is the true gradient norm, not 2^16 times it.

    Clipping before unscaling would log (and clip) the scaled norm and then take a tiny step.
    """
    fp32 = config(tmp_path, steps=1, precision="fp32", output={"run": "fp32"})
    fp16 = config(tmp_path, steps=1, precision="fp16", output={"run": "fp16"})
    train(fp32)
    train(fp16)
    norm32, norm16 = curves(fp32)["grad_norm"][1], curves(fp16)["grad_norm"][1]
    assert math.isfinite(norm16)
    assert norm16 == pytest.approx(norm32, rel=0.05)
    torch.manual_seed(0)
    start = build_model("gpt", 128, 1, "mup", vocab_size=64, block_size=32).state_dict()["blocks.0.mlp.fc.weight"]
    step32 = final_weights(fp32)["blocks.0.mlp.fc.weight"] - start
    step16 = final_weights(fp16)["blocks.0.mlp.fc.weight"] - start
    # a full-size step, not a clipped-to-nothing one
    assert step16.norm().item() == pytest.approx(step32.norm().item(), rel=0.05)
    assert F.cosine_similarity(step16.flatten(), step32.flatten(), dim=0) > 0.9


def test_weight_decay_spares_norm_gains_biases_and_embeddings(tmp_path):
    """After one step, decay (wd=1) changes weight matrices only; LayerNorm gains, biases and embeddings match wd=0."""
    model = {"options": {"zero_query": False}}  # decay of a zero matrix is zero: start every matrix non-zero
    plain = config(tmp_path, steps=1, model=model, optimizer={"weight_decay": 0.0}, output={"run": "plain"})
    decayed = config(tmp_path, steps=1, model=model, optimizer={"weight_decay": 1.0}, output={"run": "decayed"})
    train(plain)
    train(decayed)
    a, b = final_weights(plain), final_weights(decayed)
    for name in a:
        spared = name.endswith("bias") or ".ln_" in name or name.startswith(("ln_f", "wte", "wpe"))
        assert torch.equal(a[name], b[name]) == spared, name


class ModeRecorder(nn.Module):
    """A user model that records whether each forward ran in train mode."""

    log: list[bool] = []

    def __init__(self, width, depth, in_features=32, classes=10):
        super().__init__()
        self.hidden = nn.Linear(in_features, width)
        self.readout = mup.MuReadout(width, classes)

    def forward(self, x):
        ModeRecorder.log.append(self.training)
        return self.readout(torch.relu(self.hidden(x)))


@mup_builder(base_width=16)
def mode_recorder(width, depth, parametrization="mup", **options):
    return ModeRecorder(width, depth, **options)


def test_training_resumes_in_train_mode_after_eval(tmp_path):
    """Evaluation runs in eval mode and hands the model back in train mode (eval mode left on is a classic bug)."""
    ModeRecorder.log = []
    cfg = config(tmp_path, model={"name": f"{__name__}:mode_recorder", "width": 32},
                 data={"kind": "synthetic-vectors", "seq_len": 1, "options": {}},
                 steps=6, eval={"every": 2, "batches": 2, "noise_scale_batches": 0})
    train(cfg)
    log = ModeRecorder.log
    assert log.count(False) == 3 * 2  # 3 evaluations × 2 batches
    # the pattern: 2 train steps, then 2 eval forwards, three times
    assert log == [True, True, False, False] * 3


def test_resume_continues_the_same_curve_bit_for_bit(tmp_path):
    """Train 12 steps straight vs crash after step 7 and resume from the step-4 checkpoint: identical curves.

    At width 2× base, a resume that re-applied mup's readout rescaling would move the curve;
    so would a lost data position, optimizer or scheduler state, or an RNG state.
    """
    straight = config(tmp_path, steps=12, eval={"every": 4}, checkpoint={"every": 4}, output={"run": "straight"})
    broken = config(tmp_path, steps=12, eval={"every": 4}, checkpoint={"every": 4}, output={"run": "broken"})
    train(straight)

    class Crash(Exception):
        pass

    def crash_at_7(row):
        if row["step"] == 7:
            raise Crash

    with pytest.raises(Crash):
        train(broken, on_log=crash_at_7)
    result = train(broken, resume=True)
    assert result.status == "completed" and result.step == 12
    a, b = curves(straight), curves(broken)
    assert list(b.index) == list(range(1, 13))  # every step exactly once
    for column in ("train_loss", "grad_norm", "lr", "val_loss"):
        assert a[column].equals(b[column]), column
    for name, value in final_weights(straight).items():
        assert torch.equal(value, final_weights(broken)[name]), name


def test_checkpoints_keep_the_last_k_and_load_weights_only(tmp_path):
    cfg = config(tmp_path, steps=10, checkpoint={"every": 2, "keep": 2})
    train(cfg)
    kept = list_checkpoints(cfg.run_dir() / "checkpoints")
    assert [p.name for p in kept] == ["step-000000008.pt", "step-000000010.pt"]
    assert not [p for p in kept[0].parent.iterdir() if p.name.startswith(".")]  # no temp files left
    for path in kept:
        state = torch.load(path, weights_only=True)
        assert {"model", "optimizer", "scheduler", "scaler", "data", "rng", "step"} <= state.keys()


def test_a_checkpoint_of_an_older_format_is_refused_naming_it(tmp_path):
    """A checkpoint written before the parts were registered (format 1: no "format" key, the counters listed by
    hand) is not read as one whose data position, RNG and streak are missing, which would resume another curve:
    resuming it stops with one line naming the file."""
    cfg = config(tmp_path, steps=4, checkpoint={"every": 2})
    train(cfg)
    path = list_checkpoints(cfg.run_dir() / "checkpoints")[-1]
    state = torch.load(path, weights_only=True)
    del state["format"]
    torch.save(state, path)
    with pytest.raises(CheckpointError) as err:
        train(cfg, resume=True)
    assert f"{path} is in checkpoint format 1" in str(err.value) and "\n" not in str(err.value)


def test_saved_base_shapes_rebuild_the_run(tmp_path):
    """base_shapes.bsh beside the run restores μP multipliers on a bare model without rescaling it again."""
    cfg = config(tmp_path, steps=2)
    train(cfg)
    model = build_model("gpt", 128, 1, "sp", vocab_size=64, block_size=32)  # multipliers all 1
    mup.set_base_shapes(model, str(cfg.run_dir() / "base_shapes.bsh"), rescale_params=False)
    model.load_state_dict(final_weights(cfg))
    assert model.lm_head.width_mult() == 2.0
    reference = build_model("gpt", 128, 1, "mup", vocab_size=64, block_size=32)
    reference.load_state_dict(final_weights(cfg))
    x = torch.randint(0, 64, (2, 32))
    torch.testing.assert_close(model(x), reference(x))


@pytest.mark.parametrize("lr", [50.0, 1e4])  # 1e4: the largest LR a config takes
def test_divergence_ends_the_run_with_a_reason(tmp_path, lr):
    cfg = config(tmp_path, steps=20, optimizer={"lr": lr, "grad_clip": None})
    result = train(cfg)
    assert result.status == "diverged"
    assert "diverged at step" in result.reason
    assert result.step < 20


def test_on_eval_can_stop_the_run(tmp_path):
    seen = []

    def stop_at_second_eval(step, metrics):
        seen.append((step, metrics["val_loss"]))
        return len(seen) < 2

    cfg = config(tmp_path, steps=12, eval={"every": 3})
    result = train(cfg, on_eval=stop_at_second_eval)
    assert result.status == "pruned" and result.step == 6
    assert [s for s, _ in seen] == [3, 6] and all(math.isfinite(v) for _, v in seen)
    assert curves(cfg).index.max() == 6



def test_resume_never_counts_flushed_rows_twice(tmp_path):
    """Rows written after the last checkpoint are dropped on resume and logged again exactly once.

    A run stopped by on_eval at step 6 flushes rows 5–6 past its step-4 checkpoint; if the trial is
    retried (its worker died before recording the outcome) it resumes at step 4 and logs 5–6 again.
    """
    cfg = config(tmp_path, steps=12, eval={"every": 3}, checkpoint={"every": 4})
    assert train(cfg, on_eval=lambda step, metrics: step < 6).status == "pruned"
    assert read_curves(cfg.curves_root(), run=cfg.run_id())["step"].max() == 6
    assert train(cfg, resume=True).status == "completed"
    assert list(curves(cfg).index) == list(range(1, 13))


def test_compiled_model_trains_like_eager(tmp_path):
    """`compile: true` runs the same step through torch.compile: same losses and grad norms as eager. The first
    step, which compiles, is in no throughput window (its tokens/s and MFU would be the compile's)."""
    eager = config(tmp_path, steps=3, output={"run": "eager"})
    compiled = config(tmp_path, steps=3, compile=True, output={"run": "compiled"})
    train(eager)
    train(compiled)
    a, b = curves(eager), curves(compiled)
    for column in ("train_loss", "grad_norm", "val_loss"):
        assert b[column].to_numpy() == pytest.approx(a[column].to_numpy(), rel=1e-4, nan_ok=True), column
    assert b["tokens_per_s"].isna().tolist() == [True, False, False] and a["tokens_per_s"].notna().all()


def test_sweep_train_of_a_compiled_config_shows_its_progress_and_completes(tmp_path, run_cli):
    """Through the command, progress bar on: the first logged step's throughput is None while the model compiles,
    and the bar formatted it as a number (a traceback at step 1 of every `compile: true` run)."""
    path = tmp_path / "run.yaml"
    path.write_text(config(tmp_path, steps=3, compile=True, output={"run": "compiled"}).to_yaml())

    code, out, err = run_cli("train", path)

    assert code == 0, err
    assert "completed: compiled at step 3" in out and "Traceback" not in out + err


def test_a_long_lived_process_compiles_its_ninth_model_too():
    """Classic bug: Dynamo's recompile limit (8 per code object) spans the process, so a sweep worker's ninth
    compiled model of one class runs eager from then on, with only a line in Dynamo's log."""
    from torch._dynamo.utils import counters

    from trainer.loop import compile_for_run

    before = counters["frames"]["ok"]
    for width in range(8, 8 * 12, 8):  # 11 models of one class, each another shape
        model = compile_for_run(nn.Sequential(nn.Linear(4, width), nn.ReLU(), nn.Linear(width, 1)), backend="eager")
        model(torch.randn(2, 4)).sum().backward()
    assert counters["frames"]["ok"] - before == 11  # each compiled, none fell back


def test_a_resume_inside_a_run_of_high_losses_diverges_at_the_same_step(tmp_path):
    """The count of logged steps in a row above divergence_factor × the first loss is training state: a run
    resumed in the middle of such a streak must stop where the uninterrupted run stops, not start counting
    again from zero."""
    overrides = dict(steps=20, optimizer={"lr": 50.0, "grad_clip": None}, checkpoint={"every": 1, "keep": 30})
    straight = train(config(tmp_path, **overrides, output={"run": "straight"}))
    assert straight.status == "diverged" and math.isfinite(straight.train_loss), straight  # by the streak, not a NaN
    broken = config(tmp_path, **overrides, output={"run": "broken"})

    def crash_inside_the_streak(row):
        if row["step"] == straight.step - 1:  # the streak's first step is checkpointed, its second is not
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        train(broken, on_log=crash_inside_the_streak)
    resumed = train(broken, resume=True)
    assert (resumed.status, resumed.step) == ("diverged", straight.step)


@pytest.mark.parametrize("signals", [0, 1])
def test_gradients_are_released_right_after_the_step(tmp_path, signals):
    """Catches gradients held past the step: the evaluation's noise-scale batches would then allocate their own
    gradients on top of a full set (memory above the training peak)."""
    cfg = resolve(config(tmp_path, signals={"every": signals}))
    trainer = Trainer(cfg, rt.start(cfg.device, cfg.precision), None, None)
    trainer.prepare_steps()
    step = trainer.train_step()
    assert step.grad_norm > 0
    assert all(p.grad is None for p in trainer.model.parameters())


def test_the_next_batch_is_gathered_before_the_guards_host_sync(tmp_path, monkeypatch):
    """The spike guard reads every step's loss (a host sync: on CUDA the host waits for the device). The next
    step's batch is gathered and its copy queued before that wait, so the host's work overlaps the device's rather
    than following it; the resume tests check that a checkpoint saves the position before the prefetched batch."""
    source = type(open_data("synthetic-tokens", seq_len=32, n_tokens=20000, seed=0))
    calls, batch, mean_across = [], source.batch, rt.mean_across

    def draw(self, split, *args, **kwargs):
        calls.append("draw") if split == "train" else None
        return batch(self, split, *args, **kwargs)

    monkeypatch.setattr(source, "batch", draw)
    monkeypatch.setattr(rt, "mean_across", lambda run, value: calls.append("sync") or mean_across(run, value))
    cfg = config(tmp_path, steps=4, guard={"enabled": True, "action": "log"})
    assert train(cfg).status == "completed"
    assert calls[:8] == ["draw", "draw", "sync", "draw", "sync", "draw", "sync", "sync"]  # none drawn past the last
