"""Instability signals, measured every `signals.every` steps and logged as columns of the curves store.

The early warnings of Wortsman et al. 2023 ("Small-scale proxies for large-scale Transformer training
instabilities": attention-logit growth, output-logit divergence) and the usual per-layer views:

    grad_norm.<group>        pre-clip ‖g‖ of each optimizer parameter group (after unscaling)
    update_ratio.<group>     ‖ΔW‖ / ‖W‖ of the group over this step's optimizer update
    act_max.<block>          max |output| of each block (each entry of a ModuleList: gpt blocks.i, mlp hidden.i)
    attn_logit_max.<layer>   max attention logit q·k·scale over unmasked positions (gpt, llama attention)
    logit_max                max |output logit|
    logit_lse_mean           mean log Z = mean logsumexp(logits), the z-loss quantity

<group> names a μP parameter group by its LR multiplier and decay: `lr0.5-decay`, `lr1-nodecay`; a group
whose AdamW ε is scaled (the residual blocks under depth transfer) adds it: `lr1-eps0.25-nodecay`; one whose
decay a role multiplies (`optimizer.roles.<role>.weight_decay_mult`) adds that: `lr0.5-decay-wd2`.
Forward values are maxima (and the mean, for log Z) over the step's micro-batches, on rank 0's share
of the batch. Hooks are registered for the measured step only and removed after it; the attention
logits are recomputed from the layer's input beside the fast SDPA path, so measuring never changes
the training arithmetic (a run with signals has the same curve as one without, and the same run id). The
logits are reduced a block of query rows at a time (`attention_logit_max`), never all B·H·T·T at once.

Under `torch.compile`, Dynamo by default installs no guards on module hooks (`skip_nnmodule_hook_guards`): hooks
attached after the first compiled call would never run, and the activation and attention signals would be
silently missing. A `Signals` turns those guards on for the process when it is made (before the first compiled
call), so a measured step runs a graph compiled with the hooks and the other steps the graph without them.
"""
from __future__ import annotations

import torch
from torch import nn

from proxies.gpt import CausalSelfAttention
from proxies.llama import GroupedQueryAttention
from trainer.parallel import full

ATTENTION = (CausalSelfAttention, GroupedQueryAttention)  # modules with `heads(x) -> q, k, v` and `scale`
CHUNK_ELEMENTS = 2 ** 22  # logits held at once by attention_logit_max: 16 MiB in fp32


def attention_logit_max(q: torch.Tensor, k: torch.Tensor, scale: float,
                        chunk_elements: int = CHUNK_ELEMENTS) -> torch.Tensor:
    """max over causal positions j ≤ i of q_i·k_j·scale, in fp32, for q (B, H, T, d) and k (B, H_kv, T, d) with
    H_kv dividing H (grouped-query attention); reduced over blocks of query rows of ≤ chunk_elements logits each."""
    B, H, T, _ = q.shape
    k = k.repeat_interleave(H // k.shape[1], dim=1).transpose(-2, -1)
    rows = max(1, chunk_elements // (B * H * T))
    best = torch.full((), float("-inf"), device=q.device)
    for start in range(0, T, rows):
        stop = min(start + rows, T)
        logits = (q[..., start:stop, :] @ k[..., :stop]).float() * scale  # keys past the last row are masked anyway
        causal = torch.ones(stop - start, stop, dtype=torch.bool, device=q.device).tril(diagonal=start)
        best = torch.maximum(best, logits.masked_fill(~causal, float("-inf")).max())
    return best


def group_name(group: dict) -> str:
    """A group restored from a checkpoint written before groups carried `decays` is named by its weight decay."""
    decays = group.get("decays", group["weight_decay"] > 0)
    eps = f"-eps{group['eps_mult']:.4g}" if group.get("eps_mult", 1.0) != 1.0 else ""
    wd = f"-wd{group['weight_decay_mult']:.4g}" if "weight_decay_mult" in group else ""  # a role's decay multiplier
    return f"lr{group['lr_mult']:.4g}{eps}-{'decay' if decays else 'nodecay'}{wd}"


class Signals:
    def __init__(self, model: nn.Module, optimizer: torch.optim.Optimizer, every: int):
        self.model, self.optimizer, self.every = model, optimizer, every
        self.blocks = [(f"{name}.{i}", child) for name, m in model.named_modules() if isinstance(m, nn.ModuleList)
                       for i, child in enumerate(m)]
        self.attention = [(name, m) for name, m in model.named_modules() if isinstance(m, ATTENTION)]
        self.handles: list = []
        self.values: dict[str, torch.Tensor] = {}
        self.before: list[torch.Tensor] = []
        self.forwards = 0
        torch._dynamo.config.skip_nnmodule_hook_guards = False  # compiled graphs see the hooks come and go

    def due(self, step: int) -> bool:
        return bool(self.every) and step % self.every == 0

    def _max(self, key: str, value: torch.Tensor) -> None:
        old = self.values.get(key)
        self.values[key] = value if old is None else torch.maximum(old, value)

    def attach(self) -> None:
        """Register the forward hooks for the next step's micro-batches."""
        self.values, self.forwards = {}, 0

        def block_hook(name):
            return lambda module, inputs, output: self._max(f"act_max.{name}", output.detach().abs().max().float())

        def attention_hook(name):
            def hook(module, inputs, output):
                with torch.no_grad():
                    q, k, _ = module.heads(inputs[0])
                    self._max(f"attn_logit_max.{name}", attention_logit_max(q, k, module.scale))
            return hook

        def logits_hook(module, inputs, output):
            logits = output.detach().float()
            self._max("logit_max", logits.abs().max())
            lse = torch.logsumexp(logits, dim=-1).mean()
            self.values["logit_lse_mean"] = self.values.get("logit_lse_mean", 0) + lse
            self.forwards += 1

        self.handles = [b.register_forward_hook(block_hook(n)) for n, b in self.blocks]
        self.handles += [a.register_forward_hook(attention_hook(n)) for n, a in self.attention]
        self.handles.append(self.model.register_forward_hook(logits_hook))

    def detach(self) -> None:
        """After the micro-batches: remove the hooks."""
        for h in self.handles:
            h.remove()
        self.handles = []

    def after_unscale(self) -> None:
        """Between unscaling and clipping: per-group gradient norms; keep the weights to measure the update."""
        for group in self.optimizer.param_groups:
            grads = [p.grad for p in group["params"] if p.grad is not None]
            norms = [full(torch.linalg.vector_norm(g.float())) for g in grads]  # of a sharded gradient: its whole
            norm = torch.linalg.vector_norm(torch.stack(norms)) if grads \
                else torch.zeros((), device=group["params"][0].device)  # stacked with the other groups' norms
            self.values[f"grad_norm.{group_name(group)}"] = norm
        self.before = [p.detach().clone() for group in self.optimizer.param_groups for p in group["params"]]

    def after_step(self) -> dict[str, float]:
        """After optimizer.step: the update ratios; returns every signal as a float (one host sync)."""
        before = iter(self.before)
        for group in self.optimizer.param_groups:
            delta = weight = torch.zeros((), device=group["params"][0].device)
            for p in group["params"]:
                old = next(before).float()
                delta = delta + full((p.detach().float() - old).square().sum())
                weight = weight + full(old.square().sum())
            self.values[f"update_ratio.{group_name(group)}"] = (delta.sqrt() / weight.sqrt().clamp_min(1e-30))
        self.before = []
        if self.forwards:
            self.values["logit_lse_mean"] = self.values["logit_lse_mean"] / self.forwards
        values = torch.stack([v.float().reshape(()) for v in self.values.values()]).tolist()
        return dict(zip(self.values, values, strict=True))
