"""`--backend local`: train on this machine, in this process or as N processes under torch's elastic launcher.

One process trains here (`sweep train RUN.yaml --resume`, with its progress bar); N > 1 run
`python -m torch.distributed.run --standalone --nproc-per-node N -m sweep train RUN.yaml --resume`,
whose processes join a gloo (CPU) or NCCL (GPU) group through the trainer's runtime. Either resumes
from the run's latest checkpoint, so the same command continues a killed run. torchrun dies with
this command and its workers with torchrun (PR_SET_PDEATHSIG; torchrun starts each worker in a
session of its own, out of reach of a signal to this one's), so a killed launch leaves no worker
training on beside the next one.
"""
from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from rich.console import Console

from sweep.cluster.processes import die_with_parent, this_process
from sweep.runs.record import write_record
from sweep.runs.train import run_train
from trainer.config import RunConfig


def elastic_command(config: Path, processes: int) -> list[str]:
    """torchrun on one machine (a private rendezvous on a free port) running `sweep train` with resume."""
    return [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc-per-node={processes}",
            "-m", "sweep", "train", str(config), "--resume", "--quiet"]


def launch_local(cfg: RunConfig, config: Path, processes: int, console: Console) -> int:
    """Train here; returns the exit code (0 when the run completed)."""
    record = write_record(cfg, {"backend": "local", "job": f"pid {os.getpid()}", "process": this_process(os.getpid()),
                                "processes": processes, "config": str(config.resolve()), "launched": time.time()})
    console.print(f"local: {processes} process(es); checkpoints {record['checkpoints']}; curve {record['curve']}")
    if processes == 1:
        return 0 if run_train(config, None, True, False, console).status == "completed" else 1
    return subprocess.run(elastic_command(config, processes), preexec_fn=die_with_parent).returncode
