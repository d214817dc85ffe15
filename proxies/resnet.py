"""A small ResNet for images: conv stem → `depth` residual blocks at `width` channels → pool → μP readout.

μP roles (Tensor Programs V, Table 3; convolutions are matrices over channels, the kernel window
counts in the fan-in): the stem has a fixed fan-in (image channels), so its init and Adam LR do not
scale; block convolutions are hidden (He init ∝ 1/√fan_in, Adam LR lr/m); BatchNorm gains and biases
are vector-like; the readout is `MuReadout`. No downsampling: the proxy stays small and every block
has the same width.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F
from mup import MuReadout
from torch import nn

from proxies.base_shapes import mup_builder

BASE_WIDTH = 16


def conv3x3(c_in: int, c_out: int) -> nn.Conv2d:
    conv = nn.Conv2d(c_in, c_out, kernel_size=3, padding=1, bias=False)
    nn.init.kaiming_normal_(conv.weight, nonlinearity="relu")
    return conv


class BasicBlock(nn.Module):
    def __init__(self, width: int):
        super().__init__()
        self.conv1, self.bn1 = conv3x3(width, width), nn.BatchNorm2d(width)
        self.conv2, self.bn2 = conv3x3(width, width), nn.BatchNorm2d(width)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = F.relu(self.bn1(self.conv1(x)))
        return F.relu(x + self.bn2(self.conv2(y)))


class ResNet(nn.Module):
    def __init__(self, width: int, depth: int, *, in_channels: int = 3, classes: int = 10,
                 zero_readout: bool = False, output_mult: float = 1.0):
        super().__init__()
        self.stem, self.bn = conv3x3(in_channels, width), nn.BatchNorm2d(width)
        self.blocks = nn.ModuleList(BasicBlock(width) for _ in range(depth))
        self.readout = MuReadout(width, classes, readout_zero_init=zero_readout, output_mult=output_mult)
        nn.init.zeros_(self.readout.bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = F.relu(self.bn(self.stem(x)))
        for block in self.blocks:
            x = block(x)
        return self.readout(x.mean(dim=(2, 3)))


@mup_builder(base_width=BASE_WIDTH)
def resnet(width: int, depth: int, parametrization: str = "mup", **options) -> ResNet:
    """ResNet builder: `resnet(width, depth, parametrization, in_channels=, classes=, ...)`."""
    return ResNet(width, depth, **options)
