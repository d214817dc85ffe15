"""The training loop: one RunConfig in; curves, checkpoints and a result out.

One optimizer step, in this order (each line is a classic bug when moved or dropped):
    zero_grad(set_to_none=True)
    for each of grad_accum micro-batches:            (DDP: no_sync on all but the last)
        forward under autocast; loss / grad_accum; backward (through the GradScaler for fp16)
    unscale the gradients (fp16)                      before clipping, or the clip sees scaled norms
    clip_grad_norm_ once                              the pre-clip norm is what gets logged
    optimizer.step(); scheduler.step()                the scheduler after the optimizer
The loop knows nothing of sweeps or clusters: it reports through `on_log(row)` and
`on_eval(step, metrics) -> keep_going`.
"""
from __future__ import annotations

import json
import math
import time
from contextlib import nullcontext
from dataclasses import asdict, dataclass
from typing import Callable, Optional

import torch
from torch.nn.parallel import DistributedDataParallel as DDP

from proxies.base_shapes import save_base_shapes
from proxies.data import open_data
from proxies.registry import ModelError, base_width_of, build_model
from trainer import runtime as rt
from trainer.atomic import atomic_path
from trainer.checkpoint import (CheckpointError, delete_after, latest_checkpoint, list_checkpoints, load_checkpoint,
                                save_checkpoint)
from trainer.config import ConfigError, RunConfig
from trainer.curves import CurveWriter
from trainer.evaluate import evaluate, measure_noise_scale, objective, part, to_device
from trainer.flops import flops_per_token, peak_flops
from trainer.guard import SpikeGuard, events_path
from trainer.noise_scale import NoiseScale
from trainer.optim import build_optimizer
from trainer.schedule import Schedule, make_scheduler
from trainer.signals import Signals

EVAL_SEED_OFFSET = 1_000_003  # val batches and noise-scale batches use generators of their own
DIVERGENCE_PATIENCE = 3  # logged steps in a row above divergence_factor × first loss: one noisy batch is not a blow-up


@dataclass
class RunResult:
    run_id: str
    status: str  # completed | diverged | pruned
    step: int
    train_loss: Optional[float]
    val_loss: Optional[float]
    reason: Optional[str] = None


class RunExists(ConfigError):
    """A run folder already holds checkpoints and resuming was not asked for."""


def resolve(cfg: RunConfig) -> RunConfig:
    """The config with what the builder declares filled in (base width); a mismatch is a ConfigError."""
    try:
        declared = base_width_of(cfg.model.name)
    except ModelError as err:
        raise ConfigError(str(err)) from None
    if cfg.model.base_width not in (None, declared):
        raise ConfigError(f"model.base_width: {cfg.model.name} declares base width {declared}, config says {cfg.model.base_width}")
    return cfg.model_copy(update={"model": cfg.model.model_copy(update={"base_width": declared})})


def train(cfg: RunConfig, *, resume: bool = False, on_log: Callable[[dict], None] | None = None,
          on_eval: Callable[[int, dict], bool] | None = None) -> RunResult:
    cfg = resolve(cfg)
    run = rt.start(cfg.device, cfg.precision)
    try:
        return _train(cfg, run, resume, on_log, on_eval)
    finally:
        rt.stop(run)


def _train(cfg: RunConfig, run: rt.Runtime, resume: bool, on_log, on_eval) -> RunResult:
    run_id, run_dir = cfg.run_id(), cfg.run_dir()
    ckpt_dir = run_dir / "checkpoints"
    if list_checkpoints(ckpt_dir) and not resume:
        raise RunExists(f"output.run: {run_dir} already has checkpoints; pass --resume to continue it, or set output.run")
    if cfg.batch_size % (run.world * cfg.grad_accum):
        raise ConfigError(f"batch_size: {cfg.batch_size} does not split into {run.world} processes × {cfg.grad_accum} micro-steps")

    data = open_data(cfg.data.kind, path=cfg.data.path, seq_len=cfg.data.seq_len, dtype=cfg.data.dtype,
                     vocab_size=cfg.data.vocab_size, val_fraction=cfg.data.val_fraction, seed=cfg.seed, **cfg.data.options)
    torch.manual_seed(cfg.seed)
    model = build_model(cfg.model.name, cfg.model.width, cfg.model.depth, cfg.model.parametrization,
                        **{**data.model_options(), **cfg.model.options}).to(run.device)
    opt = cfg.optimizer
    optimizer = build_optimizer(model, name=opt.name, lr=opt.lr, weight_decay=opt.weight_decay,
                                betas=(opt.beta1, opt.beta2), eps=opt.eps, momentum=opt.momentum,
                                wd_mode=opt.wd_mode, decay_embeddings=opt.decay_embeddings)
    total_steps = cfg.total_steps(data.tokens_per_example)
    sched = cfg.schedule
    try:
        schedule = Schedule(sched.kind, total_steps, sched.warmup_for(total_steps), sched.min_lr_ratio,
                            sched.decay_fraction, sched.decay_shape)
    except ValueError as err:  # e.g. warmup as long as the run; the message names the field
        raise ConfigError(str(err)) from None
    scheduler = make_scheduler(optimizer, schedule)
    scaler = torch.amp.GradScaler(run.device.type, enabled=run.dtype == torch.float16)
    train_gen = torch.Generator().manual_seed(cfg.seed)
    noise = NoiseScale()
    step, tokens, elapsed, first_loss = 0, 0, 0.0, None
    above = 0  # consecutive logged steps above divergence_factor × the first loss

    guard = SpikeGuard(cfg.guard, run_dir, events_path(cfg) if run.main else None) if cfg.guard_on() else None

    def restore(state: dict, *, data: bool) -> None:
        """Load a checkpoint's training state; `data=False` keeps the data stream where it is (a rewind)."""
        nonlocal step, tokens, first_loss, above
        model.load_state_dict(state["model"])  # base shapes come from the builder: nothing is rescaled twice
        optimizer.load_state_dict(state["optimizer"])
        scheduler.load_state_dict(state["scheduler"])
        scaler.load_state_dict(state["scaler"])
        torch.set_rng_state(state["torch_rng"])
        if run.device.type == "cuda" and "cuda_rng" in state:
            torch.cuda.set_rng_state(state["cuda_rng"])
        noise.load_state_dict(state["noise_scale"])
        step, tokens, first_loss = state["step"], state["tokens"], state["first_loss"]
        above = state.get("above", 0)  # checkpoints written before it was saved start the streak over
        if data:
            train_gen.set_state(state["data_generator"])

    latest = latest_checkpoint(ckpt_dir, *([guard.ring_dir] if guard is not None else [])) if resume else None
    state = load_checkpoint(latest) if latest is not None else None
    if state is not None:
        try:
            restore(state, data=True)
        except (RuntimeError, KeyError, ValueError, TypeError) as err:  # shapes, keys or groups of another model
            found = " ".join(str(err).split())[:200]
            raise CheckpointError(f"output.run: {latest} is a checkpoint of another model or run ({found}); "
                                  f"resume only the run that wrote it, or set another output.run") from None
        elapsed = state["elapsed"]
        if guard is not None and "guard" in state:
            guard.load_state_dict(state["guard"])
    if guard is not None:
        guard.write_events()  # events of a branch lost with the kill are dropped, as curve rows are

    writer = None
    if run.main:  # rank 0 writes; the others train
        writer = CurveWriter(cfg.curves_root(), cfg.output.study, cfg.output.kind, run_id)
        writer.truncate_after(step)  # rows logged after the checkpoint will be logged again
        with atomic_path(run_dir / "config.yaml") as tmp:
            tmp.write_text(cfg.to_yaml())
        with atomic_path(run_dir / "base_shapes.bsh") as tmp:
            save_base_shapes(model, tmp)
    if step >= total_steps:  # resumed a finished run: report what it recorded
        recorded = run_dir / "result.json"
        return RunResult(**json.loads(recorded.read_text())) if recorded.exists() else RunResult(run_id, "completed", step, None, None)

    wrapped = DDP(model) if run.distributed else model
    forward = torch.compile(wrapped) if cfg.compile else wrapped
    model.train()
    params = [p for p in model.parameters() if p.requires_grad]
    signals = Signals(model, optimizer, cfg.signals.every) if cfg.signals.every else None
    micro = cfg.batch_size // (run.world * cfg.grad_accum)  # examples per forward pass
    tokens_per_step = cfg.tokens_per_step(data.tokens_per_example)
    flops = flops_per_token(model, data.tokens_per_example)
    peak = peak_flops(run.device)
    static = {"trial": cfg.provenance.trial, "model": cfg.model.name, "parametrization": cfg.model.parametrization,
              "width": cfg.model.width, "depth": cfg.model.depth, "batch_size": cfg.batch_size}

    def snapshot() -> dict:
        return {
            "model": model.state_dict(), "optimizer": optimizer.state_dict(), "scheduler": scheduler.state_dict(),
            "scaler": scaler.state_dict(), "data_generator": train_gen.get_state(), "torch_rng": torch.get_rng_state(),
            **({"cuda_rng": torch.cuda.get_rng_state()} if run.device.type == "cuda" else {}),
            "noise_scale": noise.state_dict(), "step": step, "tokens": tokens, "elapsed": elapsed, "first_loss": first_loss,
            "above": above,
            **({"guard": guard.state_dict()} if guard is not None else {}),
        }

    def checkpoint(save=lambda state: save_checkpoint(ckpt_dir, step, state, keep=cfg.checkpoint.keep)) -> None:
        if writer is not None:  # rank 0
            writer.flush()  # curves on disk never lag the checkpoint
            save(snapshot())
        rt.barrier(run)

    def save_due() -> None:
        """The checkpoints due after this step: the regular ones and the guard's ring (every step, not only logged ones)."""
        nonlocal elapsed
        if step >= total_steps:  # finish() writes the last one
            return
        elapsed = time.perf_counter() - started
        if cfg.checkpoint.every and step % cfg.checkpoint.every == 0:
            checkpoint()
        if guard is not None and guard.ring_due(step):
            checkpoint(lambda state: guard.save_ring(step, state))

    def finish(status: str, train_loss, val_loss, reason=None) -> RunResult:
        result = RunResult(run_id, status, step, train_loss, val_loss, reason)
        if status == "completed":
            checkpoint()
        if writer is not None:
            writer.compact()  # the run's rows are final: one part to read
            with atomic_path(run_dir / "result.json") as tmp:
                tmp.write_text(json.dumps(asdict(result), indent=2))
        return result

    started = time.perf_counter() - elapsed  # wall time accumulates across resumes
    last_log_time, last_log_tokens = time.perf_counter(), tokens
    train_loss = val_loss = None
    if guard is not None and step == 0:
        checkpoint(lambda state: guard.save_ring(0, state))  # the ring reaches back to the start
    while step < total_steps:
        measure = signals is not None and signals.due(step + 1)
        if measure:
            signals.attach()
        optimizer.zero_grad(set_to_none=True)
        share = part(data.batch("train", cfg.batch_size, train_gen), run.rank, run.world)  # every process draws the global batch
        step_loss = torch.zeros((), device=run.device)
        for i in range(cfg.grad_accum):
            x, y = to_device(part(share, i, cfg.grad_accum), run)
            sync = wrapped.no_sync() if run.distributed and i < cfg.grad_accum - 1 else nullcontext()
            with sync:
                with run.autocast():
                    loss = objective(forward, x, y, cfg.z_loss) / cfg.grad_accum
                scaler.scale(loss).backward()
            step_loss += loss.detach()
        if measure:
            signals.detach()
        action, loss_now = "train", None
        if guard is not None:  # the guard needs every step's loss: one host sync per step while it is on
            loss_now = rt.mean_across(run, step_loss).item()
            spike = guard.check(step + 1, loss_now)
            if spike is not None:
                action, target = guard.respond(spike)
                if action == "stop":
                    step += 1
                    return finish("diverged", loss_now, None, reason=guard.stop_reason())
                if action == "rewind":
                    restored = load_checkpoint(target)
                    restore(restored, data=False)
                    guard.rewound(restored["guard"])
                    if writer is not None:
                        writer.truncate_after(step)
                        delete_after(ckpt_dir, step - 1)
                        delete_after(guard.ring_dir, step)
                    checkpoint(lambda state: guard.save_ring(step, state))  # the rewound state, skipped batches and all
                    above, last_log_time, last_log_tokens = 0, time.perf_counter(), tokens
                    continue
        lr = optimizer.param_groups[0]["lr"] / optimizer.param_groups[0]["lr_mult"]
        grad_norm = None
        if action != "skip":
            scaler.unscale_(optimizer)
            if measure:
                signals.after_unscale()
            max_norm = opt.grad_clip if opt.grad_clip is not None else math.inf
            grad_norm = torch.nn.utils.clip_grad_norm_(params, max_norm)
            scaler.step(optimizer)
            scaler.update()
        elif measure:
            signals.after_unscale()
        scheduler.step()
        step += 1
        tokens += tokens_per_step

        is_eval = step % cfg.eval.every == 0 or step == total_steps
        if step % cfg.log_every and not is_eval and step != 1 and not measure:
            save_due()
            continue
        train_loss = loss_now if loss_now is not None else rt.mean_across(run, step_loss).item()  # the one host sync, at the logging cadence
        first_loss = first_loss if first_loss is not None else train_loss
        now = time.perf_counter()
        elapsed = now - started
        rate = (tokens - last_log_tokens) / max(now - last_log_time, 1e-9)
        row = {"step": step, "tokens": tokens, "wall_time": elapsed, "lr": lr, "train_loss": train_loss,
               "grad_norm": grad_norm.item() if grad_norm is not None else None, "tokens_per_s": rate,
               "mfu": flops * rate / (peak * run.world) if peak else None, **static}
        if measure:
            row.update(signals.after_step())
        above = above + 1 if train_loss > cfg.divergence_factor * first_loss and action != "skip" else 0
        if (not math.isfinite(train_loss) and action != "skip") or above >= DIVERGENCE_PATIENCE:
            reason = f"diverged at step {step}: train loss {train_loss:.4g} (first step {first_loss:.4g})"
            if writer is not None:
                writer.log(row)
            return finish("diverged", train_loss, None, reason)
        keep_going = True
        if is_eval:
            val_loss = evaluate(model, data, run, batches=cfg.eval.batches, batch_size=cfg.batch_size,
                                chunks=cfg.grad_accum, seed=cfg.seed + EVAL_SEED_OFFSET)
            row["val_loss"] = val_loss
            if cfg.eval.noise_scale_batches:
                noise.update(*measure_noise_scale(model, data, run, n_small=cfg.eval.noise_scale_batches,
                                                  batch_size=micro, seed=cfg.seed + EVAL_SEED_OFFSET + step))
                row["noise_scale"] = noise.value
            if on_eval is not None and run.main:
                keep_going = bool(on_eval(step, row))
            keep_going = rt.agree(run, keep_going)
        if writer is not None:
            writer.log(row)
        if on_log is not None and run.main:
            on_log(row)
        if not keep_going:
            return finish("pruned", train_loss, val_loss, reason=f"stopped by on_eval at step {step}")
        save_due()
        last_log_time, last_log_tokens = time.perf_counter(), tokens  # throughput counts training steps only
    return finish("completed", train_loss, val_loss)
