"""`sweep doctor`: the zoo's μP models pass; each planted bug fails the row that names it."""
import pandas as pd
import pytest
import torch
import torch.nn.functional as F
import yaml
from torch import nn

from proxies import mup_builder
from proxies.data import open_data
from proxies.gpt import GPT, CausalSelfAttention
from sweep.doctor.checks import causality_rows, make_case, run_doctor
from trainer.config import RunConfig

GPT_RUN = {"model": {"name": "gpt", "width": 64, "depth": 2}, "data": {"kind": "stdlib", "seq_len": 32},
           "batch_size": 8, "steps": 10}
MLP_RUN = {"model": {"name": "mlp", "width": 64, "depth": 2}, "data": {"kind": "synthetic-vectors", "seq_len": 1},
           "batch_size": 64, "steps": 10}


def failed(table: pd.DataFrame) -> list[str]:
    return table.loc[~table["passed"], "check"].tolist()


def test_cli_passes_the_zoo_gpt_prints_the_table_and_writes_parquet(tmp_path, run_cli):
    path = tmp_path / "run.yaml"
    path.write_text(yaml.safe_dump({**GPT_RUN, "output": {"root": str(tmp_path), "study": "d"}}))
    code, out, err = run_cli("doctor", path, "--width", "1024", "--out", tmp_path / "doctor.parquet")
    assert code == 0, out + err
    assert "PASS" in out and "coordinate check" in out and "width 1024" in out and "causal" in out
    table = pd.read_parquet(tmp_path / "doctor.parquet")
    assert table["passed"].all() and len(table) >= 12
    assert {"check", "measured", "expected", "passed"} <= set(table.columns)


def test_a_study_is_checked_at_its_proxy_width_and_the_top_of_its_lr_range(tmp_path, run_cli, monkeypatch):
    monkeypatch.setenv("SWEEP_ROOT", str(tmp_path / "studies"))
    spec = tmp_path / "study.yaml"
    spec.write_text(yaml.safe_dump({"name": "doc", "run": GPT_RUN,
                                    "search": {"optimizer.lr": {"low": 1e-3, "high": 0.05, "log": True}}}))
    code, out, err = run_cli("doctor", spec, "--width", "128")
    assert code == 0, out + err
    table = pd.read_parquet(tmp_path / "studies" / "doc" / "doctor-w128-mup.parquet")
    assert "grad norm after 5 steps at lr 0.05" in set(table["check"])  # the searched maximum, not the base lr
    assert table["run"].str.contains("w128").all()


def test_the_zoo_mlp_passes():
    table, passed = run_doctor(RunConfig.parse(MLP_RUN))
    assert passed, table.to_string()
    assert "labels shifted (copy model's loss)" not in set(table["check"])  # a classifier has no shift to check


def test_the_coordinate_check_row_checks_the_configs_role_settings():
    """A role's width exponent e = +1 on the hidden matrices undoes μP's 1/m (the `sweep coord-check --set` of the
    same setting fails): doctor's row checked the bare model and passed it (outside tester). u-μP's −0.5 on the
    embedding passes."""
    from sweep.doctor.checks import coord_check_row

    def row(roles: dict) -> dict:
        cfg = RunConfig.parse({**GPT_RUN, "model": {**GPT_RUN["model"], "depth": 1}, "optimizer": {"roles": roles}})
        return coord_check_row(make_case(cfg))[0]

    assert row({"embedding": {"lr_width_exp": -0.5}})["passed"]
    broken = row({"hidden": {"lr_width_exp": 1.0}})
    assert not broken["passed"] and "attn" in broken["measured"], broken


class Unshifted:
    """Token data whose labels are the inputs themselves (the shift forgotten)."""

    def __init__(self, data):
        self.data, self.tokens_per_example = data, data.tokens_per_example

    def batch(self, split, batch_size, generator):
        x, _ = self.data.batch(split, batch_size, generator)
        return x, x.clone()

    def model_options(self):
        return self.data.model_options()


def test_unshifted_labels_fail_their_row():
    data = Unshifted(open_data("stdlib", seq_len=32))
    table, passed = run_doctor(RunConfig.parse(GPT_RUN), data=data, coord_check=False)
    assert not passed
    assert failed(table) == ["labels shifted (copy model's loss)"]


class ListGPT(GPT):
    """A GPT with an extra layer kept in a plain Python list: it trains nothing, and nobody notices."""

    def __init__(self, width, depth, parametrization, **options):
        super().__init__(width, depth, parametrization, **options)
        self.extra = [nn.Linear(width, width)]  # should have been nn.ModuleList

    def forward(self, idx):
        x = self.wte(idx) + self.wpe(torch.arange(idx.shape[1]))
        for block in self.blocks:
            x = block(x)
        return self.lm_head(self.ln_f(x + self.extra[0](x)))


@mup_builder(base_width=64)
def list_gpt(width, depth, parametrization="mup", **options):
    return ListGPT(width, depth, parametrization, **options)


class DeadBlockGPT(GPT):
    """A GPT whose last block's residual branch is multiplied by zero: its parameters never get a gradient."""

    def forward(self, idx):
        x = self.wte(idx) + self.wpe(torch.arange(idx.shape[1]))
        for i, block in enumerate(self.blocks):
            x = block(x) if i < len(self.blocks) - 1 else x + 0 * (block(x) - x)
        return self.lm_head(self.ln_f(x))


@mup_builder(base_width=64)
def dead_block_gpt(width, depth, parametrization="mup", **options):
    return DeadBlockGPT(width, depth, parametrization, **options)


@pytest.mark.parametrize("builder,row", [("list_gpt", "parameters outside the optimizer"),
                                         ("dead_block_gpt", "parameters without gradient")])
def test_planted_model_bugs_fail_the_row_that_names_them(builder, row):
    cfg = RunConfig.parse({**GPT_RUN, "model": {**GPT_RUN["model"], "name": f"{__name__}:{builder}"}})
    table, passed = run_doctor(cfg, coord_check=False)
    assert not passed
    assert failed(table) == [row]
    if builder == "dead_block_gpt":
        assert "blocks.1." in table.set_index("check").loc[row, "measured"]


class NonCausal(CausalSelfAttention):
    """Attention with the causal mask forgotten."""

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.heads(x)
        return self.proj(F.scaled_dot_product_attention(q, k, v, scale=self.scale).transpose(1, 2).reshape(B, T, C))


class OffByOne(CausalSelfAttention):
    """A causal mask one diagonal too wide: position t also sees t + 1."""

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.heads(x)
        mask = torch.ones(T, T, dtype=torch.bool).tril(diagonal=1)
        y = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, scale=self.scale)
        return self.proj(y.transpose(1, 2).reshape(B, T, C))


class PositionNorm(nn.Module):
    """A final norm over each example's positions and channels (normalized_shape = (T, C)): the future leaks in."""

    def forward(self, x):
        return F.layer_norm(x, x.shape[1:])


class BatchNorm(nn.Module):
    """A final norm with statistics over the batch at each position: one example's loss depends on the others."""

    def forward(self, x):
        return (x - x.mean(dim=0, keepdim=True)) / (x.std(dim=0, keepdim=True) + 1e-5)


def planted_gpt(width, depth, parametrization, attention=None, final_norm=None, **options):
    model = GPT(width, depth, parametrization, **options)
    for block in model.blocks:
        block.attn.__class__ = attention or CausalSelfAttention
    model.ln_f = final_norm or model.ln_f
    return model


@mup_builder(base_width=64)
def non_causal_gpt(width, depth, parametrization="mup", **options):
    return planted_gpt(width, depth, parametrization, attention=NonCausal, **options)


@mup_builder(base_width=64)
def off_by_one_gpt(width, depth, parametrization="mup", **options):
    return planted_gpt(width, depth, parametrization, attention=OffByOne, **options)


@mup_builder(base_width=64)
def position_norm_gpt(width, depth, parametrization="mup", **options):
    return planted_gpt(width, depth, parametrization, final_norm=PositionNorm(), **options)


@mup_builder(base_width=64)
def batch_norm_gpt(width, depth, parametrization="mup", **options):
    return planted_gpt(width, depth, parametrization, final_norm=BatchNorm(), **options)


CAUSAL, INDEPENDENT = "causal (d loss at t / d inputs after t)", \
    "examples independent (d loss of one example / d other examples' inputs)"


def causality(model: str) -> pd.DataFrame:
    run = RunConfig.parse({**GPT_RUN, "model": {**GPT_RUN["model"], "name": model}})
    return pd.DataFrame(causality_rows(make_case(run)))


@pytest.mark.parametrize("model", ["gpt", "llama"])
def test_the_zoo_language_models_are_causal_and_keep_examples_apart(model):
    table = causality(model)
    assert table["check"].tolist() == [CAUSAL, INDEPENDENT] and table["passed"].all(), table.to_string()


@pytest.mark.parametrize("builder, row, seen", [("non_causal_gpt", CAUSAL, "t=0 sees s=1"),
                                                ("off_by_one_gpt", CAUSAL, "t=0 sees s=1"),
                                                ("position_norm_gpt", CAUSAL, "t=0 sees s=1"),
                                                ("batch_norm_gpt", INDEPENDENT, "max |grad|")])
def test_a_model_that_sees_the_future_or_other_examples_fails_the_row_that_names_it(builder, row, seen):
    table = causality(f"{__name__}:{builder}")
    assert failed(table) == [row], table.to_string()
    assert seen in table.set_index("check").loc[row, "measured"]


def test_bad_config_exits_2_with_one_line(tmp_path, run_cli):
    path = tmp_path / "run.yaml"
    path.write_text(yaml.safe_dump({**GPT_RUN, "guard": {"factor": 0.5}}))
    code, out, err = run_cli("doctor", path)
    assert code == 2 and err.startswith("error: guard.factor:") and err.count("\n") == 1
    assert not list(tmp_path.rglob("*.parquet"))



@pytest.mark.parametrize("roles, message", [  # found by an outside tester: tracebacks, where `train` refuses them
    ({"tied": {"lr_mult": 2}}, "error: optimizer.roles.tied: the model has no tied parameter"),
    ({"norm": {"weight_decay_mult": 2}}, "error: optimizer.roles.norm.weight_decay_mult: no norm parameter is decayed"),
])
def test_role_settings_the_model_cannot_take_exit_2_with_one_line(tmp_path, run_cli, roles, message):
    path = tmp_path / "run.yaml"
    path.write_text(yaml.safe_dump({**GPT_RUN, "optimizer": {**GPT_RUN.get("optimizer", {}), "roles": roles}}))
    code, out, err = run_cli("doctor", path)
    assert code == 2 and err.startswith(message) and err.count("\n") == 1, err
    assert not list(tmp_path.rglob("*.parquet"))


@pytest.mark.parametrize("search, message", [  # found by an outside tester: doctor checked only the base run
    ({"optimizer.roles.norm.weight_decay_mult": {"low": 0.5, "high": 2}},
     "error: optimizer.roles.norm.weight_decay_mult: no norm parameter is decayed"),
    ({"optimizer.roles.tied.lr_mult": {"low": 0.5, "high": 2}}, "error: optimizer.roles.tied: the model has no tied"),
])
def test_a_study_whose_search_reaches_a_setting_the_model_refuses_fails_doctor_as_proxy(tmp_path, run_cli,
                                                                                        monkeypatch, search, message):
    monkeypatch.setenv("SWEEP_ROOT", str(tmp_path / "studies"))
    spec = tmp_path / "study.yaml"
    spec.write_text(yaml.safe_dump({"name": "doc", "run": GPT_RUN, "search": search}))
    for command in ("doctor", "proxy"):
        code, out, err = run_cli(command, spec, "--width", "64")
        assert code == 2 and err.startswith(message) and err.count("\n") == 1, (command, err)
    assert not (tmp_path / "studies").exists() or not any((tmp_path / "studies").rglob("*"))
