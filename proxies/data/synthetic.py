"""Synthetic classification data: Gaussian vectors or smooth random images labelled by a
fixed random teacher network, so the task is learnable."""

import torch
import torch.nn.functional as F

from proxies.data.base import check_split

N_VAL = 2048  # size of the fixed validation set
TEACHER_WIDTH = 64


class Teacher:
    """A random two-layer tanh network whose argmax output is the label of an input."""

    def __init__(self, in_features: int, classes: int, generator: torch.Generator):
        self.w1 = torch.randn(in_features, TEACHER_WIDTH, generator=generator) / in_features**0.5
        self.w2 = torch.randn(TEACHER_WIDTH, classes, generator=generator)

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        """Labels (int64, shape (B,)) for a batch of inputs, flattened to (B, in_features)."""
        return (torch.tanh(x.flatten(1) @ self.w1) @ self.w2).argmax(dim=1)


class SyntheticClassification:
    """A teacher and a fixed val set of N_VAL examples made from seed, and an infinite train
    stream drawn from the caller's generator. Subclasses set their shape, then call this
    __init__, and define inputs()."""

    tokens_per_example = 1

    def __init__(self, in_features: int, classes: int, seed: int):
        generator = torch.Generator().manual_seed(seed)
        self.classes = classes
        self.teacher = Teacher(in_features, classes, generator)
        self.val_x = self.inputs(N_VAL, generator)
        self.val_y = self.teacher(self.val_x)

    def inputs(self, n: int, generator: torch.Generator) -> torch.Tensor:
        """n random inputs (float32) drawn from generator."""
        raise NotImplementedError

    def batch(self, split: str, batch_size: int, generator: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
        """Return (x float32, y int64 of shape (batch_size,)). train: fresh inputs from generator,
        labelled by the teacher; val: examples of the fixed val set at indices drawn from generator."""
        check_split(split)
        if split == "val":
            idx = torch.randint(N_VAL, (batch_size,), generator=generator)
            return self.val_x[idx], self.val_y[idx]
        x = self.inputs(batch_size, generator)
        return x, self.teacher(x)


class SyntheticVectors(SyntheticClassification):
    """Standard Gaussian vectors of in_features, labelled into `classes` by a random teacher."""

    kind = "synthetic-vectors"

    def __init__(self, in_features: int = 32, classes: int = 10, seed: int = 0):
        self.in_features = in_features
        super().__init__(in_features, classes, seed)
        self.provenance = {"kind": self.kind, "seed": seed, "in_features": in_features, "classes": classes,
                           "n_train": None, "n_val": N_VAL, "dtype": "float32"}

    def inputs(self, n: int, generator: torch.Generator) -> torch.Tensor:
        """n Gaussian vectors, shape (n, in_features)."""
        return torch.randn(n, self.in_features, generator=generator)

    def model_options(self) -> dict:
        """The builder options this data implies: in_features and classes."""
        return {"in_features": self.in_features, "classes": self.classes}


class SyntheticImages(SyntheticClassification):
    """Smooth random images (B, channels, size, size): white noise blurred by a 3x3 box and
    rescaled to about unit variance, labelled into `classes` by a random teacher."""

    kind = "synthetic-images"

    def __init__(self, channels: int = 3, size: int = 16, classes: int = 10, seed: int = 0):
        self.channels, self.size = channels, size
        super().__init__(channels * size * size, classes, seed)
        self.provenance = {"kind": self.kind, "seed": seed, "channels": channels, "size": size, "classes": classes,
                           "n_train": None, "n_val": N_VAL, "dtype": "float32"}

    def inputs(self, n: int, generator: torch.Generator) -> torch.Tensor:
        """n smooth random images, shape (n, channels, size, size)."""
        noise = torch.randn(n, self.channels, self.size, self.size, generator=generator)
        return 3 * F.avg_pool2d(noise, 3, stride=1, padding=1)

    def model_options(self) -> dict:
        """The builder options this data implies: in_channels and classes."""
        return {"in_channels": self.channels, "classes": self.classes}
