"""What the fuzz harness generates: a `Case` per draw, one verb's command line built from a working baseline
(the shipped specs, a tiny RunConfig, a finished tiny study) with mutations applied.

Each mutation carries its class, `KIND:DETAIL` (`type:`, `range:`, `name:`, `path:`, `url:`, `yaml:`, `flag:`,
`space:`, `key:`, `count:` (huge counts and numbers past machine range), `damaged:` (a file the tool wrote, damaged
before the command reads it), and for `sweep verify --plan` `plan:` (a field it reads out of its bounds), `plan-edit:`
(edited within them, or a field it does not read), `plan-yaml:`, `plan-path:` (no plan at all) and `plan-file:` (the
seed's plan, or a copy outside the root)): the contract's failures are reported by class, and `PENDING`
(tests/fuzz/pending.py) names the classes another lane fixes. A case only writes files into the example's own
folder, given to `Case.make`.
"""

from __future__ import annotations

import copy
import json
import math
import os
import shutil
import typing
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

import yaml
from hypothesis import strategies as st

from tests.fuzz.hostile import KNOWN_SCHEDULER_TEXT, RenamedStudy, stored_name
from trainer.config import RunConfig

SECRET = "pw-Fuzz7q@x/y:z#k"  # planted in $SWEEP_FUZZ_PW: never in any output or file
SECRET_ENV = "SWEEP_FUZZ_PW"
# the shipped study specs (gpt-proxy-run is a RunConfig)
EXAMPLES = ("demo", "gpt-tokens", "llama", "mlp", "per-module")

TINY_RUN = {  # a RunConfig that trains in well under a second
    "model": {"name": "gpt", "width": 16, "depth": 1, "options": {"block_size": 16}},
    "data": {"kind": "synthetic-tokens", "seq_len": 16, "options": {"n_tokens": 4000}},
    "batch_size": 2,
    "steps": 2,
    "log_every": 1,
    "eval": {"every": 2, "batches": 1, "noise_scale_batches": 0},
}
TINY_SPEC = {
    "name": "tiny",
    "trials": 2,
    "run": TINY_RUN,
    "search": {"optimizer.lr": {"low": 1.0e-3, "high": 3.0e-2, "log": True}},
    "sampler": {"name": "tpe", "seed": 0},
    "pruner": {"name": "none"},
}
WIDTH = 16  # the width of the finished study in the seed root


@dataclass
class Case:
    verb: str
    argv: list  # str, or a callable(folder) -> str that writes what the argument names
    classes: list[str] = field(default_factory=list)  # the mutations applied, KIND:DETAIL
    out: str | None = None  # a path the command may write outside the results root (its --out)
    damage: str | None = None  # a file the tool wrote, damaged before the command runs (DAMAGES)
    dry: bool = False  # stopped where it would start training (`sweep verify --plan`: tests/fuzz/contract.py)

    def make(self, folder: Path) -> list[str]:
        if self.damage:
            DAMAGES[self.damage](folder / "results")
        return [str(a(folder)) if callable(a) else a for a in self.argv]

    def __repr__(self) -> str:  # what Hypothesis prints for a failing example
        argv = [getattr(a, "text", a) for a in self.argv]
        argv = [a[:200] + f"…({len(a)} chars)" if isinstance(a, str) and len(a) > 200 else a for a in argv]
        return f"Case({self.verb!r}, classes={self.classes}, argv={argv}, damage={self.damage!r}, dry={self.dry})"


class File:
    """An argument that is a file written into the example's folder: YAML of `data`, or raw `text`."""

    def __init__(self, name: str, data=None, text: str | bytes | None = None):
        self.name, self.data = name, data
        self.text = text if text is not None else yaml.safe_dump(data, sort_keys=False, allow_unicode=True)

    def __call__(self, folder: Path) -> Path:
        path = folder / self.name
        path.write_bytes(self.text.encode("utf-8", "surrogatepass") if isinstance(self.text, str) else self.text)
        return path


def shipped_spec(name: str) -> dict:
    return yaml.safe_load(resources.files("sweep.examples").joinpath(f"{name}.yaml").read_text())


# ------------------------------------------------------------------ values that break things

ODD_NUMBERS = [0, -1, -0.0, 1e-300, 1e300, 2**63, -(2**63), 10**30, math.nan, math.inf, -math.inf, 0.5, 3]
ODD_TEXT = [
    "",
    " ",
    ".",
    "..",
    "../..",
    "a/b",
    "/",
    "-",
    "--",
    "x" * 300,
    "ü-名前",
    "a\nb",
    "$HOME",
    "%s",
    "null",
    "~",
    "*",
    "a b",
    "\x00",
]
ODD_FLAG_VALUES = [
    "",
    "0",
    "-1",
    "1.5",
    "nan",
    "inf",
    "-inf",
    "1e309",
    "abc",
    "..",
    "/",
    "x" * 300,
    "--help",
    "2147483648",
    "1,2",
    "0x10",
    "ü",
]
NAMES = [".", "..", "", "a/b", "../x", "x" * 300, "ü", "-", " tiny", "CON", "a\tb", "tiny2", "ok_name-1"]
# counts past what a machine can do and integers past machine range: any number a flag takes
HUGE_VALUES = ["1000000000", str(10**12), str(10**23), str(2**63), "9" * 5000, "1e300", "1e20", "65536"]
LONG_PATHS = {"name-over-255": "x" * 300, "deep": "/".join(["d" * 200] * 25)}  # past NAME_MAX, past PATH_MAX


def odd_value():
    return st.one_of(
        st.sampled_from(ODD_NUMBERS),
        st.sampled_from(ODD_TEXT),
        st.booleans(),
        st.none(),
        st.just([]),
        st.just({}),
        st.just([1, "a"]),
        st.just({"x": 1}),
    )


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


# ------------------------------------------------------------------ mutations of a YAML document


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


# ------------------------------------------------------------------ files that are not what they seem


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


# ------------------------------------------------------------------ files the tool wrote, damaged


def first(results: Path, pattern: str) -> Path:
    return sorted(results.glob(pattern))[0]


def cut(path: Path) -> None:
    path.write_bytes(path.read_bytes()[: max(1, path.stat().st_size // 3)])


def edit_record(results: Path, **fields) -> None:
    path = first(results, "tiny/runs/fuzzrun/launch.json")
    record = json.loads(path.read_text())
    record.update(fields)
    path.write_text(json.dumps({k: v for k, v in record.items() if v is not None}))


def checkpoints_a_file(results: Path) -> None:
    folder = first(results, "tiny/runs/fuzzrun/checkpoints")
    shutil.rmtree(folder)
    folder.write_text("not a folder")


DAMAGES = {  # the seed root holds the finished tiny study and the launched run `fuzzrun`
    "curve-part-cut": lambda results: cut(first(results, "tiny/curves/study=*/kind=*/run=*/part-*.parquet")),
    "curve-part-empty": lambda results: first(results, "tiny/curves/study=*/kind=*/run=*/part-*.parquet")
    .write_bytes(b""),
    "result-json-cut": lambda results: cut(first(results, "tiny/runs/*/result.json")),
    "result-json-list": lambda results: first(results, "tiny/runs/*/result.json").write_text("[1, 2]"),
    "record-field-missing": lambda results: edit_record(results, curve=None),
    "record-field-mistyped": lambda results: edit_record(results, process="x", job=7),
    "checkpoints-a-file": checkpoints_a_file,
    "config-yaml-cut": lambda results: cut(first(results, "tiny/runs/*/config.yaml")),
}
READERS = {"results", "sql", "export", "compare", "status", "train", "launch", "report", "transfer", "verify"}


# ------------------------------------------------------------------ mutations of the YAML text

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


# ------------------------------------------------------------------ storage URLs

CLOSED_PORT = 9  # discard: nothing listens on loopback here, so a connection is refused at once
URLS = {
    "sqlite-new": "sqlite:///{folder}/other.db",
    "sqlite-missing-folder": "sqlite:///{folder}/no/such/dir/x.db",
    "sqlite-dev-null": "sqlite:////dev/null",
    "sqlite-relative": "sqlite:///rel.db",
    "journal-new": "journal:{folder}/j.log",
    "env-password": "postgresql://sweep:${SWEEP_FUZZ_PW}@127.0.0.1:9/sweep",
    "env-password-flag": "postgresql://sweep@127.0.0.1:9/sweep",
    "literal-userinfo": "postgresql://sweep:{secret}@127.0.0.1:9/sweep",
    "literal-query": "postgresql://sweep@127.0.0.1:9/sweep?password={secret}",
    "literal-libpq": "postgresql:///sweep?host=127.0.0.1&port=9&user=u&password={secret}",
    "unknown-scheme": "mongodb://127.0.0.1/db",
    "garbage": "::::",
    "empty": "",
    "no-host": "postgresql://",
    "unset-env": "postgresql://u:${NO_SUCH_FUZZ_VAR}@127.0.0.1:9/db",
    "sqlite-memory": "sqlite://",
    "sqlite-proc": "sqlite:////proc/self/x.db",
    "sqlite-name-over-255": "sqlite:///{folder}/" + LONG_PATHS["name-over-255"] + ".db",
    "sqlite-deep": "sqlite:///{folder}/" + LONG_PATHS["deep"] + "/x.db",
    "journal-name-over-255": "journal:{folder}/" + LONG_PATHS["name-over-255"] + ".log",
}
# the file a storage URL names in the example's folder: the user asked for it there, so a success may write it
# (and its journal or lock beside it)
STORAGE_FILES = {"sqlite-new": "other.db", "sqlite-relative": "rel.db", "journal-new": "j.log"}


def storage_url(kind: str, folder: Path) -> str:
    return URLS[kind].replace("{folder}", str(folder)).replace("{secret}", SECRET)


@st.composite
def storage_flags(draw) -> tuple[list, list[str]]:
    kind = draw(st.sampled_from(sorted(URLS)))
    flags = ["--storage", lambda folder: storage_url(kind, folder)]
    if kind == "env-password-flag" or draw(st.integers(0, 5)) == 0:
        flags += ["--storage-password-env", SECRET_ENV]
    return flags, [f"url:{kind}"]


# ------------------------------------------------------------------ flags


@st.composite
def mutate_flags(draw, argv: list, options: dict[str, list[str]]) -> tuple[list, list[str]]:
    """`argv` with 0–2 of the verb's `options` (flag → plausible values) set to plausible or odd values,
    a positional dropped or an unknown flag added."""
    argv, classes = list(argv), []
    for _ in range(draw(st.integers(0, 2))):
        kind = draw(st.sampled_from(["value", "value", "odd", "unknown", "drop", "huge"]))
        if kind == "unknown":
            argv.append(draw(st.sampled_from(["--no-such-flag", "-x", "--width=", "--"])))
            classes.append("flag:unknown")
        elif kind == "drop" and len(argv) > 1:
            argv.pop(draw(st.integers(1, len(argv) - 1)))
            classes.append("flag:drop")
        elif kind == "huge" and options:
            flag = draw(st.sampled_from(sorted(options)))
            value = draw(st.sampled_from(HUGE_VALUES))
            argv += [flag, value]
            classes.append(f"count:{flag}={value[:12]}")
        elif options:
            flag = draw(st.sampled_from(sorted(options)))
            value = (
                draw(st.sampled_from(options[flag] or [""]))
                if kind == "value"
                else draw(st.sampled_from(ODD_FLAG_VALUES))
            )
            argv += [flag] if value is None else [flag, value]
            classes.append(f"flag:{flag}={'odd' if kind == 'odd' else value}")
    return argv, classes


# ------------------------------------------------------------------ the verbs


def run_doc(folder_name: str = "results") -> dict:
    """The tiny RunConfig writing into the example's results root (a relative root: the command runs there)."""
    return {**TINY_RUN, "output": {"root": folder_name, "study": "tiny", "run": "fuzzrun"}}


def shrunk(name: str) -> dict:
    """A shipped spec with a budget that trains in seconds: 1 trial of 2 steps, short sequences, width 16."""
    spec = shipped_spec(name)
    run = spec["run"]
    run["model"] = {**run["model"], "width": WIDTH, "options": {**run["model"].get("options", {}), "block_size": 16}}
    run["data"] = {**run["data"], "seq_len": 16}
    run.update(steps=2, batch_size=2, log_every=1, eval={"every": 2, "batches": 1, "noise_scale_batches": 0})
    spec.update(trials=1, pruner={"name": "none"})
    return spec


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


# ------------------------------------------------------------------ sweep plan, and the plan file verify runs

# the tiny spec's full run that `sweep plan` gives two ladders (width 32–128, depth 1–2) and exit 1 (at 2 steps the
# tokens law has no room for a second rung, so the goal is out of reach): the seed root holds its plan
SEED_PLAN_ARGS = ["--width", "256", "--depth", "4", "--tokens", "6400", "--goal", "0.45", "--share", "0.5"]
SEED_PLAN = "results/tiny/plan.yaml"
PLAN_TARGETS = [["--width", "256"], ["--width", "256", "--depth", "4"], ["--params", "1e6"],
                ["--width", "128", "--batch-size", "4"]]
PLAN_BUDGETS = [[], ["--share", "0.5"], ["--flops", "1e11"], ["--goal", "3"], ["--goal", "0.45", "--share", "0.5"]]


class Link:
    """An argument naming a symbolic link made in the example's folder: `name` → `target` (both relative to it)."""

    def __init__(self, name: str, target: str):
        self.name, self.target, self.text = name, target, f"{name}->{target}"

    def __str__(self) -> str:  # its mutation class
        return f"link:{self.text}"

    def __call__(self, folder: Path) -> str:
        if not (folder / self.name).is_symlink():  # the same flag drawn twice names one link
            (folder / self.name).symlink_to(folder / self.target)
        return self.name


# `sweep plan --out`: inside the results root or refused; never the tool's own state (its storage, a run's config,
# the spec), nor through a link out of the root
PLAN_OUTS = ["results/p.yaml", SEED_PLAN, "results/tiny/optuna.db", "results/tiny/runs/fuzzrun/config.yaml",
             "spec.yaml", "p.yaml", "results/../p.yaml", "results", ".", "results/new/dir/p.yaml", "/dev/null",
             "results/" + "x" * 300, "results/p.yaml/", Link("results/out-link.yaml", "p.yaml"),
             Link("results/storage-link.yaml", "results/tiny/optuna.db"), Link("results/dangling.yaml", "no/p.yaml")]

DROP = "<dropped>"
L = ("ladders", 0)  # a ladder's field; the index is drawn (the seed plan has two)
# the fields `sweep verify --plan` reads (sweep/forecast/planfile.py), each with values out of their bounds: every
# one refused before anything runs (`plan:` classes, tests/fuzz/contract.py)
PLAN_OUT_OF_BOUNDS = {
    ("plan",): [2, 0, "1", None, True, DROP],
    ("study",): [None, 1, [], {"a": 1}, "other", "", "../tiny", "tiny\n", DROP],
    ("goal",): [0, -1, math.nan, math.inf, 101, 1e-9, "0.45", True, None, DROP],
    ("proxy",): [None, "32", [32], DROP],
    ("proxy", "width"): [0, -1, 2**21, 1.5, "32", True, None, math.nan, 10**30, DROP],
    ("ladders",): [None, {}, "x", [1], [None], [[]], DROP],
    L + ("rungs",): [[], [32], [0, 64], [-32, 64], [math.nan, 64], ["32", 64], [True, 64], [32] * 65, "32,64",
                     None, {}, [1e16, 32], DROP],
    L + ("seeds",): [0, -1, 65, 10**6, 2.5, True, "6", None, math.nan, math.inf, DROP],
    L + ("grid",): [0, 1, 2, 8, 65, 99, 10**6 + 1, 9.5, "9", True, None, DROP],
    L + ("param",): ["run.dir", "optimizer.beta1", "", None, 1, DROP],
    L + ("across",): ["steps", "../../etc", "", None, "width\n", DROP],
    L + ("proxy_value",): [0, -1, math.nan, math.inf, 1e16, "32", None, DROP],
    L + ("target_value",): [0, -1, math.nan, math.inf, 1e16, "32", None, DROP],
    L + ("prior",): ["x", [], {"centre": math.nan, "spread": 0.1}, {"centre": 0, "spread": 0},
                     {"centre": 11, "spread": 0.1}],
    L + ("name",): [None, 1, "", "a\nb", "x" * 300, DROP],
}
# values within those bounds that verify may still refuse (a width of 33.5, past the machine) or run, and the fields
# verify does not read: refused in one line or run, never a traceback (`plan-edit:`)
PLAN_EDITS = {
    L + ("rungs",): [[32, 33.5], [32, 1e15], [32, 32], [128, 32], [1e-300, 32], [1, 2**20], [3, 5]],
    L + ("seeds",): [64, 1], L + ("grid",): [63, 3], L + ("proxy_value",): [1e15, 1e-300, 48],
    L + ("target_value",): [1e15, 1e-300, 32], L + ("prior",): [None, DROP], L + ("name",): ["[/]", "lr × width"],
    L + ("across",): ["width", "depth", "tokens", "batch_size"],
    ("proxy", "width"): [2**20, 1, 7, 16], ("goal",): [100, 1e-6],
    ("spec",): ["../../etc/passwd", None], ("target",): ["x", DROP], ("budget",): [None], ("noise",): [DROP],
    ("verdict",): [{}], ("total",): [[]], ("hook",): [1],
}
PLAN_YAML_SHAPES = ["duplicate-key", "alias-bomb", "list", "scalar", "empty", "null", "two-documents", "python-tag",
                    "tabs", "truncated", "latin1", "deep-lists", "deep-mappings", "long-line", "bom"]


def edited(doc, path: tuple, value):
    """A copy of the plan document `doc` with `path` (keys and list indices) set to `value` (or removed: DROP);
    unchanged where an earlier edit left no container on the way."""
    out = copy.deepcopy(doc)
    target = out
    for key in path[:-1]:
        ok = isinstance(target, dict) and key in target or isinstance(target, list) and key < len(target)
        if not ok:
            return out
        target = target[key]
    last = path[-1]
    if isinstance(target, dict) and value == DROP:
        target.pop(last, None)
    elif isinstance(target, dict) or isinstance(target, list) and last < len(target) and value != DROP:
        target[last] = copy.deepcopy(value)
    return out


class PlanFile:
    """The `--plan` argument: the seed root's plan (`sweep plan` wrote it) copied to `name` with `edits` ((path,
    value) pairs) and maybe reshaped as YAML text (`shape`); the seed's own plan when neither."""

    def __init__(self, name: str = SEED_PLAN, edits: list | None = None, shape: str | None = None):
        self.name, self.edits, self.shape = name, edits or [], shape
        self.text = " ".join([name, *(f"{'.'.join(map(str, p))}={v!r:.40}" for p, v in self.edits), shape or ""])

    def __call__(self, folder: Path) -> str:
        if self.name == SEED_PLAN and not self.edits and not self.shape:
            return self.name
        doc = yaml.safe_load((folder / SEED_PLAN).read_text())
        for path, value in self.edits:
            doc = edited(doc, path, value)
        text = yaml.safe_dump(doc, sort_keys=False, allow_unicode=True)
        text = yaml_shape(text, self.shape) if self.shape else text
        (folder / self.name).parent.mkdir(parents=True, exist_ok=True)
        (folder / self.name).write_bytes(text.encode("utf-8", "surrogatepass") if isinstance(text, str) else text)
        return self.name


def planted_plan(which: str, folder: Path) -> str:
    """A `--plan` path that is no plan to read: each refused before it is read (`plan-path:`)."""
    results = folder / "results"
    if which == "fifo":
        os.mkfifo(results / "plan.fifo")
        return "results/plan.fifo"
    if which == "link-out-of-root":  # a plan `sweep plan` wrote, moved out of the root, a link to it left inside
        PlanFile("outside-plan.yaml")(folder)
        (results / "plan-link.yaml").symlink_to(folder / "outside-plan.yaml")
        return "results/plan-link.yaml"
    if which == "symlink-loop":
        (results / "loop.yaml").symlink_to(results / "loop.yaml")
        return "results/loop.yaml"
    if which == "big":
        (results / "big-plan.yaml").write_text("#" * ((1 << 20) + 1))
        return "results/big-plan.yaml"
    if which == "empty":
        (results / "empty-plan.yaml").write_text("")
        return "results/empty-plan.yaml"
    return {"missing": "results/tiny/no-plan.yaml", "folder": "results/tiny", "dev-zero": "/dev/zero",
            "proc-environ": "/proc/self/environ", "etc": "/etc/hostname", "spec": "spec.yaml",
            "storage": "results/tiny/optuna.db", "run-config": "results/tiny/runs/fuzzrun/config.yaml",
            "name-over-255": "results/" + LONG_PATHS["name-over-255"], "deep": LONG_PATHS["deep"]}[which]


PLANTED = ["fifo", "link-out-of-root", "symlink-loop", "big", "empty", "missing", "folder", "dev-zero",
           "proc-environ", "etc", "spec", "storage", "run-config", "name-over-255", "deep"]


class Planted:
    def __init__(self, which: str):
        self.which = self.text = which

    def __call__(self, folder: Path) -> str:
        return planted_plan(self.which, folder)


@st.composite
def plan_argument(draw) -> tuple[object, list[str]]:
    """`--plan`: the seed's plan as `sweep plan` wrote it (in the root, or copied out of it, which verify reads), with
    0–2 of its fields out of bounds (`plan:`) or edited within them (`plan-edit:`), maybe reshaped as YAML text
    (`plan-yaml:`); or a path that is no plan (`plan-path:`)."""
    kind = draw(st.sampled_from(["seed", "copy", "copy", "copy", "planted"]))
    if kind == "seed":
        return PlanFile(), ["plan-file:seed"]
    if kind == "planted":
        which = draw(st.sampled_from(PLANTED))
        return Planted(which), [f"plan-path:{which}"]
    edits, classes = [], []
    for _ in range(draw(st.integers(0, 2))):
        bad = draw(st.booleans())
        table = PLAN_OUT_OF_BOUNDS if bad else PLAN_EDITS
        path = draw(st.sampled_from(sorted(table, key=str)))
        value = draw(st.sampled_from(table[path]))
        path = tuple(draw(st.integers(0, 1)) if key == 0 and path[0] == "ladders" else key for key in path)
        edits.append((path, value))
        classes.append(f"{'plan' if bad else 'plan-edit'}:{'.'.join(map(str, path))}")
    shape = draw(st.sampled_from(PLAN_YAML_SHAPES)) if draw(st.integers(0, 3)) == 0 else None
    name = draw(st.sampled_from(["results/edited-plan.yaml", "plan.yaml"]))  # plan.yaml: outside the root
    return PlanFile(name, edits, shape), classes + ([f"plan-yaml:{shape}"] if shape else []) + \
        (["plan-file:outside-root"] if name == "plan.yaml" else [])


STUDY_REFS = ["tiny", "spec.yaml", "nosuch", ".", "..", "../results", "/etc", "x" * 300, "tiny/../tiny", ""]
VERB_OPTIONS = {  # flag → plausible values (None: a switch), drawn by mutate_flags
    "init": {"--out": ["new.yaml", "results", "results/x.yaml", "spec.yaml", "/dev/null", "out/"]},
    "inspect": {
        "--width": ["8", "16", "0", "24"],
        "--depth": ["1", "3"],
        "--parametrization": ["sp", "mup", "xp"],
        "--opt": ["n_head=2", "head_dim=8", "head_dim=3", "block_size=0", "nope=1", "novalue"],
        "--set": ["optimizer.roles.embedding.lr_mult=4", "optimizer.roles.tied.lr_mult=2", "model.init.readout=0",
                  "optimizer.roles.embedding.lr_width_exp=-0.5", "optimizer.roles.norm.lr_width_exp=3",
                  "model.init.nope=2", "optimizer.lr=1", "novalue"],
    },
    "coord-check": {
        "--widths": ["8,16", "16,8", "8", "8,8", "0,8", "a,b"],
        "--steps": ["2", "1"],
        "--seeds": ["1", "0"],
        "--model": ["mlp", "gpt", "resnet", "no.such:fn", "os:system"],
        "--lr": ["0.01", "-1", "nan"],
        "--data": ["synthetic", "stdlib", "tokens", "text", "bogus"],
        "--data-path": ["data.bin", "/dev/zero"],
        "--out": ["cc", "results/cc", "spec.yaml"],
        "--opt": ["n_head=1", "x=y", "novalue"],
    },
    "train": {"--steps": ["1", "3", "0"], "--resume": [None], "--quiet": [None]},
    "proxy": {
        "--width": ["16", "8", "24", "0"],
        "--trials": ["2", "1", "0", "-1"],
        "--workers": ["1", "0", "-2"],
        "--enqueue": ["optimizer.lr=0.01", "optimizer.lr=-1", "nope=1", "optimizer.lr", "optimizer.lr=nan"],
        "--timeout": ["0", "nan", "-1", "inf", "1e308"],
        "--backend": ["local", "k8s"],
        "--parametrization": ["sp", "mup"],
        "--warm-start": ["8", "16", "-1"],
        "--warm-start-top": ["2", "0"],
        "--detach": [None],
        "--cpus-per-trial": ["-1", "nan"],
        "--time": ["-5"],
    },
    "results": {
        "--width": ["16", "8", "-1"],
        "--top": ["0", "-1", "3"],
        "--format": ["csv", "json", "xml"],
        "--plots": [None],
        "--no-plots": [None],
    },
    "sql": {
        "--study": STUDY_REFS,
        "--format": ["csv", "parquet", "json"],
        "--out": ["q.csv", "results/q.parquet", "spec.yaml", "."],
    },
    "export": {"--format": ["csv", "parquet", "xlsx"], "--out": ["exp", "results/exp", "spec.yaml", "."]},
    "compare": {
        "--x": ["step", "tokens", "fraction", "time"],
        "--metric": ["val_loss", "train_loss", "acc"],
        "--study": STUDY_REFS,
        "--out": ["c.png", "results/c.png", "spec.yaml", "."],
    },
    "verify": {
        "--widths": ["16,32", "16", "0,16", "8,8", "a"],
        "--across": ["batch_size=4,8", "steps=2,4", "width=16,32", "batch_size=4", "nope=1,2", "steps=0,4", "depth=x",
                     "steps=2,2,4"],
        "--values": ["0.01,0.02", "0.01", "-1,2", "2^-8,2^-7", "nan,1"],
        "--range": ["0.001,0.1,2", "0.1,0.001,3", "1,2,0", "x"],
        "--param": ["optimizer.lr", "optimizer.beta1", "nope"],
        "--parametrizations": ["mup", "sp", "mup,sp", "xp"],
        "--seeds": ["1", "0"],
        "--trials-from": ["spec", "best", "worst"],
        "--max-drift": ["1", "nan", "-1"],
        "--ladder-width": ["16", "32", "0", "-8", "x"],
        "--ladder-batch": ["8", "16", "0", "-4", "1e30", "x"],
        "--refine": ["0", "2", "-1", "33", "nan"],
        "--workers": ["1", "0"],
        "--plan": [SEED_PLAN, "nosuch.yaml", "spec.yaml", "results", "/dev/zero"],  # a case with it stops dry
    },
    "transfer": {
        "--width": ["64", "16", "0", "24"],
        "--depth": ["2", "0"],
        "--batch-size": ["4", "0", "3"],
        "--tokens": ["1000", "0"],
        "--steps": ["4", "0"],
        "--batch-rule": ["none", "sqrt", "linear", "noise", "fitted", "cubic"],
        "--horizon-rule": ["none", "fitted", "x"],
        "--depth-rule": ["model", "fitted", "x"],
        "--extrapolate": [None],
        "--warmup-rule": ["fraction", "tokens", "x"],
        "--beta2-rule": ["halflife", "none", "x"],
        "--wd-rule": ["tokens", "fraction", "none", "x"],
        "--trial": ["best", "0", "1", "99", "-1", "x"],
        "--proxy-width": ["16", "8"],
        "--out": ["t.yaml", "results/t.yaml", "spec.yaml", "."],
    },
    "launch": {
        "--backend": ["local", "k8s"],
        "--nproc": ["1", "0", "-1"],
        "--gpus-per-node": ["0", "-1"],
        "--time": ["0", "-1"],
        "--mem": ["nan", "-1"],
        "--detach": [None],
    },
    "status": {"--format": ["table", "json", "xml"]},
    "doctor": {
        "--width": ["16", "8", "0"],
        "--lr-max": ["0.1", "0", "nan", "inf"],
        "--out": ["d.parquet", "results/d.parquet", "spec.yaml", "."],
    },
    "report": {"--out": ["r.html", "results/r.html", "spec.yaml", "."]},
    "plan": {
        "--tokens": ["6400", "1600", "26e9", "6400.5", "10", "0"],
        "--width": ["256", "4096", "64", "32", "0"],
        "--depth": ["1", "4", "8", "0"],
        "--params": ["1e6", "1.3e9", "1e3", "0"],
        "--batch-size": ["2", "4", "512", "0"],
        "--share": ["0.05", "0.5", "1", "1.5", "1e-9", "0"],
        "--flops": ["1e11", "1e20", "1e8", "1e31", "0"],
        "--goal": ["0.45", "3", "0.01", "0", "-1"],
        "--proxy-width": ["32", "64", "256", "0"],
        "--out": PLAN_OUTS,
    },
}
HEAVY = {"coord-check", "proxy", "verify", "doctor"}  # a success trains or spawns workers: fewer examples


STORAGE_VERBS = ("proxy", "verify", "transfer", "results", "sql", "export", "report")  # they take --storage
FOCUSED = ("plan", "verify-plan")  # verify-plan: `sweep verify --plan`, dry (tests/fuzz/contract.py)


@st.composite
def plan_case(draw, verb: str, focused: bool) -> tuple[str, list, list[str]]:
    """`sweep plan` of a full run and a budget, or `sweep verify --plan` of a plan file (plan_argument); the tiny spec
    when `focused`, else a shipped or mutated one."""
    spec, classes = (File("spec.yaml", TINY_SPEC), []) if focused else draw(spec_argument())
    if verb == "plan":
        budget = draw(st.sampled_from(PLAN_BUDGETS))
        return verb, [spec, "--tokens", "6400", *draw(st.sampled_from(PLAN_TARGETS)), *budget], classes
    plan, plan_classes = draw(plan_argument())
    return "verify", [spec, "--plan", plan, "--trials-from", "spec"], classes + plan_classes


@st.composite
def case_for(draw, verb: str) -> Case:
    """One generated command line of `verb`, its mutation classes, and where it may write outside the root."""
    classes: list[str] = []
    focused = verb in FOCUSED and draw(st.integers(0, 2)) > 0  # 2 in 3: its own mutations only
    if verb in FOCUSED:
        verb, argv, classes = draw(plan_case(verb, focused))
    elif verb in ("proxy", "verify", "transfer", "doctor"):
        spec, classes = draw(spec_argument()) if verb != "doctor" or draw(st.booleans()) else draw(config_argument())
        base = {
            "proxy": ["--width", str(WIDTH)],
            "transfer": ["--width", "64", "--steps", "4"],
            "doctor": [],
            "verify": [
                "--widths",
                "16,32",
                "--values",
                "0.005,0.01,0.02",
                "--parametrizations",
                "mup",
                "--seeds",
                "1",
                "--trials-from",
                "spec",
                "--refine",
                "0",
            ],
        }[verb]
        argv = [spec, *base]
    elif verb in ("train", "launch"):
        config, classes = draw(config_argument())
        argv = [config] + (["--quiet"] if verb == "train" else [])
    elif verb in ("results", "export", "report"):
        argv = [draw(st.sampled_from(STUDY_REFS[:3]) | st.sampled_from(STUDY_REFS))] + (
            ["--no-plots"] if verb == "results" else []
        )
    elif verb == "sql":
        argv = [draw(st.sampled_from(SQL_STATEMENTS)), "--study", "tiny"]
    elif verb == "compare":
        argv = draw(
            st.lists(
                st.sampled_from(["tiny#0", "tiny#1", "fuzzrun", "tiny#99", "#", "nosuch", "../x"]),
                min_size=1,
                max_size=3,
            )
        )
    elif verb == "init":
        argv = [draw(st.sampled_from(["demo", "mlp", "gpt-proxy-run", "nosuch", "../demo", ""])), "--out", "new.yaml"]
    elif verb == "inspect":
        argv = [draw(st.sampled_from(["gpt", "mlp", "resnet", "llama", "nosuch", "os:system"])), "--width", "16"]
    elif verb == "coord-check":
        argv = ["--model", "mlp", "--widths", "8,16", "--steps", "2", "--seeds", "1"]
    else:  # status
        argv = draw(st.sampled_from([[], ["tiny"], ["nosuch"], [".."]]))
    argv, flag_classes = ([verb, *argv], []) if focused and verb == "verify" else \
        draw(mutate_flags([verb, *argv], VERB_OPTIONS[verb]))
    if not focused:
        argv, flag_classes = draw(hostile_inputs(verb, argv, flag_classes))
        if verb in STORAGE_VERBS and draw(st.integers(0, 3)) == 0:
            flags, url_classes = draw(storage_flags())
            argv, flag_classes = argv + flags, flag_classes + url_classes
        argv, flag_classes = draw(given_twice(verb, argv, flag_classes))
    outs = [argv[i + 1] for i, a in enumerate(argv[:-1]) if a == "--out" and isinstance(argv[i + 1], str)]
    out = outs[-1] if outs else None  # two --out are refused; one is where a success may write
    damage = draw(st.sampled_from(sorted(DAMAGES))) if verb in READERS and not focused and \
        draw(st.integers(0, 4)) == 0 else None
    return Case(verb, argv, classes + flag_classes + ([f"damaged:{damage}"] if damage else []), out, damage,
                dry=verb == "verify" and "--plan" in argv)


@st.composite
def hostile_inputs(draw, verb: str, argv: list, classes: list[str]) -> tuple[list, list[str]]:
    """Now and then (1 in 4) the security classes of tests/fuzz/hostile.py: a SLURM text that sbatch would read as
    script (always refused, so no job is ever submitted), or the sweep's stored study renamed (`stored:`)."""
    if draw(st.integers(0, 3)):
        return argv, classes
    if verb in ("proxy", "verify", "launch"):
        field = draw(st.sampled_from(["partition", "account", "qos"]))
        refused = [text for text in KNOWN_SCHEDULER_TEXT if text != "a" * 65]
        return [*argv, "--backend", "slurm", f"--{field}", draw(st.sampled_from(refused))], \
            [*classes, f"scheduler:{field}"]
    if verb in ("results", "report", "export", "transfer") and len(argv) > 1:
        return [argv[0], RenamedStudy(draw(stored_name())), *argv[2:]], [*classes, "stored:study-name"]
    return argv, classes


def single_valued(verb: str) -> list[tuple[str, bool]]:
    """Every option of `verb` that takes one value, as (its first name, whether it is a switch), read from the
    command itself, so an option added later is drawn too."""
    import typer

    from sweep.cli import app

    command = typer.main.get_command(app).commands[verb]
    return sorted((p.opts[0], p.is_flag) for p in command.params if p.param_type_name == "option" and not p.multiple)


@st.composite
def given_twice(draw, verb: str, argv: list, classes: list[str]) -> tuple[list, list[str]]:
    """Now and then (1 in 6) one of the verb's single-valued options given twice, right after the verb (so no
    `--` drawn later turns it into a positional): refused, naming it, however plausible each value (`flag:twice:`,
    tests/fuzz/contract.py)."""
    if draw(st.integers(0, 5)):
        return argv, classes
    flag, switch = draw(st.sampled_from(single_valued(verb)))
    values = [v for v in VERB_OPTIONS[verb].get(flag, []) if v is not None] or ["1"]
    pair = [flag, flag] if switch else [flag, draw(st.sampled_from(values)), flag, draw(st.sampled_from(values))]
    return [argv[0], *pair, *argv[1:]], [*classes, f"flag:twice:{flag}"]


SQL_STATEMENTS = [
    "SELECT count(*) AS n FROM trials",
    "SELECT * FROM runs",
    "SELECT run, max(step) FROM curves GROUP BY run",
    "DELETE FROM trials",
    "SELECT 1; SELECT 2",
    "COPY trials TO 'leak.csv'",
    "SELECT * FROM read_csv('/etc/passwd')",
    "SELECT * FROM read_parquet('../**/*.parquet')",
    "ATTACH 'x.db'",
    "",
    "SELEC",
    "SELECT getenv('SWEEP_FUZZ_PW')",
    "INSTALL httpfs",
    "SELECT * FROM read_text('results/tiny/optuna.db')",
]
