"""Loss-spike guard: detect a spike, then log it, skip the step, or rewind (PaLM, Chowdhery et al. 2022, §5.1).

A spike at step s, with loss L against the last `window` accepted losses (mean μ, std σ):
    ratio rule:   L > factor · μ              (factor ≈ 1.5 in common practice)
    zscore rule:  L > μ + zscore · σ
    any rule:     L is nan or inf
Detection starts once the window is full; a spiking loss never enters the window.

Actions (`guard.action`):
- log:    record the event; the step goes on as usual.
- skip:   record it; this batch makes no optimizer update (the step number and the schedule advance).
- rewind: restore the newest ring checkpoint r ≤ s − rewind_steps (model, optimizer, scheduler, RNG and
          counters) but keep the data stream where it is, so batches r+1 … s are skipped for good, and go on
          from step r+1. PaLM restarted ~100 steps before a spike and skipped 200–500 batches.
After `max_rewinds` interventions (rewinds or skips) the next spike stops the run with the reason.

The ring: a checkpoint every `ring_every` steps (step 0 included), the newest `ring_size` kept, written
atomically under runs/RUN/guard-ring/. The guard's own state (window, events, intervention count) is in
every checkpoint, so the skipped ranges survive a kill -9. After a rewind to r the ring's step-r
checkpoint is rewritten with the post-rewind state and every checkpoint past the abandoned branch is
deleted, so a resume continues the rewound run, bit for bit on CPU.

Events are the rows of `events/study=…/kind=…/run=…/events.parquet` beside `curves/` (rewritten whole,
atomically, at each event): step, kind (spike | skip | rewind | stop), loss, rolling_mean, threshold,
restored_step, skip_from, skip_to (the batches never trained on, inclusive).
"""
from __future__ import annotations

import math
import statistics
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from trainer.atomic import atomic_path
from trainer.checkpoint_names import RING, list_checkpoints, step_of
from trainer.config import GuardConfig, RunConfig

EVENTS = pa.schema([("step", pa.int64()), ("kind", pa.string()), ("loss", pa.float64()), ("rolling_mean", pa.float64()),
                    ("threshold", pa.float64()), ("restored_step", pa.int64()), ("skip_from", pa.int64()),
                    ("skip_to", pa.int64())])


def events_path(cfg: RunConfig) -> Path:
    run = f"run={cfg.run_id()}"
    return cfg.events_root() / f"study={cfg.output.study}" / f"kind={cfg.output.kind}" / run / "events.parquet"


@dataclass(frozen=True)
class Spike:
    step: int
    loss: float
    mean: float
    threshold: float


class SpikeGuard:
    def __init__(self, cfg: GuardConfig, run_dir: Path, events_path: Path | None):
        self.cfg = cfg
        self.ring_dir = run_dir / RING
        self.events_path = events_path  # None on ranks other than 0
        self.window: list[float] = []
        self.events: list[dict] = []
        self.interventions = 0

    def check(self, step: int, loss: float) -> Spike | None:
        """The spike at `step`, or None (and the loss joins the window)."""
        mean = statistics.fmean(self.window) if self.window else math.nan
        if math.isfinite(loss):
            if len(self.window) < self.cfg.window:
                self._accept(loss)
                return None
            if self.cfg.rule == "ratio":
                threshold = self.cfg.factor * mean
            else:
                threshold = mean + self.cfg.zscore * statistics.pstdev(self.window)
            if loss <= threshold:
                self._accept(loss)
                return None
        else:
            threshold = math.nan
        return Spike(step, loss, mean, threshold)

    def _accept(self, loss: float) -> None:
        self.window = [*self.window[1 - self.cfg.window:], loss]

    def respond(self, spike: Spike) -> tuple[str, Path | None]:
        """Record the event and say what to do: log, skip, rewind (with the ring checkpoint to restore) or stop."""
        row = {"step": spike.step, "loss": spike.loss, "rolling_mean": spike.mean, "threshold": spike.threshold,
               "restored_step": None, "skip_from": None, "skip_to": None}
        action, target = self.cfg.action, None
        if action != "log" and self.interventions >= self.cfg.max_rewinds:
            action = "stop"
        elif action == "rewind":
            target = self.ring_target(spike.step)
            if target is None:  # no checkpoint old enough yet: the batch is skipped instead
                action = "skip"
            else:
                row.update(restored_step=step_of(target), skip_from=step_of(target) + 1, skip_to=spike.step)
        if action == "skip":
            row.update(skip_from=spike.step, skip_to=spike.step)
        if action in ("skip", "rewind"):
            self.interventions += 1
        self.events.append({**row, "kind": "spike" if action == "log" else action})
        self.write_events()
        return action, target

    def stop_reason(self) -> str:
        last = self.events[-1]
        return (f"spike guard: loss {last['loss']:.4g} at step {last['step']} above {last['threshold']:.4g} "
                f"after {self.interventions} {self.cfg.action}s (guard.max_rewinds {self.cfg.max_rewinds})")

    def ring_target(self, spike_step: int) -> Path | None:
        """The newest ring checkpoint at least `rewind_steps` before the spike."""
        old = [p for p in list_checkpoints(self.ring_dir) if step_of(p) <= spike_step - self.cfg.rewind_steps]
        return old[-1] if old else None

    def ring_due(self, step: int) -> bool:
        return step % self.cfg.ring_every == 0

    def rewind(self, state: dict) -> None:
        """Back to a ring checkpoint (`state` is the guard's part of it): its window comes back; events and the
        count stay."""
        self.window = list(state["window"])

    def write_events(self) -> None:
        """Rewrite the events file from the state (after an event, and on resume: it drops events of a lost branch)."""
        if self.events_path is None:
            return
        if not self.events:
            self.events_path.unlink(missing_ok=True)
            return
        with atomic_path(self.events_path) as tmp:
            pq.write_table(pa.Table.from_pylist(self.events, schema=EVENTS), tmp)

    def state_dict(self) -> dict:
        return {"window": list(self.window), "events": [dict(e) for e in self.events],
                "interventions": self.interventions}

    def load_state_dict(self, state: dict) -> None:
        self.window, self.events = list(state["window"]), list(state["events"])
        self.interventions = state["interventions"]
