"""FLOPs per token and device peaks: exact device names, a peak per precision, convolutions counted per position."""
import math

import pytest
import torch

from proxies.registry import build_model
from trainer import flops
from trainer.flops import flops_per_token, peak_flops


@pytest.mark.parametrize("name,dtype,peak", [
    ("NVIDIA L40", torch.bfloat16, 181e12),  # not the L4 (a substring of it)
    ("NVIDIA L4", torch.bfloat16, 121e12),
    ("NVIDIA H100 NVL", torch.bfloat16, 835e12),  # not the SXM part
    ("NVIDIA H100 80GB HBM3", torch.bfloat16, 989e12),
    ("NVIDIA H100 80GB HBM3", None, 494.5e12),  # fp32 runs as TF32: half the bf16 peak
    ("Tesla V100-SXM2-16GB", torch.float16, 125e12),
    ("Tesla V100-SXM2-16GB", torch.bfloat16, None),  # no bf16 tensor cores
    ("NVIDIA Future GPU", torch.bfloat16, None),
])
def test_peak_is_looked_up_by_exact_name_and_precision(monkeypatch, name, dtype, peak):
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda device=None: name)
    assert peak_flops(torch.device("cuda", 0), dtype) == peak
    assert peak_flops(torch.device("cpu"), dtype) is None


def test_every_peak_is_per_precision():
    assert all(set(p) <= {torch.bfloat16, torch.float16, None} and p for p in flops.PEAK_FLOPS.values())


def test_convolutions_count_per_output_position_not_per_image():
    """6 · (C_in·k·k) · C_out per output position, ×(H·W) positions: 6N per image undercounts by H·W."""
    model = build_model("resnet", 16, 1, "mup", in_channels=3, classes=10)
    image = torch.randn(3, 8, 8)
    stem, body, readout = 6 * 3 * 9 * 16 * 64, 2 * 6 * 16 * 9 * 16 * 64, 6 * (16 * 10 + 10)
    norms = 6 * sum(p.numel() for name, p in model.named_parameters() if ".bn" in name or name.startswith("bn"))
    assert flops_per_token(model, 1, example=image) == stem + body + readout + norms
    assert model.training  # the counting forward left the model as it found it
    assert math.isnan(flops_per_token(model, 1))  # unknown without an example, never a wrong number


def test_transformer_flops_are_6n_plus_attention():
    model = build_model("llama", 64, 2, "mup", q_per_kv=2, vocab_size=256, block_size=32)
    n = sum(p.numel() for name, p in model.named_parameters() if name != "wte.weight")
    assert flops_per_token(model, 32) == 6 * n + 2 * 12 * 64 * 32
