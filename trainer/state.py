"""The training state a checkpoint holds, kept as torchtitan keeps it: every stateful part has
`state_dict()` / `load_state_dict()` and is registered once, by name, with the run's `TrainState`.
Saving and restoring iterate the registry, so one more piece of state is one more `register` call.

A checkpoint is `{"format": FORMAT, "step": s, "tokens": n, name: part.state_dict(), …}`: tensors, numbers,
strings and plain containers, so it loads with `torch.load(weights_only=True)`.
- resume: every part loads its state; a part the checkpoint lacks (the spike guard switched on for a run
  checkpointed without it) keeps the state it was built with.
- rewind (the spike guard going back to a ring checkpoint): every part loads its state too, except that a
  part with a `rewind(state)` method says what going back means for it: the data stream and the wall clock
  keep going, the guard keeps its events, the divergence streak starts over.
"""
from __future__ import annotations

import time
from collections.abc import Callable
from typing import Protocol, TypeVar

import torch

FORMAT = 2  # the checkpoint layout; 1 (no "format" key) listed the loop's counters by hand


class Stateful(Protocol):
    def state_dict(self) -> dict: ...

    def load_state_dict(self, state: dict) -> None: ...


S = TypeVar("S", bound=Stateful)


class TrainState:
    """The optimizer step, the tokens trained on, and the registered parts (model, optimizer, data, …)."""

    OWN = ("format", "step", "tokens")

    def __init__(self):
        self.step = 0
        self.tokens = 0
        self.parts: dict[str, Stateful] = {}

    def register(self, name: str, part: S) -> S:
        """Add `part` under `name` to every checkpoint from now on; returns it."""
        if name in self.parts or name in self.OWN:
            raise ValueError(f"train state: {name!r} is taken (registered: {', '.join([*self.OWN, *self.parts])})")
        self.parts[name] = part
        return part

    def state_dict(self) -> dict:
        return {"format": FORMAT, "step": self.step, "tokens": self.tokens,
                **{name: part.state_dict() for name, part in self.parts.items()}}

    def load_state_dict(self, state: dict) -> None:
        self.step, self.tokens = state["step"], state["tokens"]
        for name, part in self.parts.items():
            if name in state:
                part.load_state_dict(state[name])

    def rewind(self, state: dict) -> None:
        """Go back to a checkpoint of this run; each part's `rewind(state)`, where it has one, replaces its load."""
        self.step, self.tokens = state["step"], state["tokens"]
        for name, part in self.parts.items():
            if name in state:
                getattr(part, "rewind", part.load_state_dict)(state[name])


def format_of(state: dict) -> int:
    return state.get("format", 1)


class Rng:
    """torch's global RNG (dropout draws from it), and the current CUDA device's on a CUDA run."""

    def __init__(self, device: torch.device):
        self.cuda = device.type == "cuda"

    def state_dict(self) -> dict:
        return {"torch": torch.get_rng_state(), **({"cuda": torch.cuda.get_rng_state()} if self.cuda else {})}

    def load_state_dict(self, state: dict) -> None:
        torch.set_rng_state(state["torch"])
        if self.cuda and "cuda" in state:  # a checkpoint written on CPU has none
            torch.cuda.set_rng_state(state["cuda"])


class DataCursor:
    """The position in the training stream: the generator that draws each step's batch. A rewind leaves it
    where it is, so the batches that led to a spike are skipped for good.

    The next step's batch may be drawn ahead (`prefetch`, while the device still works on this step); the position
    saved is then the one before it, so a resume draws that batch again rather than skipping it."""

    def __init__(self, seed: int):
        self.generator = torch.Generator().manual_seed(seed)
        self.ahead: tuple[torch.Tensor, object] | None = None  # (generator state before the draw, the batch)

    def prefetch(self, draw: Callable[[torch.Generator], object]) -> None:
        before = self.generator.get_state()
        self.ahead = (before, draw(self.generator))

    def next(self, draw: Callable[[torch.Generator], object]) -> object:
        """The prefetched batch, else one drawn now."""
        if self.ahead is None:
            return draw(self.generator)
        batch, self.ahead = self.ahead[1], None
        return batch

    def state_dict(self) -> dict:
        return {"generator": self.ahead[0] if self.ahead is not None else self.generator.get_state()}

    def load_state_dict(self, state: dict) -> None:
        self.generator.set_state(state["generator"])
        self.ahead = None

    def rewind(self, state: dict) -> None:
        pass


class Clock:
    """The run's wall time, accumulated across resumes (not counting setup); a rewind does not turn it back."""

    def __init__(self):
        self.carried = 0.0  # seconds trained by the processes before this one
        self.started = time.perf_counter()

    def start(self) -> None:
        self.started = time.perf_counter() - self.carried

    def elapsed(self) -> float:
        return time.perf_counter() - self.started

    def state_dict(self) -> dict:
        return {"elapsed": self.elapsed()}

    def load_state_dict(self, state: dict) -> None:
        self.carried = state["elapsed"]
        self.start()

    def rewind(self, state: dict) -> None:
        pass
