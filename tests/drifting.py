"""A μP model with a deliberate bug for verify's tests: each hidden layer's output is multiplied by
m = width / base width, so an Adam update moves it m× more as width grows and the optimal LR falls
one octave per doubling (the optimum follows width, as under SP)."""
import torch

from proxies.base_shapes import mup_builder
from proxies.mlp import MLP


class DriftingMLP(MLP):
    def __init__(self, width: int, depth: int, **options):
        super().__init__(width, depth, **options)
        self.mult = width / 64

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = torch.relu(self.input(x))
        for layer in self.hidden:
            x = torch.relu(layer(x) * self.mult)
        return self.readout(x)


@mup_builder(base_width=64)
def drifting_mlp(width: int, depth: int, parametrization: str = "mup", **options) -> DriftingMLP:
    return DriftingMLP(width, depth, **options)
