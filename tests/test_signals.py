"""Instability signals: the documented columns, measured right, and measuring never changes the run."""
import math

import pytest
import torch

from proxies.data import open_data
from proxies.registry import build_model
from trainer.config import RunConfig
from trainer.curves import read_curves
from trainer.loop import train
from trainer.optim import build_optimizer
from trainer.signals import Signals, group_name


def config(tmp_path, run, **changes):
    return RunConfig.parse({
        "model": {"name": "gpt", "width": 128, "depth": 2, "options": {"zero_query": False}},
        "data": {"kind": "synthetic-tokens", "seq_len": 32, "options": {"n_tokens": 20000}},
        "batch_size": 8, "grad_accum": 2, "steps": 6, "log_every": 3,
        "eval": {"every": 6, "batches": 1, "noise_scale_batches": 0},
        "output": {"root": str(tmp_path), "study": "s", "run": run}, **changes})


def curves(cfg):
    return read_curves(cfg.curves_root(), run=cfg.run_id()).set_index("step")


def test_signals_leave_the_curve_bit_identical_and_add_their_columns(tmp_path):
    """Catches hooks that change the forward (e.g. switching attention off the SDPA path) or stay registered."""
    off, on = config(tmp_path, "off"), config(tmp_path, "on", signals={"every": 2})
    train(off)
    train(on)
    a, b = curves(off), curves(on)
    assert a["train_loss"].equals(b.loc[a.index, "train_loss"]) and a["grad_norm"].equals(b.loc[a.index, "grad_norm"])
    assert list(b.index) == [1, 2, 3, 4, 6]  # signal steps add rows between log steps
    groups = ["lr1-nodecay", "lr1-decay", "lr0.5-decay"]
    expected = {f"grad_norm.{g}" for g in groups} | {f"update_ratio.{g}" for g in groups} \
        | {"act_max.blocks.0", "act_max.blocks.1", "attn_logit_max.blocks.0.attn", "attn_logit_max.blocks.1.attn",
           "logit_max", "logit_lse_mean"}
    signal_columns = {c for c in b.columns if "." in c or c.startswith("logit_")}
    assert signal_columns == expected
    assert b.loc[[2, 4, 6], sorted(expected)].notna().all().all() and b.loc[[1, 3], sorted(expected)].isna().all().all()
    # the per-group norms make up the logged global pre-clip norm
    for step in (2, 4, 6):
        total = math.sqrt(sum(b.loc[step, f"grad_norm.{g}"] ** 2 for g in groups))
        assert total == pytest.approx(b.loc[step, "grad_norm"], rel=1e-5)


def test_signals_measure_what_they_name():
    """At one step on a known model: block maxima, the attention-logit maximum over causal positions (against the
    explicit attention path), log Z, and ‖ΔW‖/‖W‖ from the weights before and after the update."""
    data = open_data("synthetic-tokens", seq_len=32, n_tokens=20000)
    x, y = data.batch("train", 4, torch.Generator().manual_seed(0))
    torch.manual_seed(0)
    model = build_model("gpt", 128, 2, "mup", zero_query=False, **data.model_options())
    optimizer = build_optimizer(model, lr=0.01)
    signals = Signals(model, optimizer, every=1)

    seen = {}
    hooks = [model.blocks[i].attn.logits.register_forward_hook(
        lambda m, i_, out, i=i: seen.__setitem__(i, out.masked_fill(~torch.ones(32, 32, dtype=torch.bool).tril(), -math.inf).max()))
        for i in range(2)]
    with torch.no_grad():
        reference_logits = model(x)
        block_out = []
        h = model.blocks[1].register_forward_hook(lambda m, i_, out: block_out.append(out.abs().max()))
        model(x)
        h.remove()
    for hook in hooks:
        hook.remove()
    before = {n: p.detach().clone() for n, p in model.named_parameters()}

    signals.attach()
    logits = model(x)
    signals.detach()
    assert not any(m._forward_hooks for m in model.modules())  # nothing left behind
    torch.nn.functional.cross_entropy(logits.flatten(0, 1), y.flatten()).backward()
    signals.after_unscale()
    optimizer.step()
    values = signals.after_step()

    assert values["attn_logit_max.blocks.0.attn"] == pytest.approx(seen[0].item(), rel=1e-5)
    assert values["attn_logit_max.blocks.1.attn"] == pytest.approx(seen[1].item(), rel=1e-5)
    assert values["act_max.blocks.1"] == pytest.approx(block_out[0].item(), rel=1e-6)
    assert values["logit_max"] == pytest.approx(reference_logits.abs().max().item(), rel=1e-6)
    assert values["logit_lse_mean"] == pytest.approx(torch.logsumexp(reference_logits, -1).mean().item(), rel=1e-6)
    for group in optimizer.param_groups:
        names = group["names"]
        delta = math.sqrt(sum((dict(model.named_parameters())[n].detach() - before[n]).square().sum().item() for n in names))
        weight = math.sqrt(sum(before[n].square().sum().item() for n in names))
        assert values[f"update_ratio.{group_name(group)}"] == pytest.approx(delta / weight, rel=1e-4)
