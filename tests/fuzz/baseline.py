"""The working baseline every case starts from: the tiny RunConfig and study spec (its study finished in the seed
root), the shipped specs shrunk to train in seconds, and an argument that is a file written into the example's
folder."""
from __future__ import annotations

from importlib import resources
from pathlib import Path

import yaml

# the shipped study specs (gpt-proxy-run is a RunConfig)
EXAMPLES = ("demo", "gpt-tokens", "llama", "mlp", "per-module")

TINY_RUN = {  # a RunConfig that trains in well under a second
    "model": {"name": "gpt", "width": 16, "depth": 1, "options": {"block_size": 16}},
    "data": {"kind": "synthetic-tokens", "seq_len": 16, "options": {"n_tokens": 4000}},
    "batch_size": 2,
    "steps": 2,
    "log_every": 1,
    "eval": {"every": 2, "batches": 1, "noise_scale_batches": 0},
}
TINY_SPEC = {
    "name": "tiny",
    "trials": 2,
    "run": TINY_RUN,
    "search": {"optimizer.lr": {"low": 1.0e-3, "high": 3.0e-2, "log": True}},
    "sampler": {"name": "tpe", "seed": 0},
    "pruner": {"name": "none"},
}
WIDTH = 16  # the width of the finished study in the seed root


class File:
    """An argument that is a file written into the example's folder: YAML of `data`, or raw `text`."""

    def __init__(self, name: str, data=None, text: str | bytes | None = None):
        self.name, self.data = name, data
        self.text = text if text is not None else yaml.safe_dump(data, sort_keys=False, allow_unicode=True)

    def __call__(self, folder: Path) -> Path:
        path = folder / self.name
        path.write_bytes(self.text.encode("utf-8", "surrogatepass") if isinstance(self.text, str) else self.text)
        return path


def shipped_spec(name: str) -> dict:
    return yaml.safe_load(resources.files("sweep.examples").joinpath(f"{name}.yaml").read_text())


def run_doc(folder_name: str = "results") -> dict:
    """The tiny RunConfig writing into the example's results root (a relative root: the command runs there)."""
    return {**TINY_RUN, "output": {"root": folder_name, "study": "tiny", "run": "fuzzrun"}}


def shrunk(name: str) -> dict:
    """A shipped spec with a budget that trains in seconds: 1 trial of 2 steps, short sequences, width 16."""
    spec = shipped_spec(name)
    run = spec["run"]
    run["model"] = {**run["model"], "width": WIDTH, "options": {**run["model"].get("options", {}), "block_size": 16}}
    run["data"] = {**run["data"], "seq_len": 16}
    run.update(steps=2, batch_size=2, log_every=1, eval={"every": 2, "batches": 1, "noise_scale_batches": 0})
    spec.update(trials=1, pruner={"name": "none"})
    return spec
