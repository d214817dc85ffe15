"""Divergence: a run whose training loss blew up stops, with the reason, instead of training on.

At each logged step with training loss L (the first logged loss is L₁):
    diverged   when L is nan or inf, or L > divergence_factor · L₁ at PATIENCE logged steps in a row
A step whose update the spike guard skipped neither diverges the run nor counts toward the streak. One noisy
batch is not a blow-up, hence the streak; it is training state, so a run resumed inside a streak stops
where the uninterrupted run stops.
"""
from __future__ import annotations

import math

PATIENCE = 3  # logged steps in a row above divergence_factor × the first loss


class Divergence:
    def __init__(self, factor: float):
        self.factor = factor
        self.first_loss: float | None = None
        self.streak = 0  # consecutive logged steps above factor × first_loss

    def check(self, step: int, loss: float, skipped: bool) -> str | None:
        """Count this logged step's loss; the reason to stop the run, or None."""
        if self.first_loss is None:
            self.first_loss = loss
        self.streak = self.streak + 1 if loss > self.factor * self.first_loss and not skipped else 0
        if (not math.isfinite(loss) and not skipped) or self.streak >= PATIENCE:
            return f"diverged at step {step}: train loss {loss:.4g} (first step {self.first_loss:.4g})"
        return None

    def state_dict(self) -> dict:
        return {"first_loss": self.first_loss, "streak": self.streak}

    def load_state_dict(self, state: dict) -> None:
        self.first_loss, self.streak = state["first_loss"], state["streak"]

    def rewind(self, state: dict) -> None:
        """Back before a spike: the losses that led to it no longer count toward a streak."""
        self.load_state_dict(state)
        self.streak = 0
