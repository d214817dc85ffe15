"""Model FLOPs per token and utilisation (MFU).

FLOPs per token = 6·N + 12·L·d·T (Kaplan et al. 2020; PaLM, Chowdhery et al. 2022, App. B):
N counts the parameters that take part in matrix multiplies (every parameter but embedding
lookups; a tied embedding counts, since the readout multiplies by it); 6 = 2 (multiply-add)
× 3 (forward + backward); the attention term adds, per attention layer of width d over a
sequence of T tokens, the q·kᵀ and attention·v products. A convolution's weights are used once
per output position, not once per example: it counts 6 · (C_in/groups · k_h · k_w) · C_out per
output position, its positions read off a forward of one example (a "token" of an image model is
the image). MFU = achieved FLOP/s ÷ the device's peak at the run's precision.
"""
from __future__ import annotations

import math

import torch
from mup import MuReadout
from torch import nn

from proxies.gpt import CausalSelfAttention
from proxies.llama import GroupedQueryAttention

# Dense (no sparsity) tensor-core peaks from the vendor datasheets, by exact `torch.cuda.get_device_name` and the
# run's autocast dtype; fp32 (None) runs matmuls as TF32 on CUDA (trainer.runtime turns it on). A device or
# precision not listed has no MFU rather than a guessed one.
BF16, FP16, TF32 = torch.bfloat16, torch.float16, None
HOPPER_SXM = {BF16: 989e12, FP16: 989e12, TF32: 494.5e12}
A100 = {BF16: 312e12, FP16: 312e12, TF32: 156e12}
PEAK_FLOPS = {
    "NVIDIA H200": HOPPER_SXM,
    "NVIDIA H100 80GB HBM3": HOPPER_SXM,
    "NVIDIA H100 NVL": {BF16: 835e12, FP16: 835e12, TF32: 417.5e12},
    "NVIDIA H100 PCIe": {BF16: 756e12, FP16: 756e12, TF32: 378e12},
    "NVIDIA A100-SXM4-80GB": A100, "NVIDIA A100-SXM4-40GB": A100,
    "NVIDIA A100-PCIE-40GB": A100, "NVIDIA A100 80GB PCIe": A100,
    "NVIDIA L40S": {BF16: 362e12, FP16: 362e12, TF32: 183e12},
    "NVIDIA L40": {BF16: 181e12, FP16: 181e12, TF32: 90.5e12},
    "NVIDIA L4": {BF16: 121e12, FP16: 121e12, TF32: 60e12},
    "NVIDIA A10": {BF16: 125e12, FP16: 125e12, TF32: 62.5e12},
    "Tesla V100-SXM2-16GB": {FP16: 125e12}, "Tesla V100-SXM2-32GB": {FP16: 125e12},  # no bf16 or TF32 tensor cores
}
ATTENTION = (CausalSelfAttention, GroupedQueryAttention)


def conv_flops(model: nn.Module, example: torch.Tensor) -> float:
    """Forward + backward FLOPs of the model's convolutions on one example (no batch dim), from their output sizes."""
    flops = 0.0

    def count(conv, inputs, output):
        nonlocal flops
        flops += 6 * conv.weight[0].numel() * output[0].numel()  # (C_in/groups·k_h·k_w) · (C_out·positions)

    convs = [m for m in model.modules() if isinstance(m, nn.modules.conv._ConvNd)]
    handles = [m.register_forward_hook(count) for m in convs]
    training = model.training
    try:
        model.eval()  # batch norm keeps its running statistics
        with torch.no_grad():
            model(example.unsqueeze(0))
    finally:
        model.train(training)
        for h in handles:
            h.remove()
    return flops


def flops_per_token(model: nn.Module, seq_len: int, example: torch.Tensor | None = None) -> float:
    """FLOPs per token; a model with convolutions needs `example` (one input) and is NaN (unknown) without it."""
    lookups = {id(m.weight) for m in model.modules() if isinstance(m, nn.Embedding)}
    readouts = {id(m.weight) for m in model.modules() if isinstance(m, MuReadout)}
    convs = {id(m.weight) for m in model.modules() if isinstance(m, nn.modules.conv._ConvNd)}
    n_matmul = sum(p.numel() for p in model.parameters()
                   if (id(p) not in lookups or id(p) in readouts) and id(p) not in convs)
    attention = sum(12 * m.n_head * m.head_dim * seq_len for m in model.modules() if isinstance(m, ATTENTION))
    if not convs:
        return 6 * n_matmul + attention
    return 6 * n_matmul + attention + conv_flops(model, example) if example is not None else math.nan


def peak_flops(device: torch.device, dtype: torch.dtype | None = BF16) -> float | None:
    """The device's dense matmul peak FLOP/s at the run's autocast dtype (None: fp32, as TF32), or None where unknown
    (CPUs, devices or precisions not in the table)."""
    if device.type != "cuda":
        return None
    return PEAK_FLOPS.get(torch.cuda.get_device_name(device), {}).get(dtype)
