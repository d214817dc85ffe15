"""The llama of the zoo: μP by the coordinate check (SP fails it), grouped-query attention and rotary positions
right, one-line errors for bad head options, compiles, trains through the trainer. Its planted bug: tests/mutations."""
import math

import pytest
import torch
import torch.nn.functional as F

from proxies.data import open_data
from proxies.llama import rotary_tables, rotate
from proxies.registry import ModelError, build_model
from sweep.coords.check import coord_check  # the coordinate check's Python API
from trainer.config import RunConfig
from trainer.curves import read_curves
from trainer.loop import train

DATA = open_data("synthetic-tokens", seq_len=32, n_tokens=20000)


def llama_coord_check(parametrization: str, **options):
    def make(width):
        return build_model("llama", width, 2, parametrization, **DATA.model_options(), **options)
    batch = DATA.batch("train", 4, torch.Generator().manual_seed(0))  # 4 × 32 tokens, the gpt's default
    return coord_check(make, lambda seed: batch, [64, 128, 256], 1, 8, lr=2 ** -7)[2]


def test_coord_check_passes_in_mup_and_fails_in_sp():
    """Grouped-query attention (2 query heads per key/value head), head dim fixed: μP keeps every coordinate Θ(1);
    SP's readout and hidden updates grow with width (TP5 Figure 1)."""
    mup = llama_coord_check("mup", q_per_kv=2)
    assert mup.passed, mup.table
    attention = set(mup.table.loc[mup.table["kind"] == "attention", "module"])
    assert attention == {"blocks.0.attn.logits", "blocks.1.attn.logits"}
    sp = llama_coord_check("sp", q_per_kv=2)
    assert not sp.passed
    assert "logits" in set(sp.table.loc[~sp.table["passed"], "module"])


def test_grouped_query_attention_fast_path_equals_explicit_path():
    """SDPA with enable_gqa against the explicit path the coordinate check watches: catches a key/value head shared
    by the wrong query heads (repeat vs repeat_interleave)."""
    torch.manual_seed(0)
    model = build_model("llama", 128, 1, "mup", zero_query=False, n_head=8, n_kv_head=2, **DATA.model_options())
    x = DATA.batch("train", 2, torch.Generator().manual_seed(0))[0]
    with torch.no_grad():
        fast = model(x)
        handle = model.blocks[0].attn.logits.register_forward_hook(lambda *args: None)  # forces the explicit path
        explicit = model(x)
        handle.remove()
    torch.testing.assert_close(fast, explicit, rtol=1e-5, atol=1e-5)


def test_rotary_logits_depend_only_on_relative_position():
    """RoPE: q at position m against k at position n gives the same logit for every (m, n) with the same m − n,
    and keeps the norms (so the μP 1/d_head law is unchanged)."""
    cos, sin = rotary_tables(16, 8, 10000.0)
    q, k = torch.randn(8), torch.randn(8)
    qs, ks = rotate(q.expand(16, 8), cos, sin), rotate(k.expand(16, 8), cos, sin)
    assert torch.allclose(qs[5] @ ks[2], qs[13] @ ks[10], atol=1e-5)
    assert torch.allclose(qs.norm(dim=-1), q.norm().expand(16), atol=1e-5)


@pytest.mark.parametrize("options,field", [({"n_kv_head": 2}, "n_kv_head"),
                                           ({"n_head": 8, "n_kv_head": 3}, "n_kv_head"),
                                           ({"q_per_kv": 3}, "q_per_kv"), ({"mlp_ratio": 8 / 3}, "mlp_ratio"),
                                           ({"head_dim": 24}, "model.width")])
def test_bad_head_options_are_one_line_naming_the_field(options, field):
    with pytest.raises(ModelError) as err:
        build_model("llama", 128, 1, "mup", **options)
    assert field in str(err.value) and "\n" not in str(err.value)


def test_compiled_forward_and_backward_match_eager():
    """torch.compile (eager backend: dynamo's graph capture, fast on CPU) gives the eager loss and gradients."""
    torch.manual_seed(0)
    model = build_model("llama", 64, 1, "mup", zero_query=False, q_per_kv=2, **DATA.model_options())
    x, y = DATA.batch("train", 2, torch.Generator().manual_seed(0))

    def loss_and_grads(forward):
        model.zero_grad()
        loss = F.cross_entropy(forward(x).flatten(0, 1), y.flatten())
        loss.backward()
        return loss.detach(), [p.grad.clone() for p in model.parameters()]

    eager_loss, eager_grads = loss_and_grads(model)
    compiled_loss, compiled_grads = loss_and_grads(torch.compile(model, backend="eager", fullgraph=True))
    torch.testing.assert_close(compiled_loss, eager_loss)
    for a, b in zip(compiled_grads, eager_grads, strict=True):
        torch.testing.assert_close(a, b)


def test_trains_through_the_trainer(tmp_path):
    cfg = RunConfig.parse({
        "model": {"name": "llama", "width": 64, "depth": 1, "options": {"q_per_kv": 2}},
        "data": {"kind": "synthetic-tokens", "seq_len": 32, "options": {"n_tokens": 20000}},
        "batch_size": 4, "steps": 6, "log_every": 3, "eval": {"every": 6, "batches": 1, "noise_scale_batches": 0},
        "output": {"root": str(tmp_path), "study": "s", "run": "llama"}})
    result = train(cfg)
    assert result.status == "completed" and math.isfinite(result.val_loss)
    curve = read_curves(cfg.curves_root(), run=cfg.run_id())
    assert curve["train_loss"].notna().all() and curve["train_loss"].iloc[-1] < curve["train_loss"].iloc[0]


@pytest.mark.parametrize("model, option, value, allowed", [  # found by a hostile user: tracebacks, nan losses
    ("llama", "mlp_ratio", -2, "a finite number above 0"), ("llama", "mlp_ratio", 0, "a finite number above 0"),
    ("llama", "mlp_ratio", float("nan"), "a finite number above 0"), ("llama", "rope_theta", 0, "a finite number"),
    ("llama", "tie_embeddings", "maybe", "true or false"), ("gpt", "output_mult", -1.0, "a finite number above 0"),
    ("gpt", "qk_norm", "yes", "true or false"),
])
def test_a_bad_number_or_switch_option_is_one_line_naming_it(model, option, value, allowed):
    with pytest.raises(ValueError, match=f"^model.options.{option}: .* is not {allowed}"):
        build_model(model, 64, 1, **{option: value})
