"""YAML with the safe loader, reading floats as YAML 1.2 does.

PyYAML follows YAML 1.1, where `1e-3` (no dot) is a string; in a config that silently turns a
learning rate or a multiplier into text. This loader resolves `1e-3`, `2E5` and `.5` as floats.
"""
from __future__ import annotations

import re
from typing import Any

import yaml


class Loader(yaml.SafeLoader):
    pass


FLOAT = re.compile(r"^[-+]?(?:\d[\d_]*(?:\.[\d_]*)?|\.\d[\d_]*)(?:[eE][-+]?\d+)?$"
                   r"|^[-+]?\.(?:inf|Inf|INF)$|^\.(?:nan|NaN|NAN)$")
Loader.yaml_implicit_resolvers = {key: list(value) for key, value in yaml.SafeLoader.yaml_implicit_resolvers.items()}
for first in "-+0123456789.":
    resolvers = [(tag, rx) for tag, rx in Loader.yaml_implicit_resolvers.get(first, [])
                 if tag != "tag:yaml.org,2002:float"]
    # appended after the int resolver, so "3" stays an int and only what int rejects can become a float
    Loader.yaml_implicit_resolvers[first] = resolvers + [("tag:yaml.org,2002:float", FLOAT)]


def load(text: str | bytes) -> Any:
    """The document in `text`; bytes are decoded by the YAML reader, so bytes that are not text (UTF-8 or
    UTF-16) are a yaml.YAMLError like any other bad YAML."""
    return yaml.load(text, Loader=Loader)
