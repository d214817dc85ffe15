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
from trainer.signals import Signals, attention_logit_max, group_name


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


@pytest.mark.parametrize("name,options", [("gpt", {}), ("llama", {"n_head": 8, "n_kv_head": 2})])
def test_signals_measure_what_they_name(name, options):
    """At one step on a known model: block maxima, the attention-logit maximum over causal positions (against the
    explicit attention path; grouped-query attention for llama), log Z, and ‖ΔW‖/‖W‖ from the weights before and
    after the update."""
    data = open_data("synthetic-tokens", seq_len=32, n_tokens=20000)
    x, y = data.batch("train", 4, torch.Generator().manual_seed(0))
    torch.manual_seed(0)
    model = build_model(name, 128, 2, "mup", zero_query=False, **data.model_options(), **options)
    optimizer = build_optimizer(model, lr=0.01)
    signals = Signals(model, optimizer, every=1)

    seen = {}
    hooks = [model.blocks[i].attn.logits.register_forward_hook(
        lambda m, i_, out, i=i: seen.__setitem__(
            i, out.masked_fill(~torch.ones(32, 32, dtype=torch.bool).tril(), -math.inf).max()))
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
        delta = math.sqrt(sum((dict(model.named_parameters())[n].detach() - before[n]).square().sum().item()
                              for n in names))
        weight = math.sqrt(sum(before[n].square().sum().item() for n in names))
        assert values[f"update_ratio.{group_name(group)}"] == pytest.approx(delta / weight, rel=1e-4)


def test_attention_logit_max_in_chunks_equals_the_whole_matrix():
    """Reduced a few query rows at a time (memory B·H·rows·T, not B·H·T·T), the maximum is the one over the whole
    causal logit matrix; keys shared by query heads as grouped-query attention shares them."""
    torch.manual_seed(0)
    q, k = torch.randn(2, 4, 9, 8), torch.randn(2, 2, 9, 8)
    k_full = k.repeat_interleave(2, dim=1)
    logits = (q @ k_full.transpose(-2, -1)) * 0.3
    causal = torch.ones(9, 9, dtype=torch.bool).tril()
    q[..., 0, :] *= 50  # the first query row holds the largest logits, but sees only key 0: the mask must hold
    whole = ((q @ k_full.transpose(-2, -1)) * 0.3).masked_fill(~causal, -math.inf).max()
    for chunk in (2 * 4 * 9 * 2, 2 * 4 * 9, 1, 10 ** 9):  # 2 rows, 1 row, below one row, everything at once
        assert attention_logit_max(q, k, 0.3, chunk_elements=chunk) == whole
    assert logits.masked_fill(~causal, -math.inf).max() != whole  # the planted row changed the answer


def test_signals_under_compile_see_hooks_attached_after_the_first_compiled_call():
    """torch.compile skips hook guards by default: hooks attached after the first compiled call never ran, and the
    activation and attention signals were missing. Measured and unmeasured steps each run their own graph."""
    torch.manual_seed(0)
    model = build_model("llama", 64, 1, "mup", zero_query=False, q_per_kv=2)
    x = torch.randint(0, 256, (2, 16))
    eager = Signals(model, build_optimizer(model, lr=0.01), every=1)
    eager.attach()
    model(x)
    eager.detach()
    with torch._dynamo.config.patch(skip_nnmodule_hook_guards=True):  # torch's default, whatever ran before
        signals = Signals(model, build_optimizer(model, lr=0.01), every=1)
        compiled = torch.compile(model, backend="eager")
        compiled(x)  # compiled without hooks
        signals.attach()
        compiled(x)
        signals.detach()
        measured = dict(signals.values)
        compiled(x)  # hooks gone: nothing measured
    assert signals.values == measured
    assert set(measured) == {"act_max.blocks.0", "attn_logit_max.blocks.0.attn", "logit_max", "logit_lse_mean"}
    for key, value in eager.values.items():
        assert measured[key].item() == pytest.approx(value.item(), rel=1e-6)


def test_gradient_norm_of_a_group_without_gradients_is_on_the_groups_device():
    """A zero made on the CPU for a group whose parameters got no gradient could not be stacked with CUDA norms."""
    with torch.device("meta"):
        model = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.Linear(4, 4))
    optimizer = torch.optim.SGD([{"params": model[0].parameters(), "lr_mult": 1.0, "weight_decay": 0.0},
                                 {"params": model[1].parameters(), "lr_mult": 0.5, "weight_decay": 0.1}], lr=0.1)
    signals = Signals(model, optimizer, every=1)
    signals.after_unscale()
    assert {v.device.type for v in signals.values.values()} == {"meta"}
