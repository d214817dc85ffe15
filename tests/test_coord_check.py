"""The coordinate check: zoo models pass in μP and fail in SP; models that are not μP-ready are refused in one
line; user models work. Planted μP bugs: tests/mutations."""
import mup
import pandas as pd
import pytest
import torch
from mup import MuReadout
from torch import nn

from proxies import mup_builder
from proxies.gpt import GPT
from proxies.registry import ZOO, build_model
from sweep.coords import check as cc
from sweep.coords.ready import refuse_unless_mup_ready
from sweep.errors import InputError
from trainer.optim import build_optimizer

FAST = ["--seeds", "2"]


@pytest.mark.parametrize("model,optimizer", [("gpt", "sgd"), ("mlp", "adamw"), ("mlp", "sgd"), ("resnet", "adamw"),
                                             ("resnet", "sgd")])
def test_zoo_passes_in_mup(run_cli, tmp_path, model, optimizer):
    """Correct μP passes at the defaults, gpt in both attention regimes (gpt with AdamW: tests/mutations controls)."""
    code, out, _ = run_cli("coord-check", "--model", model, "--optimizer", optimizer, *FAST, "--out", tmp_path)
    assert code == 0, out
    assert "PASS" in out
    verdict = pd.read_parquet(tmp_path / "verdict.parquet")
    assert verdict["passed"].all()
    if model == "gpt":
        assert set(verdict["regime"]) == {"head-dim-fixed", "heads-fixed"}
        assert (verdict["kind"] == "attention").sum() == 2 * 2  # 2 layers × 2 regimes


@pytest.mark.parametrize("optimizer", ["lion", "adam_atan2", "schedulefree_adamw", "muon"])
def test_each_optimizer_passes_in_mup_and_fails_in_sp(run_cli, tmp_path, optimizer):
    """Each optimizer's μP table at its default LR (gpt and the planted bugs: tests/mutations; Muon narrower: its
    bf16 Newton–Schulz is slow on CPU)."""
    widths = ["--widths", "32,64,128"] if optimizer == "muon" else []
    args = ["coord-check", "--model", "mlp", "--optimizer", optimizer, *FAST, *widths]
    code, out, _ = run_cli(*args, "--out", tmp_path / "mup")
    assert code == 0 and "PASS" in out, out
    code, out, _ = run_cli(*args, "--parametrization", "sp", "--out", tmp_path / "sp")
    assert code == 1 and "FAIL" in out, out


def test_schedule_free_passes_the_gpt_with_heads_fixed_at_its_default_lr(run_cli, tmp_path):
    """At its former default LR 2^-6 Schedule-Free's attention logits grew +0.37 and +0.43 with the head dim
    (heads fixed): the narrow width's q·k ran ahead at a large step (+0.01 at 2^-7). Defaults, as a user runs it."""
    args = ["coord-check", "--model", "gpt", "--optimizer", "schedulefree_adamw", "--opt", "n_head=4"]
    code, out, _ = run_cli(*args, "--out", tmp_path / "mup")
    assert code == 0 and "PASS" in out, out


@pytest.mark.parametrize("model,extra", [("gpt", ["--opt", "head_dim=16", "--steps", "4"]), ("mlp", []),
                                         ("resnet", ["--steps", "4"])])
def test_sp_fails_and_writes_sizes_updates_and_grid(run_cli, tmp_path, model, extra):
    """SP grows with width (logits and hidden updates, TP5 Figure 1): exit 1; Parquet keeps |x| and |Δx|."""
    code, out, _ = run_cli("coord-check", "--model", model, "--parametrization", "sp", *FAST, *extra, "--out", tmp_path)
    assert code == 1, out
    assert "FAIL" in out
    coords = pd.read_parquet(tmp_path / "coords.parquet")
    assert {"width", "seed", "step", "module", "kind", "size", "delta", "regime"} <= set(coords.columns)
    base = ZOO[model].base_width
    assert set(coords["width"]) == {base, 2 * base, 4 * base} and set(coords["seed"]) == {0, 1}
    assert (coords.loc[coords["step"] == 0, "delta"] == 0).all() and (coords.loc[coords["step"] > 0, "delta"] > 0).any()
    assert "logits" in set(coords["module"])
    verdict = pd.read_parquet(tmp_path / "verdict.parquet")
    assert not verdict["passed"].all()
    assert (verdict[["max_size_slope", "max_delta_slope"]].max(axis=1) > cc.GROW_BOUND).any()
    assert (tmp_path / "coord_check.png").read_bytes()[:4] == b"\x89PNG"


def synthetic_verdict(slopes: dict[str, list[tuple[float, float]]]) -> cc.Verdict:
    """Verdict on hand-made slopes: {module: [(size slope, delta slope) per step]}."""
    rows = [{"module": module, "kind": "activation", "step": t, "size_slope": s, "delta_slope": d}
            for module, per_step in slopes.items() for t, (s, d) in enumerate(per_step)]
    return cc.verdict(pd.DataFrame(rows))


def test_verdict_rules():
    """Growth of sizes or updates fails; an update shrinking at every step fails; shrinking sizes
    (μP's 1/√m logits at t = 0) and an update that lags at early steps only pass."""
    nan = float("nan")
    v = synthetic_verdict({
        "flat": [(0.1, nan), (0.1, 0.2), (0.0, 0.1)],
        "logits_at_init_shrink": [(-0.5, nan), (-0.3, -0.1), (-0.1, 0.0)],
        "lagging_attention": [(nan, nan), (-0.6, -0.6), (-0.1, -0.1)],
        "size_grows": [(0.5, nan), (0.2, 0.2), (0.1, 0.1)],
        "update_grows": [(0.0, nan), (0.1, 0.6), (0.1, 0.2)],
        "update_vanishes": [(0.0, nan), (0.0, -0.9), (0.0, -0.8)],
    })
    failed = dict(zip(v.table["module"], v.table["why"], strict=True))
    assert {m for m, why in failed.items() if why} == {"size_grows", "update_grows", "update_vanishes"}
    assert failed["update_vanishes"] == "update vanishes" and failed["update_grows"] == "update grows"
    assert not v.passed


def plain_readout_gpt(width, depth, parametrization="mup", **options):
    model = GPT(width, depth, parametrization, **options)
    model.lm_head = nn.Linear(width, model.lm_head.out_features, bias=False)
    return model


plain_readout_builder = mup_builder(base_width=64)(plain_readout_gpt)


def test_plain_linear_readout_is_refused_in_one_line(run_cli, tmp_path):
    """A plain nn.Linear readout (logits not × 1/m, TP5 Table 3) is refused up front, naming the module."""
    code, _, err = run_cli("coord-check", "--model", f"{__name__}:plain_readout_builder", "--data", "stdlib",
                           "--out", tmp_path / "out")
    assert code == 2
    assert err.count("\n") == 1 and "lm_head is a plain nn.Linear readout" in err and "MuReadout" in err, err
    assert not (tmp_path / "out").exists()


def test_model_without_base_shapes_is_refused_in_one_line(run_cli, tmp_path):
    code, _, err = run_cli("coord-check", "--model", f"{__name__}:plain_readout_gpt", "--out", tmp_path / "out")
    assert code == 2
    assert err.count("\n") == 1 and "base_width" in err and "mup_builder" in err, err
    assert not (tmp_path / "out").exists()


def test_optimizer_that_is_not_width_aware_is_refused():
    """Plain AdamW on a μP model: every group at one LR, hidden matrices not at lr/m."""
    model = build_model("gpt", 256, 2, "mup", vocab_size=256, block_size=32)
    with pytest.raises(InputError,
                       match=r"^optimizer: blocks\.0\.attn\.query\.weight \(hidden\) has lr 0\.01; μP needs 0\.0025"):
        refuse_unless_mup_ready(model, torch.optim.AdamW(model.parameters(), lr=0.01), "adamw")
    refuse_unless_mup_ready(model, build_optimizer(model, name="adamw", lr=0.01), "adamw")
    refuse_unless_mup_ready(model, mup.MuAdamW(model.parameters(), lr=0.01), "adamw")
    refuse_unless_mup_ready(model, mup.MuSGD(model.parameters(), lr=0.01), "sgd")


class UserNet(nn.Module):
    """A model defined only here, to check that users can bring their own."""

    def __init__(self, width, depth, in_features=32, classes=10):
        super().__init__()
        self.embed = nn.Linear(in_features, width)
        self.body = nn.Sequential(*[nn.Sequential(nn.Linear(width, width), nn.Tanh()) for _ in range(depth)])
        self.head = MuReadout(width, classes)
        for layer in [self.embed, *[s[0] for s in self.body]]:
            nn.init.normal_(layer.weight, std=layer.in_features ** -0.5)

    def forward(self, x):
        return self.head(self.body(torch.tanh(self.embed(x))))


@mup_builder(base_width=32)
def user_net(width, depth, parametrization="mup", **options):
    return UserNet(width, depth, **options)


def test_user_model_by_import_path(run_cli, tmp_path):
    name = f"{__name__}:user_net"
    code, out, _ = run_cli("inspect", name, "--width", "128", "--depth", "2")
    assert code == 0
    assert "body.0.0.weight" in out and "0.25" in out  # hidden Adam LR ×1/4 at 4× base width
    args = ["coord-check", "--model", name, "--data", "synthetic-vectors", *FAST]
    assert run_cli(*args, "--out", tmp_path / "mup")[0] == 0
    assert run_cli(*args, "--parametrization", "sp", "--out", tmp_path / "sp")[0] == 1


@pytest.mark.parametrize("args,field", [
    (["--data", "text", "--data-path", "/nonexistent/corpus.txt"], "data.path"),
    (["--widths", "64"], "--widths"),
    (["--parametrization", "ntk"], "--parametrization"),
    (["--optimizer", "adagrad"], "--optimizer"),
    (["--model", "nosuchmodel"], "model.name"),
    (["--opt", "norm=batchnorm"], "norm"),
    (["--steps", "zero"], "--steps"),
    (["--bogus"], "--bogus"),
])
def test_bad_input_is_one_line_exit_2_nothing_written(run_cli, tmp_path, args, field):
    out_dir = tmp_path / "out"
    code, out, err = run_cli("coord-check", *args, "--out", out_dir)
    assert code == 2
    assert err.count("\n") == 1 and field in err, err
    assert not out_dir.exists()


def test_bad_bin_file_is_one_line_exit_2(run_cli, tmp_path):
    bad = tmp_path / "tokens.bin"
    bad.write_bytes(b"\0" * 1001)
    code, _, err = run_cli("coord-check", "--data", "tokens", "--data-path", bad, "--out", tmp_path / "out")
    assert code == 2 and err.count("\n") == 1 and "data.path" in err and "multiple" in err
    assert not (tmp_path / "out").exists()
