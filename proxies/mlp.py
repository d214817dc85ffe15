"""An MLP: input layer → `depth` hidden width×width layers → μP readout, ReLU between.

μP roles (Tensor Programs V, Table 3): the input layer has a fixed fan-in (its init and Adam LR
do not scale); hidden layers are N(0, 1/fan_in) with Adam LR lr/m (set by the optimizer's groups);
the readout is `MuReadout` (logits × output_mult/m). Biases start at zero.
"""
from __future__ import annotations

import torch
from mup import MuReadout
from torch import nn

from proxies.base_shapes import mup_builder

BASE_WIDTH = 64


class MLP(nn.Module):
    def __init__(self, width: int, depth: int, *, in_features: int = 32, classes: int = 10,
                 zero_readout: bool = False, output_mult: float = 1.0):
        super().__init__()
        self.input = nn.Linear(in_features, width)
        self.hidden = nn.ModuleList(nn.Linear(width, width) for _ in range(depth))
        self.readout = MuReadout(width, classes, readout_zero_init=zero_readout, output_mult=output_mult)
        nn.init.zeros_(self.readout.bias)
        for layer in [self.input, *self.hidden]:
            nn.init.normal_(layer.weight, std=layer.in_features ** -0.5)
            nn.init.zeros_(layer.bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = torch.relu(self.input(x))
        for layer in self.hidden:
            x = torch.relu(layer(x))
        return self.readout(x)


@mup_builder(base_width=BASE_WIDTH)
def mlp(width: int, depth: int, parametrization: str = "mup", **options) -> MLP:
    """MLP builder: `mlp(width, depth, parametrization, in_features=, classes=, ...)`."""
    return MLP(width, depth, **options)
