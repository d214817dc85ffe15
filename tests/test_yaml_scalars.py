"""Scalars as a config's author wrote them: YAML 1.2's core schema, not PyYAML's YAML 1.1, and text in a field that
takes only numbers read as a number only when YAML 1.2 would read it so."""
import math

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from trainer import yaml_io
from trainer.config import ConfigError, RunConfig


def test_hand_written_exponent_floats_parse_as_numbers():
    # YAML 1.1 reads `3e-4` (no dot) as a string; typed fields must still come out as floats
    cfg = RunConfig.from_yaml("steps: 3\noptimizer: {lr: 3e-4, eps: 1e-12}\n")
    assert cfg.optimizer.lr == 3e-4 and isinstance(cfg.optimizer.lr, float)
    assert cfg.optimizer.eps == 1e-12


def test_hand_written_exponent_float_in_model_options_is_a_number():
    """Untyped fields (builder options) read `1e-3` as a float too, as YAML 1.2 does."""
    cfg = RunConfig.from_yaml("steps: 3\nmodel: {options: {output_mult: 1e-3, n_head: 4, norm: rmsnorm}}\n")
    assert cfg.model.options == {"output_mult": 1e-3, "n_head": 4, "norm": "rmsnorm"}


@pytest.mark.parametrize("text, value", [  # YAML 1.2's core schema, not PyYAML's YAML 1.1
    ("0x10", 16), ("0o17", 15), ("017", 17), ("-3", -3), (".5", 0.5), ("1.", 1.0), ("-.inf", -math.inf),
    ("true", True), ("False", False), ("~", None), ("1:30", "1:30"), ("1_000", "1_000"), ("0b101", "0b101"),
    ("yes", "yes"), ("off", "off"), ("2026-01-01", "2026-01-01"),
])
def test_scalars_read_as_yaml_1_2_reads_them(text, value):
    """YAML 1.1 reads `1:30` as 90, `017` as 15, `yes` as true and `2026-01-01` as a date: each a typo that trains."""
    loaded = yaml_io.load(f"x: {text}\n")["x"]
    assert loaded == value and type(loaded) is type(value)


@pytest.mark.parametrize("text", ["1:30", "1_000", "on", "2026-01-01", "'1:30'", '" 2"', "'2 '"])
@pytest.mark.parametrize("field", ["optimizer.roles.hidden.lr_mult", "optimizer.lr", "steps"])
def test_text_where_a_number_goes_is_refused_naming_the_field(text, field):
    """Pydantic's lax mode reads the text `1:30` as 90 (Python's int() takes `1_000` and ` 2`): refused, one line."""
    *parents, leaf = field.split(".")
    doc = f"{leaf}: {text}"
    for parent in reversed(parents):
        doc = f"{parent}: {{{doc}}}"
    extra = "" if field == "steps" else "steps: 3\n"
    with pytest.raises(ConfigError) as err:
        RunConfig.from_yaml(extra + doc + "\n")
    kind = "an integer" if field == "steps" else "a number"
    assert str(err.value).startswith(f"{field}: {kind}, not text") and "\n" not in str(err.value)


@settings(max_examples=300, derandomize=True, database=None, deadline=None)
@given(st.one_of(st.text(alphabet="0123456789 +-._:eExXoO,", max_size=8), st.text(max_size=8)))
def test_text_in_a_number_field_is_a_yaml_1_2_number_or_refused_by_name(text):
    """Whatever text reaches a number-only field (quoted in YAML, or from a Python dict) is read only when YAML 1.2
    reads it as a number, and as that number; anything else is one line naming the field."""
    try:
        cfg = RunConfig.parse({"steps": 3, "optimizer": {"roles": {"hidden": {"lr_mult": text}}}})
    except ConfigError as err:
        assert str(err).startswith("optimizer.roles.hidden.lr_mult: ") and "\n" not in str(err)
    else:
        assert cfg.optimizer.roles.hidden.lr_mult == yaml_io.load(f"x: {text}")["x"]


def test_a_quoted_yaml_1_2_number_is_that_number():
    """PyYAML (YAML 1.1) reads `1e-8` as text, so a config edited in Python holds the text '1e-8'."""
    raw = yaml.safe_load("steps: 3\noptimizer: {lr: 5.0e-3, eps: 1e-8}\n")
    assert raw["optimizer"]["eps"] == "1e-8"
    assert RunConfig.parse(raw).optimizer.eps == 1e-8
