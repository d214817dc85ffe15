"""Bad input, end to end through the `sweep` command: study specs, RunConfigs, flags, data files and storage
URLs. Each case is refused with exit code 2 and exactly one line on stderr that names the field and what is
allowed, before anything is written: the folder tree (paths, sizes, modification times, folders included)
of the case's root and of SWEEP_ROOT is the same after as before, and no Optuna study was created.

The lower layers have their own tests (test_study_spec.py, test_run_config.py, test_data.py,
test_backends.py, test_queries.py); this table is the one place that proves the rule through the CLI.
A width below the model's base width is not bad input under μP: every case here sweeps or trains gpt at
width 16 (its base width is 64), and test_study_spec.py::test_width_below_base_width_is_valid_under_mup and
the sweeps of test_sweep_proxy.py run it.
"""
from __future__ import annotations

import copy
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
import yaml

from tests.services import free_port
from tests.sweep_helpers import write_spec

RUN = {  # a tiny RunConfig, trained in a second when a case needs a run to exist first
    "model": {"name": "gpt", "width": 16, "depth": 1, "options": {"block_size": 16}},
    "data": {"kind": "synthetic-tokens", "seq_len": 16, "options": {"n_tokens": 20000}},
    "batch_size": 4,
    "steps": 2,
    "log_every": 1,
    "eval": {"every": 2, "batches": 1, "noise_scale_batches": 0},
}


def merged(base: dict, changes: dict) -> dict:
    """`base` with each of `changes` set: a dotted key sets one nested field, a plain key a whole value."""
    out = copy.deepcopy(base)
    for key, value in changes.items():
        *sections, last = key.split(".")
        target = out
        for name in sections:
            target = target.setdefault(name, {})
        target[last] = value
    return out


def run_config(root: Path, name: str = "run.yaml", **changes) -> Path:
    """A RunConfig file writing under root/results; `changes` as dotted keys (`optimizer.lr=…`)."""
    data = merged({**RUN, "output": {"root": str(root / "results"), "study": "bad"}}, changes)
    path = root / name
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def file(root: Path, name: str, content: str | bytes) -> Path:
    path = root / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(content.encode() if isinstance(content, str) else content)
    return path


def tokens(root: Path, content: np.ndarray | bytes) -> str:
    """A .bin token file under root/data; its path."""
    return str(file(root, "data/tokens.bin", content if isinstance(content, bytes) else content.tobytes()))


def tokens_run(path: str, vocab_size: int = 256) -> dict:
    """A spec's `run` changes that read a .bin token file."""
    return {"data": {"kind": "tokens", "path": path, "vocab_size": vocab_size, "options": {}}}


GARBAGE = np.random.default_rng(0).integers(0, 256, 4096, dtype=np.uint8).tobytes()


# ------------------------------------------------------------------ the cases

@dataclass(frozen=True)
class Case:
    make: Callable[[Path], list]  # writes the case's files under the root it is given; returns the arguments
    expect: tuple[str, ...]  # each in the one line on stderr: the field, and what is allowed


def proxy(*flags, **spec_changes) -> Callable[[Path], list]:
    """`sweep proxy SPEC --width 16 FLAGS…` on the tiny spec with `spec_changes` (top-level keys, run={…})."""
    def make(root: Path) -> list:
        return ["proxy", write_spec(root, **spec_changes), *(flags or ("--width", "16"))]
    return make


def proxy_on(setup: Callable[[Path], dict], *flags) -> Callable[[Path], list]:
    """`sweep proxy` of the tiny spec with the `run` changes `setup` returns after writing its files."""
    def make(root: Path) -> list:
        return ["proxy", write_spec(root, run=setup(root)), *(flags or ("--width", "16"))]
    return make


def train(*flags, **changes) -> Callable[[Path], list]:
    """`sweep train RUN.yaml FLAGS…` on the tiny RunConfig with `changes` (dotted keys)."""
    return lambda root: ["train", run_config(root, **changes), *flags]


def train_text(content: str | bytes) -> Callable[[Path], list]:
    return lambda root: ["train", file(root, "run.yaml", content)]


def spec_text(content: str | bytes) -> Callable[[Path], list]:
    return lambda root: ["proxy", file(root, "spec.yaml", content), "--width", "16"]


def existing_study_then(**spec_changes) -> Callable[[Path], list]:
    """The tiny sweep's study at width 16 created as `sweep proxy` creates it (no trial run), then
    `sweep proxy` of the spec with `spec_changes` at the same width."""
    def make(root: Path) -> list:
        from sweep.study.preflight import prepare
        from sweep.study.spec import load_spec
        from sweep.study.storage import open_storage
        from sweep.study.study import open_study

        job = prepare(load_spec(write_spec(root, run={"model": {"width": 16}})), width=None, parametrization=None,
                      trials=None, storage=None, password_env=None, root=str(root / "results"))
        open_study(job, open_storage(job.storage), create=True)
        return ["proxy", write_spec(root, **spec_changes), "--width", "16"]
    return make


def resume_with_checkpoint_of_another_model(root: Path) -> list:
    """A run named `r` trained at width 16 (with its checkpoint), then `sweep train --resume` of a width-32
    config given the same run name: the checkpoint holds another model."""
    from trainer.config import RunConfig
    from trainer.loop import train as train_run

    assert train_run(RunConfig.load(run_config(root, "first.yaml", **{"output.run": "r"}))).status == "completed"
    return ["train", run_config(root, **{"output.run": "r", "model.width": 32}), "--resume"]


def resume_from_garbage_checkpoint(root: Path) -> list:
    path = run_config(root, **{"output.run": "r"})
    file(root, "results/bad/runs/r/checkpoints/step-000000002.pt", GARBAGE)
    return ["train", path, "--resume"]


CLOSED_PORT = free_port()  # nothing listens there: a connection is refused at once

CASES = {
    # ---- study specs
    "spec-not-yaml": Case(spec_text("name: tiny\nsearch: {optimizer.lr: [1, \n"), ("spec:", "not valid YAML")),
    "spec-not-a-mapping": Case(spec_text("- name\n- tiny\n"),
                               ("spec:", "must be a mapping of keys (name, run, search")),
    "spec-binary-garbage": Case(spec_text(GARBAGE), ("spec:", "YAML")),
    "spec-unknown-key": Case(proxy(serach={}), ("serach: unknown key", "allowed: name, trials, run, search")),
    "spec-unknown-run-key": Case(proxy(run={"optimizer": {"lrr": 0.01}}),
                                 ("run.optimizer.lrr: unknown key", "allowed: name, lr, weight_decay")),
    "spec-wrong-type": Case(proxy(trials="many"), ("trials:", "valid integer", "'many'")),
    "spec-run-wrong-type": Case(proxy(run={"batch_size": "four"}), ("run.batch_size:", "valid integer")),
    "spec-nan-lr": Case(proxy(run={"optimizer": {"lr": float("nan")}}), ("run.optimizer.lr:", "greater than 0")),
    "spec-negative-lr-in-range": Case(proxy(search={"optimizer.lr": {"low": -1.0e-3, "high": 0.1}}),
                                      ("search.optimizer.lr:", "-0.001 is rejected", "greater than 0")),
    "spec-nan-in-range": Case(proxy(search={"optimizer.lr": {"low": float("nan"), "high": 0.1}}),
                              ("search.optimizer.lr", "nan")),
    "spec-low-above-high": Case(proxy(search={"optimizer.lr": {"low": 0.1, "high": 0.01}}),
                                ("search.optimizer.lr.low:", "0.1 is above high 0.01")),
    "spec-log-range-touching-0": Case(proxy(search={"optimizer.lr": {"low": 0.0, "high": 0.1, "log": True}}),
                                      ("search.optimizer.lr.low:", "a log range needs low > 0")),
    "spec-unknown-model": Case(proxy(run={"model": {"name": "gpt5"}}),
                               ("model.name:", "'gpt5' is not a zoo model (gpt, llama, mlp, resnet)",
                                "package.module:function")),
    "spec-builder-not-importable": Case(proxy(run={"model": {"name": "no_such_package_x:build"}}),
                                        ("model.name:", "cannot import builder 'no_such_package_x:build'")),
    "spec-unknown-sampler": Case(proxy(sampler={"name": "bayes"}), ("sampler.name:", "'tpe'", "'qmc'")),
    "spec-unknown-pruner": Case(proxy(pruner={"name": "asha"}), ("pruner.name:", "'hyperband'", "'none'")),
    "spec-width-differs-from-existing-study": Case(existing_study_then(run={"model": {"width": 32}}),
                                                   ("run.model.width: 32 differs from 16", "tiny-w16-mup")),
    # ---- flags
    "width-zero": Case(proxy("--width", "0"), ("--width:", "must be a positive integer")),
    "width-negative": Case(proxy("--width", "-16"), ("--width:", "must be a positive integer")),
    "width-not-a-multiple-of-the-head-dim": Case(proxy("--width", "24"),
                                                 ("model.width:", "24 is not a multiple of the head dim 16")),
    "unknown-backend": Case(proxy("--width", "16", "--backend", "k8s"),
                            ("--backend:", "'k8s' is not one of local, ray, slurm")),
    "workers-zero": Case(proxy("--width", "16", "--workers", "0"), ("--workers:", "at least 1")),
    "unknown-batch-rule": Case(lambda root: ["transfer", write_spec(root), "--width", "64", "--batch-rule", "cubic"],
                               ("--batch-rule:", "'cubic' is not one of none, linear, sqrt, noise")),
    "coord-check-one-width": Case(lambda root: ["coord-check", "--model", "mlp", "--widths", "32"],
                                  ("--widths:", "at least two distinct positive widths")),
    "launch-unknown-backend": Case(lambda root: ["launch", run_config(root), "--backend", "k8s"],
                                   ("--backend:", "'k8s' is not one of local, ray, slurm")),
    "train-steps-zero": Case(train("--steps", "0"), ("'--steps'", "greater than or equal to 1")),
    "status-unknown-format": Case(lambda root: ["status", "--format", "xml"],
                                  ("--format:", "'xml' is not one of table, json")),
    "init-unknown-example": Case(lambda root: ["init", "mamba"], ("NAME:", "'mamba' is not an example", "demo, ")),
    "init-over-an-existing-file": Case(lambda root: ["init", "demo", "--out", file(root, "mine.yaml", "name: mine\n")],
                                       ("--out:", "mine.yaml exists", "not overwritten")),
    "init-out-below-a-file": Case(lambda root: ["init", "demo", "--out", file(root, "notes.txt", "x") / "demo.yaml"],
                                  ("--out:", "notes.txt is a file, not a folder")),
    # ---- RunConfigs
    "config-not-yaml": Case(train_text("model: {name: gpt\nsteps: 3\n"), ("config:", "not valid YAML")),
    "config-binary-garbage": Case(train_text(GARBAGE), ("config:", "YAML")),
    "config-missing": Case(lambda root: ["train", root / "nowhere.yaml"], ("config:", "does not exist")),
    "config-unknown-key": Case(train(**{"optimizer.lrr": 0.01}), ("optimizer.lrr: unknown key", "allowed: name, lr")),
    "config-wrong-type": Case(train(steps="ten"), ("steps:", "valid integer", "'ten'")),
    "config-nan-lr": Case(train(**{"optimizer.lr": float("nan")}), ("optimizer.lr:", "greater than 0")),
    "config-negative-lr": Case(train(**{"optimizer.lr": -0.01}), ("optimizer.lr:", "greater than 0", "-0.01")),
    "config-width-zero": Case(train(**{"model.width": 0}), ("model.width:", "greater than or equal to 1")),
    "config-width-negative": Case(train(**{"model.width": -64}), ("model.width:", "greater than or equal to 1")),
    "config-width-not-a-multiple-of-the-head-dim": Case(train(**{"model.width": 40}),
                                                        ("model.width:", "40 is not a multiple of the head dim 16")),
    "config-unknown-model": Case(train(**{"model.name": "mamba"}),
                                 ("model.name:", "'mamba' is not a zoo model (gpt, llama, mlp, resnet)")),
    "config-newer-schema": Case(train(schema_version=2, **{"optimizer.muon": True}),
                                ("schema_version:", "2 is newer", "up to 1")),
    "config-resume-from-another-models-checkpoint": Case(
        resume_with_checkpoint_of_another_model,
        ("output.run:", "step-000000002.pt is a checkpoint of another model", "size mismatch")),
    "config-resume-from-a-garbage-checkpoint": Case(resume_from_garbage_checkpoint,
                                                    ("checkpoint:", "step-000000002.pt is refused",
                                                     "weights_only=True")),
    # ---- data files
    "data-missing-file": Case(proxy(run={"data": {"kind": "text", "path": "/no/such/corpus.txt", "options": {}}}),
                              ("data.path:", "/no/such/corpus.txt does not exist")),
    "data-empty-file": Case(proxy_on(lambda root: tokens_run(tokens(root, b""))), ("data.path:", "is empty")),
    "data-empty-text-file": Case(proxy_on(lambda root: {"data": {"kind": "text", "options": {},
                                                                 "path": str(file(root, "data/empty.txt", ""))}}),
                                 ("data.path:", "empty")),
    "data-binary-garbage": Case(proxy_on(lambda root: tokens_run(tokens(root, GARBAGE))),
                                ("data.vocab_size:", "256 is too small", "token id")),
    "data-garbage-meta-json": Case(proxy_on(lambda root: (file(root, "data/meta.json", GARBAGE),
                                                          tokens_run(tokens(root, np.arange(64, dtype=np.uint16))))[1]),
                                   ("data.path:", "meta.json is not valid JSON")),
    "data-bin-size-not-a-multiple-of-the-token-size": Case(
        proxy_on(lambda root: tokens_run(tokens(root, np.arange(1001, dtype=np.uint8).tobytes()))),
        ("data.path:", "1001 bytes, not a multiple of 2 (uint16)")),
    "data-bin-token-beyond-the-vocabulary": Case(
        proxy_on(lambda root: tokens_run(tokens(root, np.arange(4096, dtype=np.uint16) % 300))),
        ("data.vocab_size:", "256 is too small", "token id 299")),
    "data-bin-in-a-run-config": Case(lambda root: ["train", run_config(
        root, data={"kind": "tokens", "path": tokens(root, np.arange(1001, dtype=np.uint8).tobytes()),
                    "vocab_size": 256, "options": {}})], ("data.path:", "not a multiple of 2")),
    # ---- storage URLs
    "storage-malformed": Case(proxy("--width", "16", "--storage", "postgres:/db"),
                              ("storage:", "not a storage URL", "sqlite:///PATH")),
    "storage-unreachable": Case(proxy("--width", "16", "--storage", f"postgresql://sweep@127.0.0.1:{CLOSED_PORT}/sweep"),
                                ("storage:", f"cannot open postgresql://sweep@127.0.0.1:{CLOSED_PORT}/sweep")),
    "storage-password-in-the-url": Case(proxy("--width", "16", "--storage", "postgresql://sweep:hunter2@127.0.0.1/sweep"),
                                        ("storage:", "password in the URL would be recorded", "${VAR}")),
    "storage-password-variable-unset": Case(
        proxy("--width", "16", "--storage", "postgresql://sweep@127.0.0.1/sweep",
              "--storage-password-env", "NO_SUCH_VAR_X"),
        ("storage:", "environment variable NO_SUCH_VAR_X", "not set")),
}


# ------------------------------------------------------------------ the test

def tree(folder: Path) -> dict[str, tuple]:
    """Every path under `folder` (folders too: a file made and removed again changes its folder's time)
    with its kind, size and modification time in nanoseconds."""
    return {str(p.relative_to(folder)): (p.is_dir(), p.stat().st_size, p.stat().st_mtime_ns)
            for p in [folder, *folder.rglob("*")]}


def studies(folder: Path) -> set[str]:
    """The Optuna studies of every SQLite storage under `folder`, read without writing a byte."""
    names = set()
    for db in folder.rglob("*.db"):
        with sqlite3.connect(f"file:{db}?mode=ro&immutable=1", uri=True) as con:
            names |= {f"{db}:{name}" for (name,) in con.execute("SELECT study_name FROM studies")}
    return names


@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
def test_bad_input_is_one_line_naming_the_field_exit_2_and_nothing_written(tmp_path, run_cli, monkeypatch, case):
    results = tmp_path / "results"
    results.mkdir()
    monkeypatch.setenv("SWEEP_ROOT", str(results))
    monkeypatch.chdir(tmp_path)
    args = case.make(tmp_path)
    before, before_results, before_studies = tree(tmp_path), tree(results), studies(tmp_path)

    code, out, err = run_cli(*args)

    assert code == 2, (out, err)
    assert err.startswith("error: ") and err.endswith("\n") and err.count("\n") == 1 and err.strip(), err
    for expected in case.expect:
        assert expected in err, f"{expected!r} not in {err!r}"
    assert tree(results) == before_results and tree(tmp_path) == before  # no file, folder or study written
    assert studies(tmp_path) == before_studies
