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
import os
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
import yaml

from tests.services import free_port
from tests.sweep_helpers import write_spec
from trainer.config import RunConfig

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


def special_data(make_path: Callable[[Path], str]) -> Callable[[Path], list]:
    """`sweep proxy` of the tiny spec reading text data at the path `make_path` makes (a FIFO, a device, …)."""
    return proxy_on(lambda root: {"data": {"kind": "text", "path": make_path(root), "options": {}}})


def fifo(root: Path) -> str:
    os.mkfifo(root / "corpus.fifo")
    return str(root / "corpus.fifo")


def symlink_loop(root: Path) -> str:
    (root / "loop-a").symlink_to(root / "loop-b")
    (root / "loop-b").symlink_to(root / "loop-a")
    return str(root / "loop-a")


def run_folder_linked_out(link: str) -> Callable[[Path], list]:
    """A run folder under the results root whose `link` (config.yaml, result.json or the run folder itself)
    is a symlink to a secret outside it; then the command the case's args name reads the root."""
    def make(root: Path) -> Path:
        secret = file(root, "outside/config.yaml", RunConfig.parse({**RUN, "output": {"study": "bad"}}).to_yaml())
        run = root / "results" / "bad" / "runs"
        if link == "run":
            run.mkdir(parents=True)
            (run / "r").symlink_to(secret.parent, target_is_directory=True)
        else:
            (run / "r").mkdir(parents=True)
            if link != "config.yaml":
                (run / "r" / "config.yaml").write_text(RunConfig.parse({**RUN, "output": {"study": "bad"}}).to_yaml())
            (run / "r" / link).symlink_to(secret)
        return root
    return make


def config_linked_out(command: str) -> Callable[[Path], list]:
    """`sweep COMMAND ROOT/bad/transfer/w.yaml`, that file a link to a RunConfig outside the results root."""
    def make(root: Path) -> list:
        link = root / "results" / "bad" / "transfer" / "w.yaml"
        link.parent.mkdir(parents=True)
        link.symlink_to(file(root, "outside/run.yaml", yaml.safe_dump(RUN)))
        return [command, link]
    return make


def runs_linked_out(command: str) -> Callable[[Path], list]:
    """`sweep COMMAND CONFIG`, its study's runs folder (ROOT/bad/runs) a link to a folder outside the results root."""
    def make(root: Path) -> list:
        outside = root / "outside-runs"
        outside.mkdir()
        (root / "results" / "bad").mkdir(parents=True)
        (root / "results" / "bad" / "runs").symlink_to(outside, target_is_directory=True)
        return [command, run_config(root)]
    return make


def reading(link: str, *args: str) -> Callable[[Path], list]:
    return lambda root: (run_folder_linked_out(link)(root), list(args))[1]


def verify_plan(edit: Callable[[dict], object] = lambda plan: None, tail: str = "",
                flags: tuple = ()) -> Callable[[Path], list]:
    """`sweep verify SPEC --plan edited.yaml [flags]` of the tiny spec: the plan `sweep plan` wrote for it (under the
    results root, before the case's snapshot), `edit`ed, `tail` added to its text, written beside it (a plan is read
    inside the root only). Every case is refused before a run."""
    def make(root: Path) -> list:
        from rich.console import Console

        from sweep.plan.command import PlanRequest, run_plan

        spec = write_spec(root)
        run_plan(PlanRequest(spec, 6400, width=256, depth=4, goal=0.45, share=0.5), Console(file=open(os.devnull, "w")))
        plan = yaml.safe_load((root / "results" / "tiny" / "plan.yaml").read_text())
        edit(plan)
        edited = file(root, "results/edited.yaml", yaml.safe_dump(plan) + tail)
        return ["verify", spec, "--plan", edited, "--trials-from", "spec", *flags]
    return make


def far_rung_without_a_name(plan: dict) -> None:
    """The first ladder across width to a rung verify refuses (a width no model has; the reader now refuses a rung
    past the machine itself, tests/test_plan_outside.py), with no name to name it by."""
    plan["ladders"][0].update(across="width", rungs=[32, 48.5], proxy_value=32)
    del plan["ladders"][0]["name"]


BOMB = "".join(f"{c}: &{c} [{', '.join([f'*{p}'] * 9)}]\n" for p, c in zip("abcdefgh", "bcdefghi", strict=False))
BOMB = "a: &a [x, x, x, x, x, x, x, x, x]\n" + BOMB + "name: bomb\nsearch: {optimizer.lr: 0.01}\n"


CLOSED_PORT = free_port()  # nothing listens there: a connection is refused at once

CASES = {
    # ---- study specs
    "spec-not-yaml": Case(spec_text("name: tiny\nsearch: {optimizer.lr: [1, \n"), ("spec:", "not valid YAML")),
    "spec-not-a-mapping": Case(spec_text("- name\n- tiny\n"),
                               ("spec:", "must be a mapping of keys (name, run, search")),
    "spec-binary-garbage": Case(spec_text(GARBAGE), ("spec:", "YAML")),
    "spec-unknown-key": Case(proxy(serach={}), ("serach: unknown key", "allowed: name, trials, run, search")),
    # an outside tester's terminal escape in a file reached stderr raw: every error line is printable, one line
    "spec-unknown-key-holding-a-terminal-escape": Case(proxy(run={"optimizer": {"lr\x1b]0;pwn\x07\n": 0.01}}),
                                                       ("run.optimizer.lr\\x1b]0;pwn\\x07\\n: unknown key",)),
    "spec-unknown-run-key": Case(proxy(run={"optimizer": {"lrr": 0.01}}),
                                 ("run.optimizer.lrr: unknown key", "allowed: name, lr, weight_decay")),
    "spec-wrong-type": Case(proxy(trials="many"), ("trials:", "an integer", "'many'")),
    "spec-run-wrong-type": Case(proxy(run={"batch_size": "four"}), ("run.batch_size:", "an integer")),
    "spec-nan-lr": Case(proxy(run={"optimizer": {"lr": float("nan")}}), ("run.optimizer.lr:", "finite number")),
    "spec-negative-lr-in-range": Case(proxy(search={"optimizer.lr": {"low": -1.0e-3, "high": 0.1}}),
                                      ("search.optimizer.lr:", "-0.001 is rejected", "greater than 0")),
    "spec-nan-in-range": Case(proxy(search={"optimizer.lr": {"low": float("nan"), "high": 0.1}}),
                              ("search.optimizer.lr", "nan")),
    "spec-low-above-high": Case(proxy(search={"optimizer.lr": {"low": 0.1, "high": 0.01}}),
                                ("search.optimizer.lr.low:", "0.1 is above high 0.01")),
    "spec-log-range-touching-0": Case(proxy(search={"optimizer.lr": {"low": 0.0, "high": 0.1, "log": True}}),
                                      ("search.optimizer.lr.low:", "a log range needs low > 0")),
    # a subnormal low (the storage gave it back as 0: a worker traceback); where a library loaded earlier set the
    # CPU's flush-to-zero, the YAML reads it as 0.0 and the log range refuses that: the field is named either way
    "spec-subnormal-log-low": Case(proxy(search={"model.init.embedding": {"low": 1e-320, "high": 2, "log": True}}),
                                   ("search.model.init.embedding.low:",)),
    "spec-role-multiplier-below-its-floor": Case(proxy(search={"optimizer.roles.hidden.lr_mult": {"low": 1e-9,
                                                                                                  "high": 2}}),
                                                 ("optimizer.roles.hidden.lr_mult", "0.0001")),
    "train-role-multiplier-below-its-floor": Case(train(**{"optimizer.roles.hidden.lr_mult": 1e-320}),
                                                  ("optimizer.roles.hidden.lr_mult", "0.0001")),
    "train-decay-multiplier-on-a-role-never-decayed": Case(train(**{"optimizer.roles.norm.weight_decay_mult": 5}),
                                                           ("optimizer.roles.norm.weight_decay_mult:", "is decayed")),
    "spec-searched-decay-multiplier-on-embeddings-not-decayed": Case(
        proxy(search={"optimizer.roles.embedding.weight_decay_mult": {"low": 0.5, "high": 2}}),
        ("optimizer.roles.embedding.weight_decay_mult:", "decay_embeddings")),
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
    "warm-start-from-a-storage-never-made": Case(proxy("--width", "32", "--warm-start", "16"),
                                                 ("--warm-start: no study tiny-w16-mup",)),
    "warm-start-top-alone": Case(proxy("--width", "32", "--warm-start-top", "2"), ("--warm-start-top:", "only with")),
    "width-zero": Case(proxy("--width", "0"), ("--width:", "must be a positive integer")),
    "width-negative": Case(proxy("--width", "-16"), ("--width:", "must be a positive integer")),
    "width-not-a-multiple-of-the-head-dim": Case(proxy("--width", "24"),
                                                 ("model.width:", "24 is not a multiple of the head dim 16")),
    "unknown-backend": Case(proxy("--width", "16", "--backend", "k8s"),
                            ("--backend:", "'k8s' is not one of local, ray, slurm")),
    "workers-zero": Case(proxy("--width", "16", "--workers", "0"), ("--workers:", "at least 1")),
    # a single-valued option given twice: click kept the last silently, so verify ran only the tokens ladder
    "verify-across-given-twice": Case(lambda root: ["verify", write_spec(root), "--across", "width=16,32",
                                                    "--across", "tokens=1000,2000"],
                                      ("--across:", "given 2 times", "takes one value")),
    "proxy-width-given-twice-once-with-equals": Case(proxy("--width", "16", "--width=32"),
                                                     ("--width:", "given 2 times")),
    "verify-values-given-as-itself-and-its-alias": Case(lambda root: ["verify", write_spec(root), "--values", "1,2",
                                                                      "--lrs", "3,4"], ("--values/--lrs:", "given 2")),
    "launch-backend-flag-given-as-itself-and-its-alias": Case(lambda root: ["launch", run_config(root),
                                                                            "--gpus-per-node", "0",
                                                                            "--gpus-per-task", "0"],
                                                              ("--gpus-per-node/--gpus-per-task:", "given 2")),
    "results-switch-and-its-negation": Case(lambda root: ["results", "x", "--plots", "--no-plots"],
                                            ("--plots/--no-plots:", "given 2 times")),
    # found by an outside tester: `plan` takes --tokens 26e9, transfer read "unable to parse string as an integer"
    "transfer-tokens-not-whole": Case(lambda root: ["transfer", write_spec(root), "--width", "64", "--tokens",
                                                    "2500.5"], ("--tokens:", "a whole number (e.g. 26e9), got 2500.5")),
    # found by an outside tester: the spec was given, and the line asked for it
    "transfer-of-a-sweep-never-run": Case(lambda root: ["transfer", write_spec(root), "--width", "64"],
                                          ("study: no sweep named 'tiny'", "run `sweep proxy", "--width W` first")),
    "transfer-out-given-twice": Case(lambda root: ["transfer", write_spec(root), "--width", "64", "--out", "a.yaml",
                                                   "--out", "b.yaml"], ("--out:", "given 2 times")),
    "device-memory-past-any-device": Case(lambda root: ["transfer", write_spec(root), "--width", "64",
                                                        "--device-memory", "1e308"],  # a traceback (tester)
                                          ("--device-memory", "1048576")),
    # `sweep plan` refuses a full run under 50 steps; transfer wrote one of a single step
    **{f"transfer-steps-{steps}": Case(lambda root, steps=steps: ["transfer", write_spec(root), "--width", "64",
                                                                  "--steps", steps], ("--steps: at least 50", steps))
       for steps in ("1", "49", "0")},
    "unknown-batch-rule": Case(lambda root: ["transfer", write_spec(root), "--width", "64", "--batch-rule", "cubic"],
                               ("--batch-rule:", "'cubic' is not one of none, linear, sqrt, noise")),
    "coord-check-one-width": Case(lambda root: ["coord-check", "--model", "mlp", "--widths", "32"],
                                  ("--widths:", "at least two distinct positive widths")),
    # found by a hostile user: --lr 0 trained nothing, printed nan slopes as "pass", then a traceback
    "coord-check-lr-zero": Case(lambda root: ["coord-check", "--model", "mlp", "--widths", "32,64", "--lr", "0"],
                                ("--lr:", "above 0 and at most 10000")),
    "coord-check-lr-overflow": Case(lambda root: ["coord-check", "--model", "mlp", "--widths", "32,64", "--lr",
                                                  "1e308"], ("--lr:", "above 0 and at most 10000")),
    # found by the fuzzer: a model option the builder refuses was met only after launch.json was written
    "launch-model-option-refused-by-the-builder": Case(
        lambda root: ["launch", run_config(root, **{"model.options": {"block_size": 0}})],
        ("model.options.block_size:", "positive integer")),
    # found by a hostile user: a step budget no machine will ever train
    "train-steps-beyond-any-budget": Case(lambda root: ["train", run_config(root, steps=10**23)],
                                          ("steps:", "less than or equal to 1000000000000")),
    "launch-unknown-backend": Case(lambda root: ["launch", run_config(root), "--backend", "k8s"],
                                   ("--backend:", "'k8s' is not one of local, ray, slurm")),
    # found by the fuzzer through `sweep doctor`: the first forward pass failed with a traceback, after the run's folder
    "train-block-shorter-than-its-sequence": Case(train(**{"data.seq_len": 32}),
                                                  ("model.options.block_size:", "shorter than data.seq_len 32")),
    "doctor-block-shorter-than-its-sequence": Case(lambda root: ["doctor", run_config(root, **{"data.seq_len": 32})],
                                                   ("model.options.block_size:", "shorter than data.seq_len 32")),
    # found by an outside tester: `sweep plan` imported and called os.system, then blamed model.options
    "train-builder-that-is-not-a-mup-builder": Case(train(**{"model.name": "os:system"}),
                                                    ("model.name:", "'os:system' is not a μP builder")),
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
    "config-wrong-type": Case(train(steps="ten"), ("steps:", "an integer", "'ten'")),
    "config-nan-lr": Case(train(**{"optimizer.lr": float("nan")}), ("optimizer.lr:", "finite number")),
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
                    "vocab_size": 256, "seq_len": 16, "options": {}})], ("data.path:", "not a multiple of 2")),
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
    # ---- YAML: bounded whatever the file (duplicate keys, aliases, size, special files)
    "yaml-alias-bomb": Case(spec_text(BOMB), ("spec:", "aliases expand it past 100000 nodes")),
    "yaml-duplicate-key": Case(spec_text("name: tiny\nname: other\nsearch: {optimizer.lr: 0.01}\n"),
                               ("spec:", "key 'name' is given twice")),
    "yaml-duplicate-nested-key": Case(train_text("steps: 2\noptimizer: {lr: 0.1, lr: 0.2}\n"),
                                      ("config:", "key 'lr' is given twice")),
    "yaml-too-big": Case(spec_text("name: tiny\n" + "#" * (1 << 20) + "\n"), ("spec:", "over the 1048576")),
    "yaml-spec-is-a-folder": Case(lambda root: ["proxy", root, "--width", "16"], ("spec:", "not a regular file")),
    "yaml-spec-is-dev-zero": Case(lambda root: ["proxy", "/dev/zero", "--width", "16"],
                                  ("spec:", "not a regular file")),
    "yaml-config-is-a-fifo": Case(lambda root: ["train", fifo(root)], ("config:", "not a regular file")),
    "yaml-config-symlink-loop": Case(lambda root: ["train", symlink_loop(root)], ("config:", "symbolic links")),
    "yaml-doctor-is-dev-zero": Case(lambda root: ["doctor", "/dev/zero"], ("config:", "not a regular file")),
    # ---- names: a strict pattern, never . or .., bounded length
    "name-dot": Case(proxy(name="."), ("name:", "(got '.')", "not starting with '.'")),
    "name-dot-dot": Case(proxy(name=".."), ("name:", "(got '..')")),
    "name-slash": Case(proxy(name="a/../../b"), ("name:", "a name of 1 to 100")),
    "name-300-characters": Case(proxy(name="n" * 300), ("name:", "1 to 100 letters")),
    "name-flag-like": Case(proxy(name="-rf"), ("name:", "a name of 1 to 100")),
    "output-study-dot-dot": Case(train(**{"output.study": ".."}), ("output.study:", "(got '..')")),
    "output-run-dot-dot": Case(train(**{"output.run": ".."}), ("output.run:", "(got '..')")),
    "output-run-300-characters": Case(train(**{"output.run": "r" * 300}), ("output.run:", "1 to 100 letters")),
    "results-name-dot-dot": Case(lambda root: ["results", "..", "--no-plots"], ("study:", "(got '..')")),
    "export-name-dot": Case(lambda root: ["export", "."], ("study:", "(got '.')")),
    "report-name-dot-dot": Case(lambda root: ["report", ".."], ("study:", "(got '..')")),
    "status-name-dot-dot": Case(lambda root: ["status", ".."], ("study:", "(got '..')")),
    "sql-study-dot-dot": Case(lambda root: ["sql", "select 1", "--study", ".."], ("--study:", "(got '..')")),
    "compare-study-outside": Case(lambda root: ["compare", "r", "--study", "../outside"],
                                  ("--study:", "a name of 1 to 100")),
    # ---- paths: nothing under the results root is read through a symlink leading out of it
    "sql-config-yaml-linked-out": Case(reading("config.yaml", "sql", "select * from runs"),
                                       ("runs:", "leads out of the results root")),
    "sql-result-json-linked-out": Case(reading("result.json", "sql", "select * from runs"),
                                       ("runs:", "leads out of the results root")),
    "sql-run-folder-linked-out": Case(reading("run", "sql", "select * from runs"),
                                      ("runs:", "leads out of the results root")),
    "export-config-yaml-linked-out": Case(reading("config.yaml", "export", "bad"),
                                          ("runs:", "leads out of the results root")),
    "compare-config-yaml-linked-out": Case(reading("config.yaml", "compare", "r"),
                                           ("runs:", "leads out of the results root")),
    # a config named under the root is read only inside it (one named elsewhere is the user's): launch trained it
    **{f"{command}-config-linked-out": Case(config_linked_out(command), ("CONFIG:", "leads out of the results root"))
       for command in ("launch", "train", "doctor")},
    # found by an outside tester: the checkpoints and the result were written through the link
    **{f"{command}-into-a-runs-folder-linked-out": Case(runs_linked_out(command),
                                                       ("output.run:", "leads out of the results root"))
       for command in ("launch", "train")},
    "launch-into-a-run-folder-whose-config-is-linked-out": Case(
        lambda root: (run_folder_linked_out("config.yaml")(root),
                      ["launch", run_config(root, **{"output.run": "r"})])[1],
        ("output.run:", "config.yaml leads out of the results root")),
    "status-run-folder-linked-out": Case(lambda root: (run_folder_linked_out("run")(root),
                                                       (root / "outside" / "launch.json").write_text("{}"),
                                                       ["status"])[2], ("runs:", "leads out of the results root")),
    # ---- data: a regular file or a folder of them
    "data-fifo": Case(special_data(fifo), ("data.path:", "not a regular file or a folder")),
    "data-dev-zero": Case(special_data(lambda root: "/dev/zero"), ("data.path:", "not a regular file or a folder")),
    "data-symlink-loop": Case(special_data(symlink_loop), ("data.path:", "symbolic links")),
    "data-tokens-fifo": Case(proxy_on(lambda root: tokens_run(fifo(root))), ("data.path:", "not a regular file")),
    "data-through-a-file": Case(special_data(lambda root: str(file(root, "notes.txt", "x") / "corpus.txt")),
                                ("data.path:", "cannot be opened", "Not a directory")),
    # ---- numbers: finite, in range
    "timeout-nan": Case(proxy("--width", "16", "--timeout", "nan"), ("--timeout:", "finite number", "nan")),
    "timeout-inf": Case(proxy("--width", "16", "--timeout", "inf"), ("--timeout:", "finite number")),
    "timeout-negative": Case(proxy("--width", "16", "--timeout", "-1"), ("--timeout:", "positive number of minutes")),
    "mem-inf": Case(proxy("--width", "16", "--mem", "inf"), ("--mem:", "finite number")),
    "verify-study-name-past-the-rule": Case(lambda root: ["verify", write_spec(root, name="n" * 100)],
                                            ("name:", "at most 86 characters")),  # the suffix with a refinement round
    # the fuzzer's (tests/fuzz): a plan nested past the YAML bound was a RecursionError; a ladder without a name
    # whose rung verify refuses, a KeyError while naming it
    "plan-nested-past-the-yaml-bound": Case(verify_plan(tail="deep: " + "[" * 50_000 + "]" * 50_000 + "\n"),
                                            ("--plan:", "not valid YAML", "nests deeper than 100 levels")),
    "plan-ladder-without-a-name": Case(verify_plan(far_rung_without_a_name),
                                       ("--plan: ladders[0].name:", "the name of the law across width", "got None")),
    # a flag the plan sets, typed beside --plan, was ignored for the plan's own (exit 0, the plan run as written);
    # --widths was refused naming `--across width=…`, which the user never typed
    **{f"plan-with{flag}={value}": Case(verify_plan(flags=(flag, value)),
                                        (f"{flag}: set by the plan", "not given with --plan"))
       for flag, value in (("--across", "tokens=1,2"), ("--seeds", "3"), ("--seeds", "2"), ("--param", "optimizer.lr"),
                           ("--values", "0.01,0.02"), ("--range", "0.001,0.1,3"), ("--parametrizations", "mup"),
                           ("--widths", "16,32"))},
    "plan-with--lrs": Case(verify_plan(flags=("--lrs", "0.01,0.02")), ("--values: set by the plan",)),
    # a hand-edited plan: a key it does not write, a law's ladder twice, a rung no ladder needs (1e14 tokens trained)
    "plan-unknown-key": Case(verify_plan(lambda p: p.update(extra=1)), ("--plan: extra: not a plan field",)),
    "plan-unknown-ladder-key": Case(verify_plan(lambda p: p["ladders"][0].update(range=[1, 2])),
                                    ("--plan: ladders[0].range: not a ladder field",)),
    "plan-ladder-twice": Case(verify_plan(lambda p: p["ladders"].append(p["ladders"][0])),
                              ("--plan: ladders[2]: a second ladder of optimizer.lr across width",)),
    "plan-rung-past-reach": Case(verify_plan(lambda p: p["ladders"][0]["rungs"].append(10 ** 14)),
                                 ("--plan: ladders[0].rungs: within", "got 1e+14")),
    # and `sweep plan --goal 1e9` wrote a plan that verify's reader refused (goal at most 100 octaves)
    "plan-goal-past-what-verify-reads": Case(lambda root: ["plan", write_spec(root), "--tokens", "6400", "--width",
                                                           "256", "--goal", "1e9"], ("--goal:", "to 100 octaves")),
    "plan-goal-below-what-verify-reads": Case(lambda root: ["plan", write_spec(root), "--tokens", "6400", "--width",
                                                            "256", "--goal", "1e-9"], ("--goal:", "1e-06 to")),
    "max-drift-nan": Case(lambda root: ["verify", write_spec(root), "--max-drift", "nan"], ("--max-drift:", "finite")),
    # typer's range check met a nan first: "--lr-max … greater than or equal to 0", "--device-memory … ≤ 1048576"
    "lr-max-nan": Case(lambda root: ["doctor", run_config(root), "--lr-max", "nan"],
                       ("--lr-max: must be a finite number of at least 0, got nan",)),
    **{f"device-memory-{value}": Case(lambda root, value=value: ["transfer", write_spec(root), "--width", "64",
                                                                 "--device-memory", value],
                                      ("--device-memory: must be a finite number from 0.001 to 1048576", value))
       for value in ("nan", "inf", "1e400")},
    "config-inf-lr": Case(train(**{"optimizer.lr": float("inf")}), ("optimizer.lr:", "finite number")),
    "config-inf-grad-clip": Case(train(**{"optimizer.grad_clip": float("inf")}), ("optimizer.grad_clip:", "finite")),
    "spec-inf-storage-retry": Case(proxy(storage_retry_s=float("inf")), ("storage_retry_s:", "finite number")),
    # ---- outputs: checked before any work
    "sql-out-existing-folder": Case(lambda root: ["sql", "select 1", "--format", "csv", "--out", root],
                                    ("--out:", "is a folder")),
    "report-out-existing-folder": Case(lambda root: ["report", "x", "--out", root], ("--out:", "is a folder")),
    "compare-out-existing-folder": Case(lambda root: ["compare", "r", "--out", root], ("--out:", "is a folder")),
    "doctor-out-existing-folder": Case(lambda root: ["doctor", run_config(root), "--out", root],
                                       ("--out:", "is a folder")),
    "transfer-out-existing-folder": Case(lambda root: ["transfer", write_spec(root), "--width", "64", "--out", root],
                                         ("--out:", "is a folder")),
    # a name past the file system's 255 bytes: ENAMETOOLONG was a traceback when the file was opened
    "export-out-name-too-long": Case(lambda root: ["export", "x", "--out", "x" * 300], ("--out:", "at most 255 bytes")),
    "init-out-name-too-long": Case(lambda root: ["init", "demo", "--out", "x" * 300], ("--out:", "at most 255 bytes")),
    "report-out-name-too-long": Case(lambda root: ["report", "x", "--out", "x" * 300], ("--out:", "at most 255 bytes")),
    "train-config-name-too-long": Case(lambda root: ["train", "y" * 256 + ".yaml"], ("CONFIG:", "at most 255 bytes")),
    "train-tensorboard-name-too-long": Case(
        lambda root: ["train", run_config(root, **{"logging.tensorboard": "t" * 300})],
        ("logging.tensorboard:", "at most 255 bytes")),
    "sql-out-path-too-long": Case(lambda root: ["sql", "select 1", "--out", "/".join(["x" * 200] * 21)],
                                  ("--out:", "at most 4095 bytes")),
    "export-out-below-a-file": Case(lambda root: ["export", "x", "--out", file(root, "notes.txt", "x") / "export"],
                                    ("--out:", "notes.txt is a file, not a folder")),
    "sweep-root-is-a-file": Case(lambda root: (os.environ.__setitem__("SWEEP_ROOT", str(file(root, "r.txt", "x"))),
                                               ["status"])[1], ("results root ($SWEEP_ROOT):", "is not a folder")),
    "sweep-root-is-a-file-proxy": Case(lambda root: (os.environ.__setitem__("SWEEP_ROOT",
                                                                            str(file(root, "r.txt", "x"))),
                                                     ["proxy", write_spec(root), "--width", "16"])[1],
                                       ("results root ($SWEEP_ROOT):", "is not a folder")),
    "launch-sweep-root-with-a-newline": Case(lambda root: (os.environ.__setitem__("SWEEP_ROOT", str(root / "r\nx")),
                                                           ["launch", file(root, "run.yaml", yaml.safe_dump(RUN))])[1],
                                             ("results root ($SWEEP_ROOT):", "without control characters")),
    # ---- resources: parameters + optimizer state, and data, against the machine's memory
    "resource-width": Case(proxy("--width", "65536"), ("model.width:", "needs", "GiB of memory", "available",
                                                        "SWEEP_ALLOW_BIG=1")),
    "resource-vocabulary": Case(lambda root: ["train", run_config(root, data=tokens_run(tokens(
        root, np.arange(4096, dtype=np.uint16)), vocab_size=200_000_000)["data"] | {"seq_len": 16})],
        ("model.width:", "vocabulary 200000000", "GiB of memory", "available")),
    "resource-synthetic-vocabulary": Case(train(**{"data.vocab_size": 200_000_000}),
                                          ("data:", "vocabulary of 200,000,000", "GiB of memory", "available")),
    "resource-train-width": Case(train(**{"model.width": 1 << 17}), ("model.width:", "GiB of memory", "available")),
    "resource-inspect-width": Case(lambda root: ["inspect", "gpt", "--width", "131072"], ("model.width:", "available")),
    "resource-synthetic-tokens": Case(train(**{"data.options": {"n_tokens": 10 ** 12}}),
                                      ("data:", "GiB of memory", "available")),
    "resource-searched-block-size": Case(proxy(search={"model.options.block_size": {"type": "int", "low": 16,
                                                                                    "high": 10 ** 9}}),
                                         ("search.model.options.block_size:", "1000000000", "GiB of memory")),
    # ---- search spaces: every point valid, categoricals of one type, no log+step on ints
    "space-head-count-lattice": Case(proxy(search={"model.options.n_head": {"type": "int", "low": 1, "high": 4}}),
                                     ("search.model.options.n_head:", "3 is rejected", "does not split into 3 heads")),
    "space-head-dim-choices": Case(proxy(search={"model.options.head_dim": {"choices": [8, 16, 12]}}),
                                   ("search.model.options.head_dim:", "12 is rejected")),
    "space-batch-lattice": Case(proxy(run={"grad_accum": 4}, search={"batch_size": {"type": "int", "low": 4, "high": 12,
                                                                                    "step": 2}}),
                                ("search.batch_size:", "6 is rejected", "not divisible by grad_accum 4")),
    "space-mixed-categorical": Case(proxy(search={"optimizer.weight_decay": {"choices": [0.1, "0.1"]}}),
                                    ("search.optimizer.weight_decay.choices:", "mix number, string", "one type")),
    "space-bool-among-numbers": Case(proxy(search={"model.options.zero_readout": {"choices": [True, 1]}}),
                                     ("choices:", "mix boolean, number")),
    "space-int-log-and-step": Case(proxy(search={"batch_size": {"type": "int", "low": 4, "high": 16, "log": True,
                                                                "step": 4}}),
                                   ("search.batch_size.step:", "not allowed with log: true")),
    "space-int-log-and-step-1": Case(proxy(search={"batch_size": {"type": "int", "low": 4, "high": 16, "log": True,
                                                                  "step": 1}}),
                                     ("search.batch_size.step:", "not allowed with log: true")),
    "space-inf-in-range": Case(proxy(search={"optimizer.lr": {"low": 1e-3, "high": float("inf")}}),
                               ("search.optimizer.lr", "finite")),
}


# ------------------------------------------------------------------ the test

def tree(folder: Path) -> dict[str, tuple]:
    """Every path under `folder` (folders too: a file made and removed again changes its folder's time)
    with its kind, size and modification time in nanoseconds."""
    return {str(p.relative_to(folder)): (p.is_dir(), p.lstat().st_size, p.lstat().st_mtime_ns)
            for p in [folder, *folder.rglob("*")]}  # lstat: a symlink loop is a case's input


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


def test_an_option_declared_as_a_list_takes_each_value_given(run_cli):
    """The refusal of a repeated option (OnceEach, sweep/argv/repeats.py) leaves list options alone: both --set
    apply."""
    code, out, err = run_cli("inspect", "gpt", "--width", "64", "--depth", "1", "--set",
                             "optimizer.roles.embedding.lr_mult=4", "--set", "optimizer.roles.readout.lr_mult=2")
    assert code in (0, None), err
    cells = [[cell.strip() for cell in line.split("│")[1:-1]] for line in out.splitlines() if line.startswith("│")]
    role_lr = {row[0]: row[9] for row in cells}  # the column `role LR ×`
    assert role_lr["wte.weight"] == "4" and role_lr["lm_head.weight"] == "2"


def test_help_is_shown_whatever_else_the_line_repeats(run_cli):
    code, out, err = run_cli("verify", "spec.yaml", "--across", "width=16,32", "--across", "tokens=1", "--help")
    assert code in (0, None) and "--across" in out and not err, err
