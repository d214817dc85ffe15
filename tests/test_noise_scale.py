"""Tests for trainer.noise_scale: the two-batch estimator, a problem with known noise, p.grad, averaging."""

import pytest
import torch

from trainer.noise_scale import NoiseScale, measure, two_batch_estimates


def test_two_batch_estimates_by_hand():
    # |G|² = 2, tr Σ = 8: E|G_b|² = 2 + 8/b gives |G_2|² = 6 and |G_8|² = 3.
    tr_sigma, g_sq = two_batch_estimates(6.0, 3.0, 2, 8)
    assert g_sq == pytest.approx((8 * 3 - 2 * 6) / (8 - 2)) == pytest.approx(2.0)
    assert tr_sigma == pytest.approx((6 - 3) / (1 / 2 - 1 / 8)) == pytest.approx(8.0)


def test_two_batch_estimates_rejects_unordered_batch_sizes():
    with pytest.raises(ValueError, match="b_small < b_big"):
        two_batch_estimates(1.0, 1.0, 4, 4)


def test_measure_recovers_a_known_noise_scale():
    # loss_i(w) = ½‖w − x_i‖², x_i ~ N(μ, σ²I): per-example gradients w − x_i have G = w − μ and
    # tr Σ = dσ², so B_simple = dσ² / ‖w − μ‖² = 64 / 4 = 16 examples.
    d, sigma, b, n_small = 64, 1.0, 4, 32
    g = torch.Generator().manual_seed(0)
    mu = torch.randn(d, generator=g)
    delta = torch.randn(d, generator=g)
    w = torch.nn.Parameter(mu + 2.0 * delta / delta.norm())
    noise = NoiseScale()
    for _ in range(4):
        x = mu + sigma * torch.randn(n_small, b, d, generator=g)
        noise.update(*measure([w], lambda i, x=x: 0.5 * (w - x[i]).pow(2).sum(-1).mean(), n_small, b))
    assert noise.value == pytest.approx(d * sigma**2 / 4.0, rel=0.2)
    assert noise.tr_sigma == pytest.approx(d * sigma**2, rel=0.2)  # per example, not per small batch


def test_measure_leaves_accumulated_grads_untouched():
    model = torch.nn.Linear(3, 2)
    sentinels = [torch.full_like(p, 7.0) for p in model.parameters()]
    for p, s in zip(model.parameters(), sentinels, strict=True):
        p.grad = s.clone()
    x = torch.randn(4, 2, 3, generator=torch.Generator().manual_seed(0))
    measure(list(model.parameters()), lambda i: model(x[i]).pow(2).mean(), n_small=4, b=2)
    for p, s in zip(model.parameters(), sentinels, strict=True):
        assert torch.equal(p.grad, s)


def test_value_is_the_ratio_of_means_not_the_mean_of_ratios():
    noise = NoiseScale()
    noise.update(tr_sigma=4.0, g_sq=-1.0)  # a noisy |G|² estimate can be negative
    noise.update(tr_sigma=6.0, g_sq=3.0)
    assert noise.value == pytest.approx(5.0 / 1.0)  # mean of ratios would be (−4 + 2) / 2 = −1
    noise = NoiseScale()
    noise.update(tr_sigma=10.0, g_sq=0.1)
    noise.update(tr_sigma=10.0, g_sq=10.0)
    assert noise.value == pytest.approx(10.0 / 5.05)  # mean of ratios would be 50.5


def test_value_is_none_until_defined():
    noise = NoiseScale()
    assert noise.value is None
    noise.update(tr_sigma=1.0, g_sq=-2.0)
    assert noise.value is None


def test_state_dict_is_plain_numbers_and_round_trips():
    noise = NoiseScale()
    noise.update(3.0, 1.0)
    noise.update(5.0, 2.0)
    state = noise.state_dict()
    assert all(type(v) in (int, float) for v in state.values())
    restored = NoiseScale()
    restored.load_state_dict(state)
    restored.update(7.0, 3.0)
    noise.update(7.0, 3.0)
    assert restored.state_dict() == noise.state_dict() and restored.value == pytest.approx(15 / 6)
