"""`sweep transfer` end to end: a tiny proxy sweep → a full-size RunConfig that trains as is."""
import json

import pandas as pd
import pytest

from tests.sweep_helpers import run_sweep, write_spec
from trainer.config import RunConfig


@pytest.fixture(scope="module")
def swept(tmp_path_factory):
    root = tmp_path_factory.mktemp("transfer")
    spec = write_spec(root, trials=3)
    done = run_sweep(root, "proxy", spec, "--width", "16")
    assert done.returncode == 0, done.stdout + done.stderr
    return root, spec


def test_the_emitted_config_validates_records_its_provenance_and_trains(swept):
    root, spec = swept
    out = root / "full.yaml"
    done = run_sweep(root, "transfer", spec, "--width", "64", "--batch-size", "8", "--batch-rule", "sqrt",
                     "--steps", "50", "--out", out)  # the fewest a full run takes (sweep/rules/target.py)
    assert done.returncode == 0, done.stdout + done.stderr
    cfg = RunConfig.load(out)
    assert (cfg.model.width, cfg.batch_size, cfg.steps, cfg.output.kind) == (64, 8, 50, "full")
    assert cfg.checkpoint.every > 0 and cfg.guard_on()
    prov = cfg.provenance
    assert prov.study == "tiny-w16-mup" and prov.trial is not None and prov.trial_value is not None
    assert prov.proxy == {"width": 16, "depth": 1, "parametrization": "mup", "batch_size": 4, "steps": 20,
                          "tokens": 1280}
    fields = {r["field"]: r for r in prov.rules}
    assert fields["optimizer.lr"]["after"] == pytest.approx(fields["optimizer.lr"]["before"] * 2 ** 0.5)
    assert fields["optimizer.beta1"]["after"] == pytest.approx(1 - 2 * (1 - 0.9))
    assert "optimizer.lr" in done.stdout and "Malladi" in done.stdout and "Tensor Programs V" in done.stdout

    trained = run_sweep(root, "train", out, "--quiet")
    assert trained.returncode == 0, trained.stdout + trained.stderr
    curve = pd.read_parquet(cfg.curves_root() / "study=tiny" / "kind=full")
    assert curve["step"].max() == 50


def test_a_named_trial_is_taken_as_is(swept):
    root, spec = swept
    out = root / "t0.yaml"
    assert run_sweep(root, "transfer", spec, "--width", "32", "--trial", "0", "--out", out).returncode == 0
    cfg = RunConfig.load(out)
    assert cfg.provenance.trial == 0 and cfg.model.width == 32
    assert [r["field"] for r in cfg.provenance.rules] == ["model.width", "checkpoint.every"]


def test_out_replaces_only_a_config_transfer_wrote(swept):
    """Found by an outside tester, as root: `--out /etc/passwd` replaced it with a RunConfig. A file the command did
    not write is refused, left as it was; its own config is replaced (the same command again)."""
    root, spec = swept
    precious = root / "precious.txt"
    for text in ("root:x:0:0:root:/root:/bin/bash\n", "steps: 5\n", ""):  # not YAML, another config, empty
        precious.write_text(text)
        done = run_sweep(root, "transfer", spec, "--width", "32", "--out", precious)
        assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
        assert "--out:" in done.stderr and "is not a config `sweep transfer` wrote" in done.stderr
        assert precious.read_text() == text
    out = root / "again.yaml"
    for _ in range(2):
        assert run_sweep(root, "transfer", spec, "--width", "32", "--out", out).returncode == 0
    # found by an outside tester: a launched run's config.yaml (a config transfer wrote, copied by launch) was
    # replaced, and launching it again trained another run
    run_dir = root / "mine" / "runs" / "r1"
    run_dir.mkdir(parents=True)
    (run_dir / "launch.json").write_text("{}")
    (run_dir / "config.yaml").write_text(out.read_text())
    trained = root / "mine" / "runs" / "r2"  # trained by `sweep train`, not launched: a result, checkpoints
    (trained / "checkpoints").mkdir(parents=True)
    (trained / "config.yaml").write_text(out.read_text())
    for target in (run_dir / "config.yaml", run_dir / "new.yaml", trained / "config.yaml",
                   trained / "checkpoints" / "x.yaml"):
        done = run_sweep(root, "transfer", spec, "--width", "64", "--out", target)
        assert done.returncode == 2 and "is inside a run's folder" in done.stderr, done.stderr
    assert (run_dir / "config.yaml").read_text() == out.read_text() == (trained / "config.yaml").read_text()
    assert not (run_dir / "new.yaml").exists() and not (trained / "checkpoints" / "x.yaml").exists()


def test_a_transfer_folder_linked_out_of_the_root_is_not_written_through(swept, tmp_path):
    """Found by an outside tester: ROOT/NAME/transfer a link to a folder elsewhere, transfer wrote its config there."""
    root, spec = swept
    folder, kept = root / "tiny" / "transfer", root / "tiny" / "transfer-kept"
    if folder.exists():
        folder.rename(kept)
    outside = tmp_path / "outside"
    outside.mkdir()
    folder.symlink_to(outside, target_is_directory=True)
    try:
        done = run_sweep(root, "transfer", spec, "--width", "32")
        assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stdout + done.stderr
        assert "--out:" in done.stderr and "leads out of the results root" in done.stderr
        assert not any(outside.iterdir())
    finally:
        folder.unlink()
        if kept.exists():
            kept.rename(folder)


@pytest.mark.parametrize("flags, message", [
    (["--width", "0"], "--width: must be a positive integer"),
    (["--width", "64", "--batch-rule", "cubic"], "--batch-rule: 'cubic' is not one of none, linear, sqrt, noise"),
    (["--width", "64", "--trial", "99"], "--trial: study tiny-w16-mup has no trial 99"),
    (["--width", "64", "--depth", "4"], "--depth: μP transfers across width, not depth"),
    (["--width", "64", "--batch-size", "8", "--batch-rule", "noise"], "--batch-rule noise: "),
    (["--width", "64", "--proxy-width", "32"], ("study: sweep 'tiny' has no study at width 32",
                                                "(it has width 16: `sweep proxy SPEC --width 32` sweeps that width")),
    (["--width", "64", "--role-rule", "measured"], "--role-rule: 'measured' is not one of kept, fitted"),
    (["--width", "64", "--trial", "０"], "--trial: '０' is not 'best' nor a trial number"),  # a full-width digit
])
def test_bad_transfer_inputs_are_one_line_exit_2_and_write_nothing(swept, flags, message):
    root, spec = swept
    before = sorted(root.rglob("*"))
    done = run_sweep(root, "transfer", spec, *flags)
    assert done.returncode == 2, done.stdout + done.stderr
    said = message if isinstance(message, tuple) else (message,)
    assert done.stderr.count("\n") == 1 and all(m in done.stderr for m in said), done.stderr
    assert sorted(root.rglob("*")) == before


def test_the_verify_drift_reaches_the_provenance(swept, tmp_path):
    root, spec = swept
    folder = root / "tiny-verify-lr"
    folder.mkdir(exist_ok=True)
    summary = {"param": "optimizer.lr", "widths": [16, 32], "grid": [1e-3], "seeds": 2, "source": "tiny-w16-mup#0",
               "max_drift": 1.0,
               "parametrizations": {"mup": {"drift": 0.25, "noise": 0.1, "passed": True}}}
    (folder / "summary.json").write_text(json.dumps(summary))
    try:
        out = tmp_path / "v.yaml"
        done = run_sweep(root, "transfer", spec, "--width", "64", "--out", out)
        assert done.returncode == 0, done.stderr
        assert RunConfig.load(out).provenance.verify["drift_mup"] == 0.25
    finally:
        (folder / "summary.json").unlink()


@pytest.mark.parametrize("gib, sharded", [("0.001", True), ("80", False)])
def test_a_target_whose_training_state_outgrows_half_a_device_is_sharded(swept, gib, sharded):
    """16 B per parameter (weights, gradients, AdamW moments) above half the device's memory: FSDP2, with the
    estimate in the output and the rule in the provenance; below it the config stays unsharded."""
    root, spec = swept
    out = root / f"mem-{gib}.yaml"
    done = run_sweep(root, "transfer", spec, "--width", "64", "--device-memory", gib, "--out", out)
    assert done.returncode == 0, done.stdout + done.stderr
    cfg = RunConfig.load(out)
    assert cfg.sharded() is sharded
    assert ("memory.fsdp" in [r["rule"] for r in cfg.provenance.rules]) is sharded
    assert "parameters × 16 B" in done.stdout and ("> ½ ×" if sharded else "≤ ½ ×") in done.stdout
