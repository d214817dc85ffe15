"""Run under torchrun by tests/test_fsdp.py: build a RunConfig's model and optimizer sharded (FSDP2) and write this
rank's optimizer groups, and how each of their parameters is sharded, to OUT.RANK.json.

    python -m torch.distributed.run --nproc_per_node=2 -m tests.fsdp_groups RUN.yaml OUT
"""
import gc
import json
import sys

from torch.distributed.tensor import DTensor

from tests.test_fsdp import describe
from trainer import runtime as rt
from trainer.build import build
from trainer.config import RunConfig
from trainer.resolve import resolve

cfg = resolve(RunConfig.load(sys.argv[1]))
run = rt.start(cfg.device, cfg.precision, group=cfg.sharded())
built = groups = None
try:
    built = build(cfg, run)
    groups = built.optimizer.param_groups
    shards = [[{"dtensor": isinstance(p, DTensor), "placements": [str(x) for x in getattr(p, "placements", [])],
                "local": list(p.to_local().shape) if isinstance(p, DTensor) else list(p.shape)}
               for p in g["params"]] for g in groups]
    with open(f"{sys.argv[2]}.{run.rank}.json", "w") as file:
        json.dump({"groups": [describe(g) for g in groups], "shards": shards}, file)
finally:
    # the sharded parts are freed while the process group is still registered, as `train` does (trainer/loop.py):
    # freed after it, at the interpreter's exit, gloo's destructor aborted the process one time in a few under load
    # ("terminate called without an active exception", SIGABRT)
    del built, groups
    gc.collect()
    rt.stop(run)
