"""The simple gradient noise scale B_simple = tr(Σ) / |G|².

McCandlish et al. 2018, "An Empirical Model of Large-Batch Training", Appendix A.1. A gradient
estimate at batch size B has E|G_B|² = |G|² + tr(Σ)/B, so two batch sizes b < B give unbiased
    |G|²  ≈ (B·|G_B|² − b·|G_b|²) / (B − b)
    tr(Σ) ≈ (|G_b|² − |G_B|²) / (1/b − 1/B)
Each estimate alone is noisy (and can be negative), so `NoiseScale` averages them separately
and divides the means: B_simple = mean tr(Σ) / mean |G|².

Usage, with `b` examples per small batch (Σ is the per-example gradient covariance, so B_simple
is in examples: sequences for a language model, × seq_len for tokens):
    tr_sigma, g_sq = measure(params, loss_fn, n_small=8, b=b)   # leaves p.grad untouched
    noise.update(tr_sigma, g_sq); noise.value                    # B_simple in examples, or None
"""
from __future__ import annotations

from collections.abc import Callable

import torch

from trainer.parallel import full, is_dtensor


def two_batch_estimates(small_sq_norm: float, big_sq_norm: float, b_small: int, b_big: int) -> tuple[float, float]:
    """(tr Σ, |G|²) from squared gradient norms |G_b|², |G_B|² measured at batch sizes b < B."""
    if not 0 < b_small < b_big:
        raise ValueError(f"noise_scale: batch sizes must satisfy 0 < b_small < b_big, got {b_small}, {b_big}")
    g_sq = (b_big * big_sq_norm - b_small * small_sq_norm) / (b_big - b_small)
    tr_sigma = (small_sq_norm - big_sq_norm) / (1 / b_small - 1 / b_big)
    return tr_sigma, g_sq


def measure(params: list[torch.Tensor], loss_fn: Callable[[int], torch.Tensor], n_small: int,
            b: int) -> tuple[float, float]:
    """(tr Σ per example, |G|²) from n_small independent small batches of b examples each.

    loss_fn(i) is the mean loss on the i-th small batch. Each small-batch gradient g_i comes from `gradients`,
    which leaves the loop's accumulated p.grad alone. |G_b|² = mean_i |g_i|²,
    and G_B = mean_i g_i is the gradient of the big batch of B = n_small·b examples.
    """
    if n_small < 2:
        raise ValueError(f"noise_scale.n_small: {n_small} must be ≥ 2 (two batch sizes are needed)")
    small_sq = 0.0
    big = [torch.zeros_like(p, dtype=torch.float32) for p in params]
    for i in range(n_small):
        grads = gradients(loss_fn(i), params)
        with torch.no_grad():
            small_sq = small_sq + sum(g.float().pow(2).sum() for g in grads)  # stays on device: one sync below
            for acc, g in zip(big, grads, strict=True):
                acc += g.float()
    big_sq = sum(acc.div(n_small).pow(2).sum() for acc in big)
    return two_batch_estimates(float(full(small_sq)) / n_small, float(full(big_sq)), b, n_small * b)


def gradients(loss: torch.Tensor, params: list[torch.Tensor]) -> list[torch.Tensor]:
    """d loss / d params, p.grad as it was. torch.autograd.grad, except for FSDP2's sharded parameters (DTensors),
    which are not in the graph (FSDP gathers copies of them): a backward brings their gradients, sharded and
    averaged over processes (which measured the same batches), into p.grad, and the held ones are put back."""
    if not any(is_dtensor(p) for p in params):
        return list(torch.autograd.grad(loss, params))
    held = [p.grad for p in params]
    for p in params:
        p.grad = None
    loss.backward()
    grads = [p.grad for p in params]
    for p, g in zip(params, held, strict=True):
        p.grad = g
    return grads


class NoiseScale:
    """Running means of tr Σ and |G|²; `value` = mean tr Σ / mean |G|² (None until it is defined)."""

    def __init__(self):
        self.count = 0
        self.tr_sigma = 0.0
        self.g_sq = 0.0

    def update(self, tr_sigma: float, g_sq: float) -> None:
        self.count += 1
        self.tr_sigma += (tr_sigma - self.tr_sigma) / self.count
        self.g_sq += (g_sq - self.g_sq) / self.count

    @property
    def value(self) -> float | None:
        if self.count == 0 or self.g_sq <= 0:
            return None
        return self.tr_sigma / self.g_sq

    def state_dict(self) -> dict:
        return {"count": self.count, "tr_sigma": self.tr_sigma, "g_sq": self.g_sq}

    def load_state_dict(self, state: dict) -> None:
        self.count, self.tr_sigma, self.g_sq = int(state["count"]), float(state["tr_sigma"]), float(state["g_sq"])
