"""The training loop: one RunConfig in; curves, checkpoints and a result out.

One optimizer step (`Trainer.train_step`), in this order (each line is a classic bug when moved or dropped):
    zero_grad(set_to_none=True)
    for each of grad_accum micro-batches:            (DDP: no_sync on all but the last)
        forward under autocast; loss / grad_accum; backward (through the GradScaler for fp16)
    the next step's batch drawn, sent to the device   while this backward runs, before the guard's host sync
    unscale the gradients (fp16)                      before clipping, or the clip sees scaled norms
    clip_grad_norm_ once                              the pre-clip norm is what gets logged
    optimizer.step(); scheduler.step()                the scheduler after the optimizer
    zero_grad(set_to_none=True)                       gradients released before evaluation allocates its own
Then, at the logging cadence, `log_and_eval` (the one host sync per logged step, the divergence check, the
evaluation when due), and the checkpoints due; after a termination signal (SIGTERM, SIGUSR2), a checkpoint at
that step and `Preempted` (trainer/preemption.py). The run's `Checkpointer` (trainer/checkpointer.py) writes,
resumes and rewinds them; everything a checkpoint holds is a part registered with the run's `TrainState`
(trainer/state.py); a caller adds its own with `train(…, extra_state=…)`.
The loop knows nothing of sweeps or clusters: it reports through `on_log(row)` and
`on_eval(step, metrics) -> keep_going`.
"""
from __future__ import annotations

import gc
import json
import math
import time
from collections.abc import Callable, Mapping
from contextlib import nullcontext
from dataclasses import asdict, dataclass
from pathlib import Path

import torch
from torch.nn.parallel import DistributedDataParallel as DDP

from proxies.base_shapes import save_base_shapes
from trainer import runtime as rt
from trainer.atomic import atomic_path
from trainer.build import build
from trainer.checkpoint import list_checkpoints
from trainer.checkpointer import Checkpointer
from trainer.config import ConfigError, RunConfig
from trainer.curves import CurveWriter
from trainer.divergence import Divergence
from trainer.evaluate import evaluate, measure_noise_scale, objective, part, to_device
from trainer.flops import flops_per_token, peak_flops
from trainer.folders import check_writable, inside_root
from trainer.noise_scale import NoiseScale
from trainer.optim import averaged_weights
from trainer.parallel import ShardedModel, ShardedOptimizer, full
from trainer.predicted import predicted_columns, refined_columns
from trainer.preemption import Preemption
from trainer.resolve import resolve
from trainer.signals import Signals
from trainer.state import Clock, DataCursor, Rng, Stateful, TrainState
from trainer.tracking import Trackers, check_trackers
from trainer.written import reading

EVAL_SEED_OFFSET = 1_000_003  # val batches and noise-scale batches use generators of their own


@dataclass
class RunResult:
    run_id: str
    status: str  # completed | diverged | pruned
    step: int
    train_loss: float | None
    val_loss: float | None
    reason: str | None = None


class RunExists(ConfigError):
    """A run folder already holds checkpoints and resuming was not asked for."""


class Stop(Exception):
    """The run ends before its last step (diverged, pruned); `Trainer.fit` turns it into the RunResult."""

    def __init__(self, status: str, train_loss: float | None, val_loss: float | None, reason: str):
        super().__init__(reason)
        self.status, self.train_loss, self.val_loss, self.reason = status, train_loss, val_loss, reason


@dataclass
class Step:
    """What one optimizer step leaves for logging."""
    loss: torch.Tensor  # the mean micro-batch loss on this process, still on the device
    loss_now: float | None  # the loss across processes, when the guard already synced it
    skipped: bool  # the guard skipped the update
    lr: float  # the base LR the step ran at (before μP multipliers)
    grad_norm: torch.Tensor | None  # pre-clip; None when skipped
    measured: bool  # instability signals were measured on this step


class Throughput:
    """Tokens per second of training between logged steps (the checkpoint writes between them not counted, nor the
    step that compiled the model: a window without a step has no rate)."""

    def __init__(self, tokens: int):
        self.mark(tokens)

    def mark(self, tokens: int) -> None:
        self.time, self.tokens = time.perf_counter(), tokens

    def rate(self, tokens: int) -> float | None:
        if tokens == self.tokens:
            return None
        return (tokens - self.tokens) / max(time.perf_counter() - self.time, 1e-9)


def train(cfg: RunConfig, *, resume: bool = False, on_log: Callable[[dict], None] | None = None,
          on_eval: Callable[[int, dict], bool] | None = None,
          extra_state: Mapping[str, Stateful] | None = None) -> RunResult:
    """Train `cfg` to its end (or to a divergence, or until `on_eval` says stop); `resume` continues the run from
    its newest checkpoint. `extra_state`: parts of the caller's, checkpointed and resumed with the run's own."""
    cfg = resolve(cfg)
    check_trackers(cfg)
    run = rt.start(cfg.device, cfg.precision, group=cfg.sharded(), timeout_s=cfg.pg_timeout_s())
    trainer = None
    try:
        check_start(cfg, run, resume)
        trainer = Trainer(cfg, run, on_log, on_eval)
        for name, extra in (extra_state or {}).items():
            trainer.state.register(name, extra)
        return trainer.fit(resume)
    finally:
        # the run's parts are freed while its process group is still registered: DDP's reducer, freed after
        # `destroy_process_group`, drops the group's last reference holding the GIL, and gloo's destructor then
        # joins its worker threads while one waits for that GIL to free the last collective's tensors (a hang at
        # the end of a finished run, one time in a few under load; torch 2.13)
        del trainer
        gc.collect()  # the parts in reference cycles, too
        rt.stop(run)


def compile_for_run(module: torch.nn.Module, **options) -> torch.nn.Module:
    """`torch.compile` for one run of a process that may train many. Dynamo's recompile limit
    (`torch._dynamo.config.recompile_limit`, 8) counts per code object across the whole process, so a worker's ninth
    model of one class (trial nine of a sweep: another width, a guard failure) would run eager, said only in Dynamo's
    log; its caches are reset first, so only this run's own graphs count against the limit."""
    torch._dynamo.reset()
    return torch.compile(module, **options)


def check_start(cfg: RunConfig, run: rt.Runtime, resume: bool) -> None:
    root = Path(cfg.output.root)
    for folder in (cfg.run_dir(), cfg.curves_root(), cfg.events_root()):  # ROOT/STUDY/runs linked out: written there
        inside_root(folder, root, "output.run" if folder == cfg.run_dir() else "output.study")
    check_writable(cfg.run_dir() / "checkpoints", "output.run")  # a file where the folder goes, a read-only disk
    if list_checkpoints(cfg.run_dir() / "checkpoints") and not resume:
        raise RunExists(f"output.run: {cfg.run_dir()} already has checkpoints; pass --resume to continue it, "
                        "or set output.run")
    if cfg.batch_size % (run.world * cfg.grad_accum):
        raise ConfigError(f"batch_size: {cfg.batch_size} does not split into {run.world} processes × "
                          f"{cfg.grad_accum} micro-steps")


class Trainer:
    """One run: the parts its config builds, registered once with its TrainState, and the loop over steps."""

    def __init__(self, cfg: RunConfig, run: rt.Runtime, on_log, on_eval):
        self.cfg, self.run, self.on_log, self.on_eval = cfg, run, on_log, on_eval
        self.run_id, self.run_dir = cfg.run_id(), cfg.run_dir()
        built = build(cfg, run)
        self.data, self.model, self.optimizer = built.data, built.model, built.optimizer
        self.scheduler, self.guard, self.total_steps = built.scheduler, built.guard, built.total_steps
        self.state = TrainState()
        sharded = cfg.sharded()  # FSDP2: model and optimizer states as DTensors, saved by every process
        # base shapes come from the builder: nothing is rescaled twice
        self.state.register("model", ShardedModel(self.model) if sharded else self.model)
        self.state.register("optimizer", ShardedOptimizer(self.model, self.optimizer) if sharded else self.optimizer)
        self.state.register("scheduler", self.scheduler)
        self.scaler = self.state.register("scaler", built.scaler)
        self.state.register("rng", Rng(run.device))
        self.noise = self.state.register("noise_scale", NoiseScale())
        self.divergence = self.state.register("divergence", Divergence(cfg.divergence_factor))
        self.cursor = self.state.register("data", DataCursor(cfg.seed))
        self.clock = self.state.register("clock", Clock())
        if self.guard is not None:
            self.state.register("guard", self.guard)
        self.checkpointer = Checkpointer(cfg, run, self.state, self.optimizer, self.guard, self.total_steps)
        self.writer: CurveWriter | None = None  # rank 0 writes; the others train
        self.trackers: Trackers | None = None  # rank 0 mirrors the curve to them
        self.train_loss = self.val_loss = None  # the last logged

    def fit(self, resume: bool) -> RunResult:
        with Preemption() as preemption:  # from the start: a signal during setup stops the run after one step
            try:
                return self.fit_steps(resume, preemption)
            finally:
                if self.trackers is not None:
                    self.trackers.close()  # an unfinished run (preempted, failed): left open for its resume

    def fit_steps(self, resume: bool, preemption: Preemption) -> RunResult:
        if resume:
            self.checkpointer.resume()
        recorded = self.run_dir / "result.json"
        if self.state.step >= self.total_steps and recorded.exists():  # resumed a finished run: what it recorded
            inside_root(recorded, Path(self.cfg.output.root), "output.run")  # not through a link out of the root
            with reading(recorded, "run result"):  # read before anything is written
                result = RunResult(**json.loads(recorded.read_text()))
            self.keep_config()
            return result
        if self.guard is not None:
            self.guard.write_events()  # events of a branch lost with the kill are dropped, as curve rows are
        self.open_outputs()
        if self.state.step >= self.total_steps:  # finished, killed before its result was written
            return RunResult(self.run_id, "completed", self.state.step, None, None)
        self.prepare_steps()
        if self.guard is not None and self.state.step == 0:
            self.checkpointer.save_ring()  # the ring reaches back to the start
        try:
            while self.state.step < self.total_steps:
                step = self.train_step()
                if step is None:  # rewound: the steps since the ring checkpoint are undone
                    continue
                if self.compiling:
                    self.compiling = False
                    self.throughput.mark(self.state.tokens)
                logged = self.log_due(step)
                if logged:
                    self.log_and_eval(step)
                self.checkpointer.maybe_save(self.state.step)
                if logged:
                    self.throughput.mark(self.state.tokens)  # throughput counts training steps only
                if self.asked_to_stop(preemption):
                    self.checkpointer.save(self.state.step, force=True)
                    preemption.leave(self.state.step)
        except Stop as stop:
            return self.finish(stop.status, stop.train_loss, stop.val_loss, stop.reason)
        return self.finish("completed", self.train_loss, self.val_loss)

    def asked_to_stop(self, preemption: Preemption) -> bool:
        """Whether a termination signal came; with several processes, to any of them (one all-reduce per step, so
        that they all stop after the same step and write one checkpoint together)."""
        if not self.run.distributed:
            return preemption.received is not None
        received = torch.tensor(float(preemption.received is not None), device=self.run.device)
        return rt.mean_across(self.run, received).item() > 0

    def keep_config(self) -> None:
        """Rank 0: a finished run's config.yaml, deleted by hand, put back by running it again (`sweep status` names
        a trained run without it; an outside tester relaunched, and the run said "done" and stayed without it). The
        checkpoint it resumed from was of this model and run (the checkpointer's check)."""
        if self.run.main and not (self.run_dir / "config.yaml").exists():
            with atomic_path(self.run_dir / "config.yaml") as tmp:
                tmp.write_text(self.cfg.to_yaml())

    def open_outputs(self) -> None:
        """Rank 0: the curve writer (rows past the checkpoint dropped: they will be logged again), the config and
        the base shapes beside the run."""
        if not self.run.main:
            return
        cfg = self.cfg
        self.writer = self.checkpointer.curves = CurveWriter(cfg.curves_root(), cfg.output.study, cfg.output.kind,
                                                             self.run_id)
        self.writer.truncate_after(self.state.step)
        with atomic_path(self.run_dir / "config.yaml") as tmp:
            tmp.write_text(cfg.to_yaml())
        with atomic_path(self.run_dir / "base_shapes.bsh") as tmp:
            save_base_shapes(self.model, tmp)

    def prepare_steps(self) -> None:
        cfg, run, model = self.cfg, self.run, self.model
        self.wrapped = DDP(model) if run.distributed and not cfg.sharded() else model  # FSDP2 shards in place
        self.forward = compile_for_run(self.wrapped) if cfg.compile else self.wrapped
        self.compiling = cfg.compile  # this process's first step compiles: outside every throughput window
        model.train()
        self.params = [p for p in model.parameters() if p.requires_grad]
        self.signals = Signals(model, self.optimizer, cfg.signals.every) if cfg.signals.every else None
        self.tokens_per_step = cfg.tokens_per_step(self.data.tokens_per_example)
        self.flops = flops_per_token(model, self.data.tokens_per_example)
        self.peak = peak_flops(run.device, run.dtype)
        self.static = {"trial": cfg.provenance.trial, "model": cfg.model.name,
                       "parametrization": cfg.model.parametrization, "width": cfg.model.width,
                       "depth": cfg.model.depth, "batch_size": cfg.batch_size}
        if self.writer is not None:  # opened only for a run with steps to go
            self.trackers = Trackers(cfg, self.run_dir)
        self.clock.start()  # wall time accumulates across resumes, setup not counted
        self.throughput = Throughput(self.state.tokens)

    def train_step(self) -> Step | None:
        """One optimizer step, in the order of the module docstring; None when the guard rewound the run instead."""
        state = self.state
        measure = self.signals is not None and self.signals.due(state.step + 1)
        loss = self.forward_backward(measure)
        if state.step + 1 < self.total_steps:  # the host gathers it while the device still works on this step
            self.cursor.prefetch(self.draw)
        skip, loss_now = False, None
        if self.guard is not None:  # the guard needs every step's loss: one host sync per step while it is on
            loss_now = rt.mean_across(self.run, loss).item()
            action = self.answer_spike(loss_now)
            if action == "rewind":
                return None
            skip = action == "skip"
        group = self.optimizer.param_groups[0]
        lr = group["lr"] / group["lr_mult"]
        grad_norm = None
        if not skip:
            self.scaler.unscale_(self.optimizer)
            if measure:
                self.signals.after_unscale()
            max_norm = self.cfg.optimizer.grad_clip if self.cfg.optimizer.grad_clip is not None else math.inf
            grad_norm = full(torch.nn.utils.clip_grad_norm_(self.params, max_norm))
            self.scaler.step(self.optimizer)
            self.scaler.update()
        elif measure:
            self.signals.after_unscale()
        self.scheduler.step()
        self.optimizer.zero_grad(set_to_none=True)  # released now: evaluation and noise-scale batches run without them
        state.step += 1
        state.tokens += self.tokens_per_step
        return Step(loss, loss_now, skip, lr, grad_norm, measure)

    def forward_backward(self, measure: bool) -> torch.Tensor:
        """Zeroed gradients, then this process's share of the step's batch in grad_accum micro-batches; the loss."""
        cfg, run = self.cfg, self.run
        if measure:
            self.signals.attach()
        self.optimizer.zero_grad(set_to_none=True)
        loss = torch.zeros((), device=run.device)
        for i, (x, y) in enumerate(self.cursor.next(self.draw)):
            with self.gradient_sync(i == cfg.grad_accum - 1):
                with run.autocast():
                    micro = objective(self.forward, x, y, cfg.z_loss) / cfg.grad_accum
                self.scaler.scale(micro).backward()
            loss += micro.detach()
        if measure:
            self.signals.detach()
        return loss

    def draw(self, generator: torch.Generator) -> list[tuple[torch.Tensor, torch.Tensor]]:
        """A step's batch (every process draws the whole batch), this process's share of it in grad_accum
        micro-batches, sent to the device (pinned, non-blocking on CUDA)."""
        cfg, run = self.cfg, self.run
        share = part(self.data.batch("train", cfg.batch_size, generator), run.rank, run.world)
        return [to_device(part(share, i, cfg.grad_accum), run) for i in range(cfg.grad_accum)]

    def gradient_sync(self, last: bool):
        """Gradients are averaged across processes on the step's last micro-batch only (DDP's no_sync before it;
        FSDP2 keeps unsharded gradients until then)."""
        if self.cfg.sharded():
            self.model.set_requires_gradient_sync(last)
            return nullcontext()
        return self.wrapped.no_sync() if self.run.distributed and not last else nullcontext()

    def answer_spike(self, loss: float) -> str:
        """The guard's word on this step's loss: train, log, skip or rewind (done here); a stop ends the run."""
        spike = self.guard.check(self.state.step + 1, loss)
        if spike is None:
            return "train"
        action, target = self.guard.respond(spike)
        if self.trackers is not None:
            self.trackers.event(self.guard.events[-1])
        if action == "stop":
            self.state.step += 1
            raise Stop("diverged", loss, None, self.guard.stop_reason())
        if action == "rewind":
            self.checkpointer.rewind(target)
            self.throughput.mark(self.state.tokens)
        return action

    def log_due(self, step: Step) -> bool:
        s = self.state.step
        return s % self.cfg.log_every == 0 or self.eval_due() or s == 1 or step.measured

    def eval_due(self) -> bool:
        return self.state.step % self.cfg.eval.every == 0 or self.state.step == self.total_steps

    def log_and_eval(self, step: Step) -> None:
        """The step's row (its loss is the one host sync, at the logging cadence); a diverged run stops here;
        evaluation when due, and `on_eval` may stop the run; the row goes to the curve and to `on_log`."""
        train_loss = step.loss_now if step.loss_now is not None else rt.mean_across(self.run, step.loss).item()
        self.train_loss = train_loss
        rate = self.throughput.rate(self.state.tokens)
        row = {"step": self.state.step, "tokens": self.state.tokens, "wall_time": self.clock.elapsed(), "lr": step.lr,
               "train_loss": train_loss, "grad_norm": step.grad_norm.item() if step.grad_norm is not None else None,
               "tokens_per_s": rate,
               "mfu": self.flops * rate / (self.peak * self.run.world) if self.peak and rate is not None else None,
               **self.static}
        if step.measured:
            row.update(self.signals.after_step())
        reason = self.divergence.check(self.state.step, train_loss, step.skipped)
        if reason is not None:
            self.record(row)
            raise Stop("diverged", train_loss, None, reason)
        keep_going = self.evaluate(row) if self.eval_due() else True
        self.record(row)
        if self.on_log is not None and self.run.main:
            self.on_log(row)
        if not keep_going:
            raise Stop("pruned", train_loss, self.val_loss, f"stopped by on_eval at step {self.state.step}")

    def record(self, row: dict) -> None:
        """Rank 0: the row into the curve, and its mirror to the trackers."""
        if self.writer is not None:
            self.writer.log(row)
            self.trackers.log(row)

    def evaluate(self, row: dict) -> bool:
        """Val loss (and the noise scale) into `row`; whether to keep going, as rank 0's `on_eval` says."""
        cfg, run, step = self.cfg, self.run, self.state.step
        held_out = cfg.seed if cfg.eval.seed is None else cfg.eval.seed
        with averaged_weights(self.optimizer):  # Schedule-Free: the val loss of its average, not of y
            self.val_loss = evaluate(self.model, self.data, run, batches=cfg.eval.batches,
                                     batch_size=cfg.batch_size, chunks=cfg.grad_accum, seed=held_out + EVAL_SEED_OFFSET)
        row["val_loss"] = self.val_loss
        row.update(predicted_columns(cfg.provenance.prediction, step / self.total_steps))
        row.update(refined_columns(cfg.provenance.prediction, step / self.total_steps, self.val_loss))
        if cfg.eval.noise_scale_batches:
            micro = cfg.batch_size // (run.world * cfg.grad_accum)  # examples per forward pass
            self.noise.update(*measure_noise_scale(self.model, self.data, run, n_small=cfg.eval.noise_scale_batches,
                                                   batch_size=micro, seed=cfg.seed + EVAL_SEED_OFFSET + step))
            row["noise_scale"] = self.noise.value
        keep_going = True
        if self.on_eval is not None and run.main:
            keep_going = bool(self.on_eval(step, row))
        return rt.agree(run, keep_going)

    def finish(self, status: str, train_loss, val_loss, reason=None) -> RunResult:
        result = RunResult(self.run_id, status, self.state.step, train_loss, val_loss, reason)
        if status == "completed":
            self.checkpointer.save(self.state.step, force=True)
        if self.writer is not None:
            self.trackers.close(status)
            self.writer.compact()  # the run's rows are final: one part to read
            with atomic_path(self.run_dir / "result.json") as tmp:
                tmp.write_text(json.dumps(asdict(result), indent=2))
        return result
