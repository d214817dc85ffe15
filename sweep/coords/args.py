"""Building a model and its data together from command-line style arguments."""
from __future__ import annotations

import yaml

from proxies.data import DataSource, open_data
from sweep.errors import InputError
from sweep.study.bounds import check_list
from trainer import yaml_io

DEFAULT_DATA = {"gpt": "stdlib", "mlp": "synthetic-vectors", "resnet": "synthetic-images"}


def parse_options(pairs: list[str] | None) -> dict:
    """`["key=value", ...]` → dict, values parsed as YAML scalars (`n_head=4`, `norm=rmsnorm`,
    `tie_embeddings=true`)."""
    options = {}
    for pair in pairs or []:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise InputError(f"--opt: {pair!r} is not KEY=VALUE")
        try:
            options[key] = yaml_io.load(value)
        except yaml.YAMLError as err:
            raise InputError(f"--opt {key}: {value!r} is not a YAML value ({' '.join(str(err).split())})") from None
    return options


def parse_widths(text: str) -> list[int]:
    try:
        listed = [int(w) for w in text.split(",") if w.strip()]
    except ValueError:
        raise InputError(f"--widths: {text[:80]!r} is not a comma-separated list of integers") from None
    check_list("--widths", listed, "width")
    widths = sorted(set(listed))
    if len(widths) < 2 or widths[0] < 1:
        raise InputError(f"--widths: need at least two distinct positive widths, got {text!r}")
    return widths


def open_model_data(model: str, data: str | None, data_path: str | None, seq_len: int, seed: int = 0) -> DataSource:
    kind = data or DEFAULT_DATA.get(model, "stdlib")
    token_kind = kind in ("text", "tokens", "stdlib", "synthetic-tokens")
    return open_data(kind, path=data_path, seq_len=seq_len if token_kind else 1, seed=seed)
