"""Batch-size rules: the proxy's optimizer settings at batch B carried to a target batch B' = κ·B.

`linear` (SGD): Goyal et al. 2017, "Accurate, Large Minibatch SGD", §2.1 (the linear scaling rule:
the LR grows by the factor the minibatch grows by); their ResNet-50 recipe is lr = 0.1·B/256.

`sqrt` (Adam): Malladi et al. 2022, "On the SDEs and Scaling Rules for Adaptive Gradient
Algorithms", §4 (the square-root scaling rule, SRSR): with batch κB use
    η' = √κ·η,   1 − β₁' = κ(1 − β₁),   1 − β₂' = κ(1 − β₂),   ε' = ε/√κ.
It is derived for κ(1 − β) < 1 (the β' stay in (0, 1)); beyond that it has no meaning and is refused.

`noise`: McCandlish et al. 2018, "An Empirical Model of Large-Batch Training", §2: the optimal
SGD step at batch B is ε_opt(B) = ε_max / (1 + B_noise/B). The proxy's tuned LR at batch B fixes
ε_max = η·(1 + B_noise/B), so η' = η·(1 + B_noise/B) / (1 + B_noise/B'). B_noise is the simple noise
scale B_simple = tr(Σ)/|G|² the trainer measured on the proxy (trainer/noise_scale.py), in examples.
Beyond the critical batch (≈ B_noise) a larger batch buys few fewer steps; for Adam the optimal LR
can even fall again past B_noise (the "surge" of Li et al. 2024, "Surge Phenomenon in Optimal
Learning Rate and Batch Size Scaling"), so the rule warns there.
"""
from __future__ import annotations

import math

from sweep.rules.axis import sde_adam_moments


def linear(lr: float, kappa: float) -> float:
    """η' = κ·η (Goyal et al. 2017)."""
    return lr * kappa


def sqrt_adam(lr: float, beta1: float, beta2: float, eps: float, kappa: float) -> tuple[float, float, float, float]:
    """(η', β₁', β₂', ε') = (√κ·η, 1 − κ(1 − β₁), 1 − κ(1 − β₂), ε/√κ) (Malladi et al. 2022, SRSR).

    Raises ValueError when a β' leaves (0, 1): the rule holds only while κ(1 − β) < 1.
    """
    return (lr * math.sqrt(kappa), *sde_adam_moments(beta1, beta2, eps, kappa))


def noise(lr: float, batch: float, target_batch: float, b_noise: float) -> float:
    """η' = η·(1 + B_noise/B) / (1 + B_noise/B') (McCandlish et al. 2018)."""
    if b_noise < 0:
        raise ValueError(f"--batch-rule noise: the measured noise scale is negative ({b_noise:.4g}); "
                         "it is too noisy to use")
    return lr * (1 + b_noise / batch) / (1 + b_noise / target_batch)
