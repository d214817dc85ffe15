"""Tests for trainer.config.RunConfig and `sweep train`: exact YAML round trip, one-line errors naming
the key (in Python and at the CLI, with nothing written), token budgets, run ids, and resume."""

import math

import pytest
import yaml

from trainer.config import ROLES, SETTINGS, UNUSED, ConfigError, RunConfig
from trainer.curves import read_curves
from trainer.loop import train
from trainer.resolve import resolve

TINY = {
    "model": {"name": "gpt", "width": 64, "depth": 1},
    "data": {"kind": "synthetic-tokens", "seq_len": 32, "options": {"n_tokens": 20000}},
    "batch_size": 8,
    "steps": 6,
    "log_every": 1,
    "eval": {"every": 3, "batches": 2, "noise_scale_batches": 0},
}
SEQ_LEN = TINY["data"]["seq_len"]


def tiny(root, **changes):
    """The tiny config as a plain dict, writing under `root`; `changes` replace top-level keys or merge into
    sections."""
    data = {key: dict(value) if isinstance(value, dict) else value for key, value in TINY.items()}
    data["output"] = {"root": str(root), "study": "t"}
    for key, value in changes.items():
        if isinstance(value, dict) and isinstance(data.get(key), dict):
            data[key] = {**data[key], **value}
        else:
            data[key] = value
    return data


def write_config(path, data) -> str:
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return str(path)


def one_line(text: str) -> str:
    """`text` is exactly one newline-terminated line; returns it without the newline."""
    assert text.endswith("\n") and text.count("\n") == 1, f"expected one line, got {text!r}"
    return text.rstrip("\n")


# ---------------------------------------------------------------- YAML round trip

EVERYTHING = {  # every field of every section away from its default
    "schema_version": 1,  # the only one there is so far
    "model": {"name": "gpt", "width": 96, "depth": 3, "parametrization": "sp", "base_width": 32,
              "options": {"n_head": 4, "norm": "rmsnorm", "output_mult": 2.5, "attn_mult": 1 / 3, "tag": "007"},
              "init": {role: 0.5 + i / 16 for i, role in enumerate(ROLES)}},
    "data": {"kind": "tokens", "path": "/data/owt", "seq_len": 64, "dtype": "uint32", "vocab_size": 50304,
             "val_fraction": 0.05, "options": {"n_tokens": 123}},
    "optimizer": {"name": "sgd", "lr": 3e-4, "weight_decay": 0.1, "wd_mode": "independent", "decay_embeddings": True,
                  "beta1": 0.9, "beta2": 0.95, "eps": 1e-8, "momentum": 0.5, "grad_clip": None,  # SGD: β, ε unread
                  "roles": {role: {"lr_mult": 2.0 + i, "weight_decay_mult": 1 / (2 + i), "lr_width_exp": -(1 + i) / 10}
                            for i, role in enumerate(ROLES)}},
    "schedule": {"kind": "wsd", "warmup_steps": None, "warmup_fraction": 0.05, "min_lr_ratio": 0.1 + 0.2,
                 "decay_fraction": 0.3, "decay_shape": "sqrt"},
    "batch_size": 24,
    "grad_accum": 3,
    "steps": None,
    "tokens": 1_000_000,
    "precision": "bf16",
    "compile": True,
    "seed": 7,
    "device": "cuda:1",
    "log_every": 5,
    "divergence_factor": 3.5,
    "z_loss": 1e-4,
    "guard": {"enabled": False, "action": "skip", "rule": "zscore", "factor": 2.0, "zscore": 4.0, "window": 50,
              "rewind_steps": 200, "ring_every": 100, "ring_size": 3, "max_rewinds": 2},
    "parallel": {"kind": "fsdp", "reshard_after_forward": False, "timeout_s": 7200.0},
    "activation_checkpointing": True,
    "signals": {"every": 10},
    "logging": {"tensorboard": "/tmp/tb", "mlflow": {"tracking_uri": "http://127.0.0.1:5000", "experiment": "e"},
                "wandb": {"mode": "online", "project": "p", "dir": "/tmp/wandb"}},
    "eval": {"every": 50, "batches": 4, "noise_scale_batches": 2, "seed": 7},
    "checkpoint": {"every": 100, "keep": 3},
    "output": {"root": "/tmp/studies", "study": "s1", "kind": "full", "run": "r-1"},
    "provenance": {"study": "s0", "trial": 12, "storage": "postgresql://u@db/optuna",
                   "created_by": "sweep transfer (μP)", "trial_value": 2.5, "proxy": {"width": 64, "batch_size": 8},
                   "verify": {"drift_mup": 0.25},
                   "rules": [{"name": "lr", "field": "optimizer.lr", "before": 1e-8, "after": 3e-4,
                              "formula": "lr * (base / width)"},
                             {"name": "batch", "field": "batch_size", "before": 8, "after": 24, "formula": None}],
                   "laws": [{"param": "optimizer.lr", "axis": "batch_size", "slope": 0.5}],
                   "prediction": {"loss": 2.5, "low": 2.4, "high": 2.6}, "tuning": {"share": 0.07}},
}


def leaves(model, prefix=""):
    for name in type(model).model_fields:
        value = getattr(model, name)
        if hasattr(type(value), "model_fields"):
            yield from leaves(value, f"{prefix}{name}.")
        else:
            yield f"{prefix}{name}", value


def test_round_trip_fixture_sets_every_field_away_from_its_default():
    # keeps the round-trip test honest: a field added later must be added to EVERYTHING too
    # an unset section: its own defaults (the MLflow URI has none: any value stands for it)
    defaults = dict(leaves(RunConfig.parse({"steps": 1, "parallel": {}, "logging": {
        "tensorboard": None, "mlflow": {"tracking_uri": "file:/"}, "wandb": {}}})))
    cfg = RunConfig.parse(EVERYTHING)
    # an optimizer's own section is set only with its name, and SGD reads no β or ε (EVERYTHING uses sgd):
    # tests/test_optimizers.py round-trips each section and test_adam_settings_round_trip_away_from_their_defaults
    # the β's and ε
    sections = tuple(f"optimizer.{name}" for name in (*SETTINGS, *UNUSED["sgd"]))
    same = [key for key, value in leaves(cfg) if value == defaults[key]
            and key not in ("schema_version", "model.name", "schedule.warmup_steps", "steps", *sections)]
    assert same == [], f"EVERYTHING leaves these at their default: {same}"


def test_adam_settings_round_trip_away_from_their_defaults():
    adam = {"name": "adamw", "beta1": 0.8, "beta2": 0.99, "eps": 1e-10}
    cfg = RunConfig.parse({**EVERYTHING, "optimizer": {**EVERYTHING["optimizer"], **adam, "momentum": 0.9}})
    assert RunConfig.from_yaml(cfg.to_yaml()) == cfg
    assert (cfg.optimizer.beta1, cfg.optimizer.beta2, cfg.optimizer.eps) == (0.8, 0.99, 1e-10)


def test_layout_sections_leave_dumps_and_run_ids_as_they_were():
    """`parallel` and `activation_checkpointing` unset are not dumped (configs written before them stay byte for
    byte), and set they do not rename the run: where its state lives does not change its curve."""
    plain = RunConfig.parse({"steps": 1})
    assert "parallel" not in plain.to_yaml() and "activation_checkpointing" not in plain.to_yaml()
    laid_out = RunConfig.parse({"steps": 1, "parallel": {"kind": "fsdp"}, "activation_checkpointing": True})
    assert laid_out.run_id() == plain.run_id()
    assert RunConfig.from_yaml(laid_out.to_yaml()) == laid_out


def test_yaml_round_trip_is_exact():
    cfg = RunConfig.parse(EVERYTHING)
    text = cfg.to_yaml()
    back = RunConfig.from_yaml(text)
    assert back == cfg
    assert back.to_yaml() == text  # byte-identical on a second dump
    # the values survive with their types: floats bit for bit, ints stay ints, digit strings stay strings
    assert back.optimizer.lr == 3e-4 and back.optimizer.momentum == 0.5 and back.schedule.min_lr_ratio == 0.1 + 0.2
    assert back.model.options == EVERYTHING["model"]["options"]
    assert type(back.model.options["n_head"]) is int and back.model.options["tag"] == "007"
    assert back.model.options["attn_mult"] == 1 / 3
    assert back.provenance.rules == EVERYTHING["provenance"]["rules"]
    assert back.provenance.rules[0]["before"] == 1e-8
    assert back.model_dump() == EVERYTHING
    assert back.run_id() == cfg.run_id() == "r-1"


def test_round_trip_of_defaults_and_load_from_a_file(tmp_path):
    cfg = RunConfig.parse(tiny(tmp_path / "out"))
    path = tmp_path / "run.yaml"
    path.write_text(cfg.to_yaml())
    loaded = RunConfig.load(path)
    assert loaded == cfg and loaded.to_yaml() == cfg.to_yaml()
    assert loaded.run_id() == cfg.run_id()  # a derived run id survives the round trip


# ---------------------------------------------------------------- bad configs, in Python

@pytest.mark.parametrize("changes,key", [
    ({"colour": "red"}, "colour"),
    ({"optimizer": {"lrr": 1}}, "optimizer.lrr"),
    ({"eval": {"evry": 3}}, "eval.evry"),
    ({"output": {"studdy": "x"}}, "output.studdy"),
    ({"guard": {"k": 1.5}}, "guard.k"),
])
def test_unknown_key_is_one_line_starting_with_its_path_and_listing_the_allowed_keys(tmp_path, changes, key):
    with pytest.raises(ConfigError) as info:
        RunConfig.parse(tiny(tmp_path, **changes))
    message = str(info.value)
    assert "\n" not in message
    assert message.startswith(f"{key}: unknown key")
    section = RunConfig if "." not in key else type(getattr(RunConfig.parse(tiny(tmp_path)), key.split(".")[0]))
    allowed = list(section.model_fields)
    assert f"(allowed: {', '.join(allowed)})" in message  # every allowed key, in declaration order


@pytest.mark.parametrize("changes,start", [
    ({"optimizer": {"lr": -1}}, "optimizer.lr:"),
    ({"optimizer": {"lr": 0}}, "optimizer.lr:"),
    ({"model": {"width": 0}}, "model.width:"),
    ({"optimizer": {"beta2": 1.0}}, "optimizer.beta2:"),
    ({"data": {"val_fraction": 1.5}}, "data.val_fraction:"),
    ({"data": {"val_fraction": 0}}, "data.val_fraction:"),
    ({"precision": "fp8"}, "precision:"),
    ({"schedule": {"kind": "foo"}}, "schedule.kind:"),
    ({"schedule": {"decay_shape": "exp"}}, "schedule.decay_shape:"),
    ({"device": "tpu"}, "device:"),
    ({"output": {"study": "a/b"}}, "output.study:"),
    ({"batch_size": 0}, "batch_size:"),
    ({"steps": "many"}, "steps:"),
    ({"guard": {"factor": 1.0}}, "guard.factor:"),
    ({"guard": {"action": "pause"}}, "guard.action:"),
    ({"z_loss": -1e-4}, "z_loss:"),
    ({"signals": {"every": -1}}, "signals.every:"),
    # numbers the schema took that a run then looped over or allocated (found by the fuzzer's schema mutation)
    ({"eval": {"batches": 2**63}}, "eval.batches:"),
    ({"eval": {"noise_scale_batches": 10**30}}, "eval.noise_scale_batches:"),
    ({"guard": {"window": 2**63}}, "guard.window:"),
    ({"guard": {"ring_size": 10**30}}, "guard.ring_size:"),
    ({"seed": 2**63}, "seed:"),
    # a boolean where a number goes (pydantic's lax mode read `true` as 1; found by an outside tester)
    ({"optimizer": {"roles": {"hidden": {"lr_mult": True}}}}, "optimizer.roles.hidden.lr_mult:"),
    ({"optimizer": {"weight_decay": True}}, "optimizer.weight_decay:"),
    ({"batch_size": False}, "batch_size:"),
])
def test_out_of_range_value_names_its_key_and_the_bad_value(tmp_path, changes, start):
    with pytest.raises(ConfigError) as info:
        RunConfig.parse(tiny(tmp_path, **changes))
    message = str(info.value)
    assert "\n" not in message and message.startswith(start), message
    assert "(got " in message  # the offending value is shown


@pytest.mark.parametrize("changes,names", [
    ({"tokens": 1000}, ["steps", "tokens"]),  # both
    ({"steps": None}, ["steps", "tokens"]),  # neither
    ({"grad_accum": 3}, ["batch_size", "grad_accum"]),  # 8 % 3
    ({"schedule": {"warmup_steps": 1, "warmup_fraction": 0.1}}, ["schedule", "warmup_steps", "warmup_fraction"]),
    ({"eval": {"noise_scale_batches": 1}}, ["eval", "noise_scale_batches"]),
    ({"guard": {"ring_size": 2, "ring_every": 10, "rewind_steps": 50}},
     ["guard", "ring_size", "ring_every", "rewind_steps"]),
])
def test_rules_across_keys_name_the_keys(tmp_path, changes, names):
    with pytest.raises(ConfigError) as info:
        RunConfig.parse(tiny(tmp_path, **changes))
    message = str(info.value)
    assert "\n" not in message
    assert message.startswith(names[0]), message
    for name in names:
        assert name in message


@pytest.mark.parametrize("text", ["model: {name: gpt\n", "steps: [1,\n", "a: b: c\n", "\tsteps: 3\n"])
def test_not_yaml_is_one_line(text):
    with pytest.raises(ConfigError) as info:
        RunConfig.from_yaml(text)
    message = str(info.value)
    assert "\n" not in message and message.startswith("config: not valid YAML"), message


@pytest.mark.parametrize("text", ["- a\n- b\n", "just text\n", "42\n"])
def test_yaml_that_is_not_a_mapping_is_one_line(text):
    with pytest.raises(ConfigError) as info:
        RunConfig.from_yaml(text)
    assert "\n" not in str(info.value) and str(info.value).startswith("config:")


def test_load_of_a_missing_file(tmp_path):
    with pytest.raises(ConfigError, match=r"^config: .*nope\.yaml does not exist$"):
        RunConfig.load(tmp_path / "nope.yaml")


# ------------------------------------------------------------ bad configs at the CLI: exit 2, one line, nothing written

@pytest.mark.parametrize("changes,key", [
    ({"optimizer": {"lrr": 1}}, "optimizer.lrr"),
    ({"optimizer": {"lr": -1}}, "optimizer.lr"),
    ({"precision": "fp8"}, "precision"),
    ({"tokens": 1000}, "tokens"),
    ({"eval": {"noise_scale_batches": 1}}, "noise_scale_batches"),
    ({"schedule": {"warmup_steps": 6}}, "schedule.warmup_steps"),  # raised by the trainer, not the schema
    ({"data": {"kind": "nope"}}, "data.kind"),  # raised by open_data
    ({"guard": {"action": "pause"}}, "guard.action"),
    ({"seed": 10**20}, "seed"),  # past what a torch generator takes: a traceback from the data's generator
    ({"eval": {"seed": 2**63}}, "eval.seed"),
])
def test_cli_bad_config_exits_2_with_one_line_and_writes_nothing(tmp_path, run_cli, changes, key):
    root = tmp_path / "out"
    path = write_config(tmp_path / "bad.yaml", tiny(root, **changes))
    code, out, err = run_cli("train", path, "--quiet")
    assert code == 2, err
    line = one_line(err)
    assert line.startswith("error: ") and key in line, line
    assert "Traceback" not in out + err
    assert not root.exists(), sorted(str(p) for p in root.rglob("*"))


def test_cli_warmup_as_long_as_the_run_names_the_field(tmp_path, run_cli):
    root = tmp_path / "out"
    path = write_config(tmp_path / "warm.yaml", tiny(root, schedule={"warmup_steps": 6}))
    code, _, err = run_cli("train", path)
    assert code == 2
    assert one_line(err).startswith("error: schedule.warmup_steps: 6 ")
    assert not root.exists()  # the schedule is checked before anything is written
    # one step shorter is fine
    path = write_config(tmp_path / "warm5.yaml", tiny(root, schedule={"warmup_steps": 5}))
    code, _, err = run_cli("train", path, "--quiet")
    assert code == 0, err


def test_cli_not_yaml_and_missing_path(tmp_path, run_cli):
    bad = tmp_path / "bad.yaml"
    bad.write_text("model: {name: gpt\nsteps: 3\n")
    code, _, err = run_cli("train", bad)
    assert code == 2 and one_line(err).startswith("error: config: not valid YAML")
    code, _, err = run_cli("train", tmp_path / "missing.yaml")
    assert code == 2
    line = one_line(err)
    assert "missing.yaml" in line and "does not exist" in line


# ---------------------------------------------------------------- budgets and run ids

def test_token_budget_rounds_up_to_whole_steps(tmp_path):
    cfg = RunConfig.parse(tiny(tmp_path, steps=None, tokens=1000))
    per_step = cfg.batch_size * SEQ_LEN  # 256 tokens per step
    assert cfg.total_steps(SEQ_LEN) == math.ceil(1000 / per_step) == 4
    result = train(cfg)
    assert result.status == "completed" and result.step == 4
    rows = read_curves(cfg.curves_root(), run=cfg.run_id())
    assert rows["step"].tolist() == [1, 2, 3, 4]
    assert rows["tokens"].tolist() == [per_step * s for s in (1, 2, 3, 4)]
    assert rows["tokens"].iloc[-1] == 1024  # ≥ the budget, by less than one step


def test_exact_token_budget_does_not_add_a_step(tmp_path):
    cfg = RunConfig.parse(tiny(tmp_path, steps=None, tokens=768))
    assert cfg.total_steps(SEQ_LEN) == 3


def test_run_id_is_a_function_of_what_shapes_the_curve(tmp_path):
    a, b = RunConfig.parse(tiny(tmp_path)), RunConfig.parse(tiny(tmp_path))
    assert a.run_id() == b.run_id()
    assert a.run_id().startswith("gpt-w64-d1-")
    assert RunConfig.parse(tiny(tmp_path, optimizer={"lr": 0.02})).run_id() != a.run_id()
    assert RunConfig.parse(tiny(tmp_path, seed=1)).run_id() != a.run_id()
    assert RunConfig.parse(tiny(tmp_path, model={"width": 128})).run_id() != a.run_id()
    # bookkeeping does not change it
    assert RunConfig.parse(tiny(tmp_path, log_every=5)).run_id() == a.run_id()
    provenance = {"study": "s", "trial": 3, "rules": [{"x": 1}]}
    assert RunConfig.parse(tiny(tmp_path, provenance=provenance)).run_id() == a.run_id()
    # nor does filling in the builder's base width (train() runs on the resolved config)
    assert resolve(a).model.base_width is not None and resolve(a).run_id() == a.run_id()
    # an explicit name wins
    assert RunConfig.parse(tiny(tmp_path, output={"run": "mine"})).run_id() == "mine"


def test_a_config_written_before_schema_version_is_version_1_and_keeps_its_run_id(tmp_path):
    # run ids name run folders on disk: the field must not rename runs written before it existed
    old = RunConfig.parse(tiny("/r"))
    assert old.schema_version == 1 and old.to_yaml().startswith("schema_version: 1\n")
    assert old.run_id() == "gpt-w64-d1-2d2b19cfb2"  # as computed before the field was added
    with pytest.raises(ConfigError, match=r"^schema_version: 2 is newer than this mup-sweep reads \(up to 1\)"):
        RunConfig.parse({**tiny("/r"), "schema_version": 2, "a_field_from_the_future": 1})


def test_run_id_takes_the_guard_and_z_loss_only_where_they_can_change_the_curve(tmp_path):
    a = RunConfig.parse(tiny(tmp_path))
    same = [{"signals": {"every": 5}},  # measuring only
            {"guard": {"enabled": True, "action": "log"}},  # records, never changes a step
            {"guard": {"enabled": False, "factor": 3.0}},  # off
            {"z_loss": 0.0}]
    for changes in same:
        assert RunConfig.parse(tiny(tmp_path, **changes)).run_id() == a.run_id(), changes
    rewind = RunConfig.parse(tiny(tmp_path, guard={"enabled": True}))
    assert rewind.run_id() != a.run_id()
    assert RunConfig.parse(tiny(tmp_path, guard={"enabled": True, "factor": 2.0})).run_id() != rewind.run_id()
    assert RunConfig.parse(tiny(tmp_path, z_loss=1e-4)).run_id() != a.run_id()
    # a full run has the guard on by default: the same settings as a proxy with it switched on
    full = RunConfig.parse(tiny(tmp_path, output={"kind": "full"}))
    assert full.guard_on() and not a.guard_on() and full.run_id() == rewind.run_id()


def test_eval_seed_judges_runs_of_any_seed_on_the_same_held_out_batches(tmp_path):
    """Bug caught: the held-out batches follow the training seed, so two seeds' losses differ by the draw of their
    val batches as well as by training (at 8 batches, more than training does), and a seed spread measures both."""
    import torch

    from trainer.build import build
    from trainer.checkpoint import list_checkpoints, load_checkpoint
    from trainer.evaluate import evaluate
    from trainer.loop import EVAL_SEED_OFFSET
    from trainer.runtime import Runtime

    plain = RunConfig.parse(tiny(tmp_path, seed=1))
    assert RunConfig.parse(tiny(tmp_path, seed=1, eval={"seed": 1})).run_id() == plain.run_id()  # its own: as before
    cfg = RunConfig.parse(tiny(tmp_path, seed=1, eval={"seed": 0}))
    assert cfg.run_id() != plain.run_id()
    result = train(cfg)
    runtime = Runtime(device=torch.device("cpu"), dtype=None, rank=0, world=1)
    built = build(cfg, runtime)
    built.model.load_state_dict(load_checkpoint(list_checkpoints(cfg.run_dir() / "checkpoints")[-1])["model"])

    def held_out(seed: int) -> float:
        return evaluate(built.model, built.data, runtime, batches=2, batch_size=8, chunks=1,
                        seed=seed + EVAL_SEED_OFFSET)

    assert result.val_loss == pytest.approx(held_out(0), rel=1e-6)
    assert held_out(1) != pytest.approx(held_out(0), rel=1e-6)


# ---------------------------------------------------------------- running twice, resume

def test_cli_second_run_needs_resume_and_resume_logs_each_step_once(tmp_path, run_cli):
    root = tmp_path / "out"
    path = write_config(tmp_path / "run.yaml", tiny(root, output={"run": "r"}))
    cfg = RunConfig.load(path)

    def steps_logged():
        return read_curves(cfg.curves_root(), run="r")["step"].tolist()

    code, out, err = run_cli("train", path, "--steps", "3")  # with the progress bar
    assert code == 0, err
    assert "completed" in out and "at step 3" in out
    assert steps_logged() == [1, 2, 3]
    checkpoints = sorted(p.name for p in (cfg.run_dir() / "checkpoints").iterdir())
    assert checkpoints == ["step-000000003.pt"]

    code, out, err = run_cli("train", path, "--quiet")  # same run, no --resume
    assert code == 2
    assert "--resume" in one_line(err)
    assert steps_logged() == [1, 2, 3]  # the refused run changed nothing
    assert sorted(p.name for p in (cfg.run_dir() / "checkpoints").iterdir()) == checkpoints

    code, out, err = run_cli("train", path, "--resume", "--quiet")  # continues from step 3 to 6
    assert code == 0, err
    assert steps_logged() == [1, 2, 3, 4, 5, 6]
    curve = cfg.curves_root() / f"study={cfg.output.study}" / f"kind={cfg.output.kind}" / "run=r"
    # a finished run is compacted into one part
    assert [p.name for p in curve.iterdir()] == ["part-000000001-000000006.parquet"]

    code, out, err = run_cli("train", path, "--quiet")  # a finished run is not overwritten either
    assert code == 2 and "--resume" in one_line(err)

    code, out, err = run_cli("train", path, "--resume", "--quiet")  # resuming a finished run is a no-op
    assert code == 0, err
    assert steps_logged() == [1, 2, 3, 4, 5, 6]


def test_resume_after_the_last_checkpoint_was_lost_relogs_those_steps_once_and_identically(tmp_path, run_cli):
    # A run killed while writing its final checkpoint: its curves already reach step 6 (they are flushed
    # first), its newest checkpoint is step 3. Resuming must drop the on-disk rows 4-6 and log them again,
    # once each, and with the same numbers (the checkpoint holds weights, optimizer, RNG and data position).
    root = tmp_path / "out"
    path = write_config(tmp_path / "run.yaml", tiny(root, output={"run": "r"}, checkpoint={"every": 3, "keep": 2}))
    cfg = RunConfig.load(path)
    code, _, err = run_cli("train", path, "--quiet")
    assert code == 0, err
    before = read_curves(cfg.curves_root(), run="r")
    checkpoints = cfg.run_dir() / "checkpoints"
    assert sorted(p.name for p in checkpoints.iterdir()) == ["step-000000003.pt", "step-000000006.pt"]
    (checkpoints / "step-000000006.pt").unlink()
    (cfg.run_dir() / "result.json").unlink()

    # the finished run's rows were compacted into one part (1-6): without the truncation its stale rows 4-6
    # would stay beside the new ones (4-4, 5-5, 6-6: resumed checkpointing every step) and be merged in twice
    path = write_config(tmp_path / "run.yaml", tiny(root, output={"run": "r"}, checkpoint={"every": 1, "keep": 2}))
    code, _, err = run_cli("train", path, "--resume", "--quiet")
    assert code == 0, err
    after = read_curves(cfg.curves_root(), run="r")
    assert after["step"].tolist() == [1, 2, 3, 4, 5, 6]
    for column in ("train_loss", "grad_norm", "lr", "tokens", "val_loss"):
        assert after[column].tolist() == pytest.approx(before[column].tolist(), rel=1e-6, nan_ok=True), column
