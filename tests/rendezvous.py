"""The zoo's gpt, whose first forward pass in a process waits until K processes have reached theirs.

A test that needs each of K workers to train a trial waits for that state this way, not for a race
between a worker's start-up (spawn, import torch, open the storage) and trials short enough for one
worker to finish them all first. The folder and K come from the environment, which every worker
inherits: SWEEP_TEST_RENDEZVOUS (a folder) and SWEEP_TEST_PEERS (K). The wait ends after
`PATIENCE_S` even if a peer never came, so such a test fails on its own assertion rather than hanging.
"""
import os
import time
from pathlib import Path

from proxies.gpt import gpt

PATIENCE_S = 300.0
GATED = "tests.rendezvous:gated_gpt"  # model.name for a spec; the runs need REPO on PYTHONPATH
REPO = Path(__file__).resolve().parents[1]
arrived = False


def wait_for_peers(module, args) -> None:
    global arrived
    if arrived:
        return
    arrived = True
    folder, peers = Path(os.environ["SWEEP_TEST_RENDEZVOUS"]), int(os.environ["SWEEP_TEST_PEERS"])
    (folder / str(os.getpid())).touch()
    deadline = time.monotonic() + PATIENCE_S
    while len(list(folder.iterdir())) < peers and time.monotonic() < deadline:
        time.sleep(0.05)


def gated_gpt(width: int, depth: int, parametrization: str = "mup", **options):
    model = gpt(width, depth, parametrization, **options)
    model.register_forward_pre_hook(wait_for_peers)
    return model


gated_gpt.base_width = gpt.base_width


def rendezvous_env(folder: Path, peers: int) -> dict:
    """The environment entries that make `tests.rendezvous:gated_gpt` wait for `peers` processes in `folder`."""
    folder.mkdir(parents=True, exist_ok=True)
    return {"SWEEP_TEST_RENDEZVOUS": str(folder), "SWEEP_TEST_PEERS": str(peers)}
