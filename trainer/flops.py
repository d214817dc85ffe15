"""Model FLOPs per token and utilisation (MFU).

FLOPs per token = 6·N + 12·L·d·T (Kaplan et al. 2020; PaLM, Chowdhery et al. 2022, App. B):
N counts the parameters that take part in matrix multiplies (every parameter but embedding
lookups; a tied embedding counts, since the readout multiplies by it); 6 = 2 (multiply-add)
× 3 (forward + backward); the attention term adds, per attention layer of width d over a
sequence of T tokens, the q·kᵀ and attention·v products. MFU = achieved FLOP/s ÷ device peak.
"""
from __future__ import annotations

import torch
from mup import MuReadout
from torch import nn

from proxies.gpt import CausalSelfAttention

# Dense bf16/fp16 tensor-core peaks (vendor datasheets), by a substring of the device name.
PEAK_FLOPS = {"H200": 989e12, "H100 PCIe": 756e12, "H100": 989e12, "A100": 312e12, "L40S": 362e12, "A10G": 125e12,
              "L4": 121e12,
              "V100": 125e12, "4090": 165e12, "3090": 71e12}


def flops_per_token(model: nn.Module, seq_len: int) -> float:
    lookups = {id(m.weight) for m in model.modules() if isinstance(m, nn.Embedding)}
    readouts = {id(m.weight) for m in model.modules() if isinstance(m, MuReadout)}
    n_matmul = sum(p.numel() for p in model.parameters() if id(p) not in lookups or id(p) in readouts)
    attention = sum(12 * m.n_head * m.head_dim * seq_len for m in model.modules() if isinstance(m, CausalSelfAttention))
    return 6 * n_matmul + attention


def peak_flops(device: torch.device) -> float | None:
    """The device's peak FLOP/s for bf16 matmuls, or None where unknown (CPUs)."""
    if device.type != "cuda":
        return None
    name = torch.cuda.get_device_name(device)
    return next((peak for key, peak in PEAK_FLOPS.items() if key in name), None)
