"""Held-out loss and the gradient noise scale, measured without disturbing training."""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from proxies.data import DataSource
from trainer import noise_scale
from trainer.runtime import Runtime, mean_across


def loss_fn(model: nn.Module, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """Mean cross-entropy over every prediction (tokens for a language model, examples otherwise)."""
    logits = model(x)
    return F.cross_entropy(logits.flatten(0, -2).float(), y.flatten())


def objective(model: nn.Module, x: torch.Tensor, y: torch.Tensor, z_loss: float) -> torch.Tensor:
    """The training loss: cross-entropy + z_loss · mean(log² Z), Z = Σ exp(logits) per prediction.

    The z-loss keeps log Z near 0 so the output logits cannot drift off (PaLM, Chowdhery et al. 2022, §5,
    coefficient 1e-4; Wortsman et al. 2023, §3.1.2, output-logit divergence). Without it, plain cross-entropy.
    """
    if not z_loss:
        return loss_fn(model, x, y)
    logits = model(x).flatten(0, -2).float()
    return F.cross_entropy(logits, y.flatten()) + z_loss * torch.logsumexp(logits, dim=-1).square().mean()


def part(batch: tuple[torch.Tensor, ...], index: int, parts: int) -> tuple[torch.Tensor, ...]:
    """The `index`-th of `parts` equal slices of a batch along its first dimension (a rank's share, a micro-batch)."""
    size = batch[0].shape[0] // parts
    return tuple(t[index * size:(index + 1) * size] for t in batch)


def to_device(batch: tuple[torch.Tensor, torch.Tensor], runtime: Runtime) -> tuple[torch.Tensor, torch.Tensor]:
    if runtime.device.type == "cuda":
        return tuple(t.pin_memory().to(runtime.device, non_blocking=True) for t in batch)
    return batch


@torch.no_grad()
def evaluate(model: nn.Module, data: DataSource, runtime: Runtime, *, batches: int, batch_size: int, chunks: int,
             seed: int) -> float:
    """Mean val loss over the same `batches` held-out batches of `batch_size` examples every time.

    The held-out set depends on the config alone, not on the layout: each process takes its slice
    of every global batch and runs it in `chunks` pieces (the micro-batch size, for memory), and
    the means are averaged across processes. The train/eval mode is restored afterwards.
    """
    was_training = model.training
    model.eval()
    generator = torch.Generator().manual_seed(seed)
    total = torch.zeros((), device=runtime.device)
    try:
        for _ in range(batches):
            share = part(data.batch("val", batch_size, generator), runtime.rank, runtime.world)
            for i in range(chunks):
                xi, yi = to_device(part(share, i, chunks), runtime)
                with runtime.autocast():
                    total += loss_fn(model, xi, yi)
    finally:
        model.train(was_training)
    return mean_across(runtime, total).item() / (batches * chunks)


def measure_noise_scale(model: nn.Module, data: DataSource, runtime: Runtime, *, n_small: int, batch_size: int,
                        seed: int) -> tuple[float, float]:
    """(tr Σ per example, |G|²) from `n_small` fresh training batches drawn from their own generator.

    The training batch stream, p.grad and the optimizer are left untouched.
    """
    generator = torch.Generator().manual_seed(seed)
    batches = [to_device(data.batch("train", batch_size, generator), runtime) for _ in range(n_small)]
    params = [p for p in model.parameters() if p.requires_grad]

    def small_loss(i: int) -> torch.Tensor:
        with runtime.autocast():
            return loss_fn(model, *batches[i])

    return noise_scale.measure(params, small_loss, n_small, batch_size)
