"""Horizon rules: what to keep fixed when the number of tokens per step or in the run changes.

β₂ at a constant half-life in tokens: an EMA with coefficient β weighs a gradient h steps old by β^h,
so its half-life is −1/log₂β steps, or −B/log₂β tokens at B tokens per step. Keeping it in tokens
at batch B' gives β' = β^(B'/B) (the same first-order rule as Malladi et al. 2022's 1 − β' = κ(1 − β),
valid for any κ).

Weight decay at a constant AdamW timescale: AdamW's weights are an EMA of past updates with time
constant τ_iter = 1/(η·λ) steps (Wang & Aitchison 2024, "How to set AdamW's weight decay as you scale
model and dataset size"). In tokens τ = B/(η·λ), kept by λ' = λ·(η/η')·(B'/B) (`tokens`); as a
fraction of the run, τ/D with D the run's tokens (Wang & Aitchison's τ_epoch for one epoch; Bergsma
et al. 2025, "Power Lines"), kept by λ' = λ·(η/η')·(B'/B)·(D/D') (`fraction`).

Warmup as a fraction of the run, or as a fixed number of tokens; never fewer steps than the proxy's
when the LR grows (a larger step needs at least as long a ramp).
"""
from __future__ import annotations

import math


def beta_constant_halflife(beta: float, tokens_per_step: float, target_tokens_per_step: float) -> float:
    """β' = β^(B'/B): the same half-life −B/log₂β in tokens at B' tokens per step."""
    return beta ** (target_tokens_per_step / tokens_per_step)


def halflife_tokens(beta: float, tokens_per_step: float) -> float:
    """−B/log₂β: tokens after which a gradient's weight in the EMA has halved."""
    return -tokens_per_step / math.log2(beta)


def adamw_timescale(lr: float, weight_decay: float) -> float:
    """τ_iter = 1/(η·λ) steps (Wang & Aitchison 2024)."""
    return 1 / (lr * weight_decay)


def weight_decay_constant_timescale(weight_decay: float, lr: float, target_lr: float, tokens_per_step: float,
                                    target_tokens_per_step: float, run_tokens: float | None = None,
                                    target_run_tokens: float | None = None) -> float:
    """λ' with the AdamW timescale kept: in tokens, λ' = λ·(η/η')·(B'/B); as a fraction of the run
    (both run lengths given), λ' = λ·(η/η')·(B'/B)·(D/D')."""
    scaled = weight_decay * (lr / target_lr) * (target_tokens_per_step / tokens_per_step)
    if run_tokens is not None and target_run_tokens is not None:
        scaled *= run_tokens / target_run_tokens
    return scaled


def warmup_fraction_steps(fraction: float, target_steps: int) -> int:
    """Warmup kept as a fraction f of the run: round(f·S') steps."""
    return round(fraction * target_steps)


def warmup_tokens_steps(warmup_steps: int, tokens_per_step: float, target_tokens_per_step: float) -> int:
    """Warmup kept as W = w·B tokens: ⌈W/B'⌉ steps."""
    return math.ceil(warmup_steps * tokens_per_step / target_tokens_per_step)
