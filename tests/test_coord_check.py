"""The coordinate check: zoo models pass in μP and fail in SP; planted μP bugs fail; user models work."""
import mup
import pandas as pd
import pytest
import torch
from mup import MuReadout
from torch import nn

from proxies import mup_builder
from proxies.data import open_data
from proxies.gpt import CausalSelfAttention
from proxies.registry import build_model
from sweep import coord_check as cc

FAST = ["--steps", "4", "--seeds", "2", "--batch-size", "8", "--seq-len", "32"]
WIDTHS = {"gpt": "64,128,256", "mlp": "64,128,256,512", "resnet": "16,32,64"}


@pytest.mark.parametrize("model", ["gpt", "mlp", "resnet"])
def test_zoo_passes_in_mup_and_fails_in_sp(run_cli, tmp_path, model):
    code, out, _ = run_cli("coord-check", "--model", model, "--widths", WIDTHS[model], *FAST, "--out", tmp_path / "mup")
    assert code == 0, out
    assert "PASS" in out
    code, out, _ = run_cli("coord-check", "--model", model, "--parametrization", "sp", "--widths", WIDTHS[model], *FAST,
                           "--out", tmp_path / "sp")
    assert code == 1, out
    assert "FAIL" in out
    sizes = pd.read_parquet(tmp_path / "sp" / "sizes.parquet")
    assert {"width", "seed", "step", "module", "size"} <= set(sizes.columns)
    assert set(sizes["width"]) == {int(w) for w in WIDTHS[model].split(",")} and set(sizes["seed"]) == {0, 1}
    assert "logits" in set(sizes["module"])
    verdict = pd.read_parquet(tmp_path / "sp" / "verdict.parquet")
    assert not verdict["passed"].all() and (verdict["max_slope"] > cc.SLOPE_THRESHOLD).any()
    assert (tmp_path / "sp" / "coord_check.png").read_bytes()[:4] == b"\x89PNG"


def test_sgd_multipliers_pass_in_mup_and_fail_in_sp(run_cli, tmp_path):
    """μP for SGD (MuSGD's LR multipliers: ×m on vector-like, ×fan_out/fan_in on matrices) keeps coordinates flat."""
    args = ["coord-check", "--model", "mlp", "--optimizer", "sgd", "--widths", WIDTHS["mlp"], *FAST]
    assert run_cli(*args, "--out", tmp_path / "mup")[0] == 0
    assert run_cli(*args, "--parametrization", "sp", "--out", tmp_path / "sp")[0] == 1


def text_batches(steps, batch_size, seq_len):
    source = open_data("stdlib", seq_len=seq_len)

    def make(seed):
        g = torch.Generator().manual_seed(seed)
        return [source.batch("train", batch_size, g) for _ in range(steps)]

    return make


def gpt_factory(**options):
    return lambda width: build_model("gpt", width, 2, "mup", vocab_size=256, block_size=64, **options)


def test_plain_linear_readout_fails():
    """A readout without the 1/m multiplier: logits grow with width once training starts."""
    def make(width):
        def plain(w):
            model = gpt_factory()(w)
            model.lm_head = nn.Linear(w, 256, bias=False)
            return model
        model, base, delta = plain(width), plain(64), plain(128)
        return mup.set_base_shapes(model, base, delta=delta, do_assert=False, rescale_params=False)

    _, _, control = cc.coord_check(gpt_factory(), text_batches(5, 16, 64), [64, 128, 256], 2)
    _, _, verdict = cc.coord_check(make, text_batches(5, 16, 64), [64, 128, 256], 2)
    assert control.passed
    assert not verdict.passed
    failed = set(verdict.table.loc[~verdict.table["passed"], "module"])
    assert "logits" in failed


def test_sqrt_d_attention_fails():
    """1/√d_head attention in μP with a growing head dim: logits grow like √width once q and k align.

    Few tokens per step and 10 steps let the alignment show at proxy widths; the same settings pass
    the correct 1/d_head model.
    """
    def buggy(width):
        model = gpt_factory(n_head=4)(width)
        for module in model.modules():
            if isinstance(module, CausalSelfAttention):
                module.scale = module.head_dim ** -0.5
        return model

    batches = text_batches(10, 4, 32)
    _, _, control = cc.coord_check(gpt_factory(n_head=4), batches, [64, 128, 256, 512], 2, lr=2 ** -5)
    _, _, verdict = cc.coord_check(buggy, batches, [64, 128, 256, 512], 2, lr=2 ** -5)
    assert control.passed, control.table
    failed = set(verdict.table.loc[~verdict.table["passed"], "module"])
    assert any(m.endswith("attn.logits") for m in failed), verdict.table


def test_unscaled_hidden_lr_fails(monkeypatch):
    """Plain AdamW on a μP model (hidden LR not divided by m): hidden updates grow like width."""
    monkeypatch.setattr(cc, "build_optimizer", lambda model, name, lr: torch.optim.AdamW(model.parameters(), lr=lr))
    _, _, verdict = cc.coord_check(gpt_factory(), text_batches(5, 16, 64), [64, 128, 256], 2)
    assert not verdict.passed
    assert any(".mlp" in m for m in verdict.table.loc[~verdict.table["passed"], "module"])


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
    args = ["coord-check", "--model", name, "--data", "synthetic-vectors", "--widths", "32,64,128,256", *FAST]
    assert run_cli(*args, "--out", tmp_path / "mup")[0] == 0
    assert run_cli(*args, "--parametrization", "sp", "--out", tmp_path / "sp")[0] == 1


@pytest.mark.parametrize("args,field", [
    (["--data", "text", "--data-path", "/nonexistent/corpus.txt"], "data.path"),
    (["--widths", "64"], "--widths"),
    (["--parametrization", "ntk"], "--parametrization"),
    (["--optimizer", "lion"], "--optimizer"),
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
