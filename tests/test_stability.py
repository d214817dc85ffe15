"""Stability options: qk-layernorm and z-loss (Wortsman et al. 2023; PaLM), in μP, at a learning rate where
the plain proxy's attention logits blow up."""
import pytest
import torch
import torch.nn.functional as F

from proxies.data import open_data
from proxies.registry import build_model
from sweep.coords import DEFAULT_BATCH, DEFAULT_STEPS
from sweep.coords import check as cc
from sweep.coords.check import DEFAULT_LR
from trainer.config import RunConfig
from trainer.curves import read_curves
from trainer.evaluate import objective
from trainer.loop import train


def run(tmp_path, name, **changes):
    """The regime: gpt width 64 (the base width), depth 2, byte-level stdlib text, seq 64, batch 16, AdamW at
    constant lr 2^-5 (twice the μP optimum measured for this regime), no weight decay, 60 steps."""
    cfg = RunConfig.parse({
        "model": {"name": "gpt", "width": 64, "depth": 2, **changes.pop("model", {})},
        "data": {"kind": "stdlib", "seq_len": 64}, "optimizer": {"lr": 2 ** -5},
        "schedule": {"kind": "constant", "warmup_steps": 5}, "batch_size": 16, "steps": 60, "log_every": 10,
        "signals": {"every": 10}, "eval": {"every": 60, "batches": 2, "noise_scale_batches": 0},
        "output": {"root": str(tmp_path), "study": "s", "run": name}, **changes})
    assert train(cfg).status == "completed"
    c = read_curves(cfg.curves_root(), run=name).set_index("step")
    attention = c[[k for k in c.columns if k.startswith("attn_logit_max.")]].max(axis=1)
    return c, attention


def test_qk_norm_keeps_attention_logits_bounded_where_plain_ones_blow_up(tmp_path):
    plain, plain_att = run(tmp_path, "plain")
    qk, qk_att = run(tmp_path, "qk", model={"options": {"qk_norm": True}})
    assert plain_att.max() > 200  # attention-logit growth (Wortsman et al. 2023, §3.1.1) in 60 steps
    assert plain_att[60] > plain_att[20] * 1.5  # and still growing
    assert qk_att.max() < 20
    # and no worse for it (2.96 vs 2.98 here; 2.49 vs 2.79 at 300 steps)
    assert qk["val_loss"][60] <= plain["val_loss"][60] + 0.05


@pytest.mark.parametrize("options", [{}, {"n_head": 4}])
def test_qk_norm_gpt_is_in_mup(options):
    """The coordinate check passes with qk_norm, with the head dim fixed and with the heads fixed (d_head grows)."""
    source = open_data("stdlib", seq_len=32)

    def batch(seed):
        return source.batch("train", DEFAULT_BATCH["gpt"], torch.Generator().manual_seed(seed))

    def make(width):
        return build_model("gpt", width, 2, "mup", vocab_size=256, block_size=32, qk_norm=True, **options)

    _, _, verdict = cc.coord_check(make, batch, [64, 128, 256], seeds=2, steps=DEFAULT_STEPS, lr=DEFAULT_LR["adamw"])
    assert verdict.passed, verdict.table
    assert {"blocks.0.attn.q_norm", "blocks.0.attn.k_norm"} <= set(verdict.table["module"])


def test_z_loss_is_cross_entropy_plus_z_times_mean_log_z_squared():
    torch.manual_seed(0)
    model = build_model("gpt", 64, 1, "mup", vocab_size=32, block_size=8, zero_readout=False)
    x, y = torch.randint(0, 32, (2, 8)), torch.randint(0, 32, (2, 8))
    logits = model(x).flatten(0, 1)
    expected = F.cross_entropy(logits, y.flatten()) + 1e-4 * (logits.exp().sum(-1).log() ** 2).mean()
    assert objective(model, x, y, 1e-4).item() == pytest.approx(expected.item(), rel=1e-6)
    assert torch.equal(objective(model, x, y, 0.0), F.cross_entropy(logits, y.flatten()))


def test_z_loss_pulls_log_z_towards_zero(tmp_path):
    """The z-loss quantity mean log Z (logged as logit_lse_mean) sits near ln(256) ≈ 5.5 in the plain run; a z-loss
    drives it down. The coefficient is 1e-2 here, not PaLM's 1e-4, so that 60 steps show it."""
    plain, _ = run(tmp_path, "plain")
    z, _ = run(tmp_path, "z", z_loss=1e-2)
    assert plain["logit_lse_mean"][60] > 4
    assert z["logit_lse_mean"][60] < 0.5 * plain["logit_lse_mean"][60]
