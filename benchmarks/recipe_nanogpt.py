"""The nanoGPT export checked on nanoGPT's own model: parameters matched and the loss after a few steps.

nanoGPT (karpathy/nanoGPT) is a script repository, not a package, so CI cannot install it; this script takes the path
of its `model.py` (a checkout of the repository) and, on the CPU: builds this project's gpt (tied embeddings, the
form nanoGPT has) and its recipe, executes the exported config file as nanoGPT's configurator does, builds nanoGPT's
`GPT` from it, applies `mup_init_`, `mup_adapt_` and `mup_param_groups` (the three train.py edits), and prints per
parameter whether LR, weight decay and init std equal ours; then copies our weights into nanoGPT's model and prints
both losses over `--steps` AdamW steps on the same batches.

    .venv/bin/python benchmarks/recipe_nanogpt.py ~/nanoGPT/model.py    # ~10 s on 2 cores
"""
from __future__ import annotations

import argparse
import importlib.util
import re
import sys
from pathlib import Path

import torch

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.frameworks_common import DATA, batches, losses  # noqa: E402
from trainer.build import build_net  # noqa: E402
from trainer.config import RunConfig  # noqa: E402
from trainer.frameworks import check, export, nanogpt  # noqa: E402
from trainer.optim import optimizer_of, param_groups  # noqa: E402
from trainer.recipe import Recipe  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model_py", type=Path, help="nanoGPT's model.py")
    parser.add_argument("--width", type=int, default=128)
    parser.add_argument("--steps", type=int, default=3)
    args = parser.parse_args()
    spec = importlib.util.spec_from_file_location("nanogpt_model", args.model_py)
    nano = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(nano)
    cfg = RunConfig.parse({"steps": args.steps, "batch_size": 4, "optimizer": {"lr": 0.01, "weight_decay": 0.1},
                           "model": {"name": "gpt", "width": args.width, "depth": 2,
                                     "options": {"tie_embeddings": True}}, "schedule": {"kind": "constant"}})
    torch.manual_seed(0)
    net = build_net(cfg.model, DATA)
    groups = param_groups(net, cfg.optimizer.lr, cfg.optimizer.weight_decay)
    config: dict = {}
    exec(export(Recipe.from_config(cfg, DATA), "nanogpt"), config)
    model = nano.GPT(nano.GPTConfig(n_layer=config["n_layer"], n_head=config["n_head"], n_embd=config["n_embd"],
                                    block_size=config["block_size"], bias=config["bias"], dropout=0.0,
                                    vocab_size=config["MUP_VOCAB_SIZE"]))
    config["mup_init_"](model)
    config["mup_adapt_"](model)
    optimizer = torch.optim.AdamW(config["mup_param_groups"](model), lr=config["learning_rate"],
                                  betas=(config["beta1"], config["beta2"]))
    result = check(model, optimizer.param_groups, net, groups, nanogpt.NAMES)
    print(f"parameters matched: {result.matched}/{result.total}", *result.mismatches, sep="\n  ")
    ours = dict(net.named_parameters())
    with torch.no_grad():
        for name, p in model.named_parameters():
            target = next(t for regex, t in nanogpt.NAMES if re.fullmatch(regex, name))
            layer = re.search(r"\.(\d+)\.", name)
            parts = (target,) if isinstance(target, str) else target
            p.copy_(torch.cat([ours[q.replace("*", layer.group(1)) if layer else q] for q in parts]))
    data = batches(args.steps)
    a = losses(net, optimizer_of("adamw", groups, lr=cfg.optimizer.lr), data)
    b = losses(lambda x: model(x, x.contiguous())[0], optimizer, data)
    print("step  ours      nanoGPT   |difference|")
    for step, (x, y) in enumerate(zip(a, b, strict=True)):
        print(f"{step:>4}  {x:.6f}  {y:.6f}  {abs(x - y):.2e}")


if __name__ == "__main__":
    main()
