"""Instability signals, measured every `signals.every` steps and logged as columns of the curves store.

The early warnings of Wortsman et al. 2023 ("Small-scale proxies for large-scale Transformer training
instabilities": attention-logit growth, output-logit divergence) and the usual per-layer views:

    grad_norm.<group>        pre-clip ‖g‖ of each optimizer parameter group (after unscaling)
    update_ratio.<group>     ‖ΔW‖ / ‖W‖ of the group over this step's optimizer update
    act_max.<block>          max |output| of each block (each entry of a ModuleList: gpt blocks.i, mlp hidden.i)
    attn_logit_max.<layer>   max attention logit q·k·scale over unmasked positions (gpt attention layers)
    logit_max                max |output logit|
    logit_lse_mean           mean log Z = mean logsumexp(logits), the z-loss quantity

<group> names a μP parameter group by its LR multiplier and decay: `lr0.5-decay`, `lr1-nodecay`; a group
whose AdamW ε is scaled (the residual blocks under depth transfer) adds it: `lr1-eps0.25-nodecay`.
Forward values are maxima (and the mean, for log Z) over the step's micro-batches, on rank 0's share
of the batch. Hooks are registered for the measured step only and removed after it; the attention
logits are recomputed from the layer's input beside the fast SDPA path, so measuring never changes
the training arithmetic (a run with signals has the same curve as one without, and the same run id).
"""
from __future__ import annotations

import torch
from torch import nn

from proxies.gpt import CausalSelfAttention


def group_name(group: dict) -> str:
    """A group restored from a checkpoint written before groups carried `decays` is named by its weight decay."""
    decays = group.get("decays", group["weight_decay"] > 0)
    eps = f"-eps{group['eps_mult']:.4g}" if group.get("eps_mult", 1.0) != 1.0 else ""
    return f"lr{group['lr_mult']:.4g}{eps}-{'decay' if decays else 'nodecay'}"


class Signals:
    def __init__(self, model: nn.Module, optimizer: torch.optim.Optimizer, every: int):
        self.model, self.optimizer, self.every = model, optimizer, every
        self.blocks = [(f"{name}.{i}", child) for name, m in model.named_modules() if isinstance(m, nn.ModuleList)
                       for i, child in enumerate(m)]
        self.attention = [(name, m) for name, m in model.named_modules() if isinstance(m, CausalSelfAttention)]
        self.handles: list = []
        self.values: dict[str, torch.Tensor] = {}
        self.before: list[torch.Tensor] = []
        self.forwards = 0

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
                    T = q.shape[-2]
                    logits = (q @ k.transpose(-2, -1)).float() * module.scale
                    causal = torch.ones(T, T, dtype=torch.bool, device=logits.device).tril()
                    self._max(f"attn_logit_max.{name}", logits.masked_fill(~causal, float("-inf")).max())
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
            norms = [torch.linalg.vector_norm(g.float()) for g in grads]
            norm = torch.linalg.vector_norm(torch.stack(norms)) if grads else torch.zeros(())
            self.values[f"grad_norm.{group_name(group)}"] = norm
        self.before = [p.detach().clone() for group in self.optimizer.param_groups for p in group["params"]]

    def after_step(self) -> dict[str, float]:
        """After optimizer.step: the update ratios; returns every signal as a float (one host sync)."""
        before = iter(self.before)
        for group in self.optimizer.param_groups:
            delta = weight = torch.zeros((), device=group["params"][0].device)
            for p in group["params"]:
                old = next(before).float()
                delta = delta + (p.detach().float() - old).square().sum()
                weight = weight + old.square().sum()
            self.values[f"update_ratio.{group_name(group)}"] = (delta.sqrt() / weight.sqrt().clamp_min(1e-30))
        self.before = []
        if self.forwards:
            self.values["logit_lse_mean"] = self.values["logit_lse_mean"] / self.forwards
        values = torch.stack([v.float().reshape(()) for v in self.values.values()]).tolist()
        return dict(zip(self.values, values))
