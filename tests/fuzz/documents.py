"""A spec or RunConfig argument (`type:`, `range:`, `count:`, `field:`, `name:`, `key:`, `drop:`, `path:`, `space:`,
`yaml:`, `spec:`): the baseline's document with structural mutations, data paths that are not what they seem, and
the YAML text reshaped."""
from __future__ import annotations

import copy
import os
import typing
from pathlib import Path

import yaml
from hypothesis import strategies as st

from tests.fuzz.baseline import EXAMPLES, TINY_SPEC, File, run_doc, shrunk
from tests.fuzz.odd_values import NAMES, ODD_NUMBERS, odd_value
from trainer.config import RunConfig


def numeric_fields(model, prefix=()) -> list[tuple]:
    """Every path to an int or float field of a pydantic model and its sections, from the schema alone."""
    paths = []
    for name, info in model.model_fields.items():
        for kind in (info.annotation, *typing.get_args(info.annotation)):
            if hasattr(kind, "model_fields"):
                paths += numeric_fields(kind, prefix + (name,))
                break
            if kind in (int, float):
                paths.append(prefix + (name,))
                break
    return paths


NUMERIC_FIELDS = numeric_fields(RunConfig)


def leaves(data, prefix=()) -> list[tuple]:
    """Every path (a tuple of keys) to a scalar or list inside nested mappings."""
    if not isinstance(data, dict):
        return [prefix]
    return [p for key, value in data.items() for p in leaves(value, prefix + (key,))] or [prefix]


def set_at(data: dict, path: tuple, value) -> dict:
    """A copy of `data` with `path` set to `value` (missing or non-mapping sections become mappings)."""
    out = copy.deepcopy(data)
    target = out
    for key in path[:-1]:
        if not isinstance(target.get(key), dict):
            target[key] = {}
        target = target[key]
    target[path[-1]] = value
    return out


def drop_at(data: dict, path: tuple) -> dict:
    out = copy.deepcopy(data)
    target = out
    for key in path[:-1]:
        target = target[key]
    target.pop(path[-1], None)
    return out


@st.composite
def mutate_document(draw, data: dict, *, is_spec: bool) -> tuple[dict, list[str]]:
    """`data` with 0–2 structural mutations: wrong types, odd numbers, odd names, unknown or missing keys,
    odd search ranges (specs), odd data paths."""
    classes = []
    for _ in range(draw(st.integers(0, 2))):
        kind = draw(st.sampled_from(["type", "range", "field", "name", "key", "drop", "path", "count"]
                                    + ["space"] * is_spec))
        paths = leaves(data)
        if kind == "type":
            path = draw(st.sampled_from(paths))
            data = set_at(data, path, draw(odd_value()))
        elif kind == "range":
            numeric = [
                p for p in paths if isinstance(get_at(data, p), (int, float)) and not isinstance(get_at(data, p), bool)
            ]
            path = draw(st.sampled_from(numeric or paths))
            data = set_at(data, path, draw(st.sampled_from(ODD_NUMBERS)))
        elif kind == "count":  # a count or a seed past what a machine can do, or past Python's digits
            path = ("run",) * is_spec + draw(st.sampled_from(NUMERIC_FIELDS)) if draw(st.booleans()) else \
                draw(st.sampled_from([("trials",), ("seeds_per_trial",), ("sampler", "seed")] if is_spec else
                                     [("steps",), ("seed",), ("model", "depth")]))
            data = set_at(data, path, draw(st.sampled_from([10**9, 10**20, 2**64, 10**400])))
        elif kind == "field":  # any number the schema has, set or not (an unset seed went unbounded)
            path = ("run",) * is_spec + draw(st.sampled_from(NUMERIC_FIELDS))
            data = set_at(data, path, draw(st.sampled_from(ODD_NUMBERS)))
        elif kind == "name":
            path = ("name",) if is_spec else draw(st.sampled_from([("output", "study"), ("output", "run")]))
            data = set_at(data, path, draw(st.sampled_from(NAMES)))
        elif kind == "key":
            path = draw(st.sampled_from(paths))[:-1] + (
                draw(st.sampled_from(["lrr", "x", "", "1", "name ", "__class__"])),
            )
            data = set_at(data, path, 1)
        elif kind == "drop":
            path = draw(st.sampled_from(paths))
            data = drop_at(data, path)
        elif kind == "path":
            which = draw(st.sampled_from(sorted(SPECIAL_PATHS)))
            run = ("run",) if is_spec else ()
            data = set_at(
                data,
                run + ("data",),
                {
                    "kind": draw(st.sampled_from(["tokens", "text"])),
                    "path": f"@{which}",
                    "seq_len": 16,
                    "vocab_size": 256,
                    "options": {},
                },
            )
            path = (which,)
        else:  # space
            key, box = draw(search_box())
            data = set_at(data, ("search",), {**(data.get("search") or {}), key: box})
            path = (key,)
        classes.append(f"{kind}:{'.'.join(map(str, path))}")
    return data, classes


def get_at(data, path: tuple):
    for key in path:
        data = data.get(key) if isinstance(data, dict) else None
    return data


@st.composite
def search_box(draw) -> tuple[str, object]:
    """A search-space entry: legal for Optuna or not, valid for every RunConfig point or not."""
    key = draw(
        st.sampled_from(
            [
                "optimizer.lr",
                "optimizer.weight_decay",
                "optimizer.beta1",
                "batch_size",
                "model.depth",
                "schedule.warmup_fraction",
                "steps",
                "no.such.key",
            ]
        )
    )
    box = draw(
        st.one_of(
            st.fixed_dictionaries(
                {"low": st.sampled_from(ODD_NUMBERS), "high": st.sampled_from(ODD_NUMBERS)},
                optional={"log": st.booleans(), "step": st.sampled_from([1, 0.5, 0, -1])},
            ),
            st.fixed_dictionaries({"choices": st.lists(st.sampled_from([1, 2, 0.5, "a", None, True, -1]), max_size=4)}),
            st.sampled_from([[1, 2], 3, "x", None, {}]),
        )
    )
    return key, box


def special_path(which: str, folder: Path) -> str:
    """A data path of class `which`, made in `folder`."""
    path = folder / f"data-{which}"
    if which == "missing":
        pass
    elif which == "folder":
        path.mkdir(exist_ok=True)
    elif which == "empty":
        path.write_bytes(b"")
    elif which == "fifo":
        os.mkfifo(path)
    elif which == "symlink-loop":
        path.symlink_to(path)
    elif which == "dev-zero":
        return "/dev/zero"
    elif which == "outside-root-symlink":
        path.symlink_to("/etc/hostname")
    return str(path)


SPECIAL_PATHS = {"missing", "folder", "empty", "fifo", "symlink-loop", "dev-zero", "outside-root-symlink"}


def with_special_paths(text: str, folder: Path) -> str:
    """Put each `@which` data path into `folder` (they depend on the example's folder)."""
    for which in SPECIAL_PATHS:
        if f"@{which}" in text:
            text = text.replace(f"@{which}", special_path(which, folder))
    return text


class DocFile(File):
    """A YAML argument whose `@which` data paths are made in the example's folder when it is written."""

    def __call__(self, folder: Path) -> Path:
        path = folder / self.name
        text = with_special_paths(self.text, folder) if isinstance(self.text, str) else self.text
        path.write_bytes(text.encode("utf-8", "surrogatepass") if isinstance(text, str) else text)
        return path


ALIAS_BOMB = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"{chr(98 + i)}: &{chr(98 + i)} [*{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, "
    f"*{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}]\n"
    for i in range(8)
)


def yaml_shape(text: str, shape: str) -> str | bytes:
    """`text` reshaped: the YAML-level classes (duplicate keys, aliases, other documents, encodings)."""
    first = text.splitlines()[0] if text.strip() else "name: x"
    return {
        "duplicate-key": text + first + "\n",
        "alias-bomb": text + ALIAS_BOMB,
        "benign-anchor": "x-base: &base {lr: 0.01}\n" + text,
        "list": "- " + text.replace("\n", "\n  "),
        "scalar": "just a string\n",
        "empty": "",
        "null": "~\n",
        "two-documents": text + "---\n" + text,
        "python-tag": text + "hook: !!python/object/apply:os.system ['echo fuzzed']\n",
        "tabs": text.replace("  ", "\t"),
        "truncated": text[: len(text) // 2],
        "latin1": text.encode("latin-1", "replace") + b"\xff\xfe name: \xe9\n",
        "deep": text + "deep: " + "[" * 200 + "]" * 200 + "\n",
        "deep-lists": text + "deep: " + "[" * 50_000 + "]" * 50_000 + "\n",
        "deep-mappings": text + "deep: " + "{a: " * 30_000 + "1" + "}" * 30_000 + "\n",
        "long-line": text + "note: " + "x" * 200_000 + "\n",
        "bom": "\ufeff" + text,
    }[shape]


YAML_SHAPES = [
    "duplicate-key",
    "alias-bomb",
    "benign-anchor",
    "list",
    "scalar",
    "empty",
    "null",
    "two-documents",
    "python-tag",
    "tabs",
    "truncated",
    "latin1",
    "deep",
    "deep-lists",
    "deep-mappings",
    "long-line",
    "bom",
]


@st.composite
def document_file(draw, name: str, base: dict, *, is_spec: bool) -> tuple[File, list[str]]:
    """A YAML argument: `base` mutated as a document, then maybe reshaped as text."""
    data, classes = draw(mutate_document(base, is_spec=is_spec))
    text = yaml.safe_dump(data, sort_keys=False, allow_unicode=True)
    if draw(st.integers(0, 4)) == 0:
        shape = draw(st.sampled_from(YAML_SHAPES))
        text, classes = yaml_shape(text, shape), classes + [f"yaml:{shape}"]
    return DocFile(name, text=text), classes


@st.composite
def spec_argument(draw) -> tuple[File, list[str]]:
    """The tiny spec (its study is finished in the seed root) or a shrunk shipped one, mutated."""
    base = draw(st.sampled_from(["tiny", *EXAMPLES]))
    data = copy.deepcopy(TINY_SPEC) if base == "tiny" else shrunk(base)
    file, classes = draw(document_file("spec.yaml", data, is_spec=True))
    return file, ([] if base == "tiny" else [f"spec:{base}"]) + classes


@st.composite
def config_argument(draw) -> tuple[File, list[str]]:
    return draw(document_file("run.yaml", run_doc(), is_spec=False))
