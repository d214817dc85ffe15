"""Backends together: a study started on one backend is finished on the others with an exact count, and a
bad backend option is one line naming it, exit 2, with nothing written."""
import pandas as pd
import pytest
from optuna.trial import TrialState

from sweep.backends import get_backend
from sweep.study.spec import parse_spec
from sweep.study.study import counts
from tests.services import free_port
from tests.sweep_helpers import file_tree, load, run_sweep, spec_dict, sweep_env, write_spec
from trainer.config import RunConfig

ROLE_SEARCH = {"optimizer.roles.embedding.lr_mult": {"low": 0.5, "high": 8.0, "log": True},
               "optimizer.roles.hidden.weight_decay_mult": {"low": 0.5, "high": 2.0},
               "model.init.readout": {"low": 0.5, "high": 2.0, "log": True}}


def test_a_study_started_locally_is_continued_on_ray_and_finished_on_slurm(tmp_path, slurm_cluster):
    """Also the search over per-role settings on every backend: each trial's run holds the role values it sampled."""
    spec = write_spec(tmp_path, trials=3, search={**spec_dict()["search"], **ROLE_SEARCH},
                      run={"optimizer": {"weight_decay": 0.1}})
    journal = f"journal:{tmp_path / 'shared' / 'tiny.log'}"
    common = ("proxy", spec, "--width", "16", "--storage", journal)
    for backend, trials in (("local", 1), ("ray", 2), ("slurm", 3)):
        done = run_sweep(tmp_path, *common, "--backend", backend, "--trials", trials, timeout=400)
        assert done.returncode == 0, (backend, done.stderr)
        assert f"{trials - 1}/{trials} trials counted" in done.stdout.splitlines()[0]  # it saw the earlier ones
        assert sum(map(counts, load(tmp_path, storage=journal).trials)) == trials
    study = load(tmp_path, storage=journal)
    assert [t.state for t in study.trials] == [TrialState.COMPLETE] * 3
    # three different kinds of worker ran them: this process's child, a Ray worker, a SLURM task
    assert len({t.system_attrs["sweep:worker"]["pid"] for t in study.trials}) == 3
    for t in study.trials:
        assert pd.read_parquet(tmp_path / t.user_attrs["curves"])["step"].max() == 20
        cfg = RunConfig.from_yaml(t.user_attrs["config"])
        assert cfg.optimizer.roles.embedding.lr_mult == t.params["optimizer.roles.embedding.lr_mult"]
        assert cfg.optimizer.roles.hidden.weight_decay_mult == t.params["optimizer.roles.hidden.weight_decay_mult"]
        assert cfg.model.init.readout == t.params["model.init.readout"]


@pytest.mark.parametrize("args, message", [
    (("--backend", "slurm", "--partition", "gpu nodes!", "--storage", "journal:j.log"),
     "--partition: String should match"),
    (("--backend", "slurm", "--gpus-per-task", "-1", "--storage", "journal:j.log"),
     "--gpus-per-node: must be at least 0, got -1"),
    (("--backend", "slurm"), "--storage: --backend slurm needs a storage every node reaches"),
    (("--backend", "ray", "--gpus-per-trial", "-0.5"), "--gpus-per-trial: must be at least 0, got -0.5"),
    (("--backend", "ray", "--gpus-per-trial", "1.5"), "--gpus-per-trial: Value error, a fraction is allowed up to 1"),
    (("--backend", "ray", "--address", "127.0.0.1:{port}", "--storage", "journal:j.log"),
     "--address: cannot reach the Ray cluster at 127.0.0.1:"),
    (("--backend", "local", "--partition", "gpu"), "--partition: a slurm flag; --backend local takes"),
    (("--backend", "ray", "--detach"), "--detach: only --backend slurm"),
])
def test_a_bad_backend_option_is_one_line_exit_2_and_nothing_written(tmp_path, run_cli, monkeypatch, args, message):
    spec = write_spec(tmp_path, trials=2)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("SWEEP_ROOT", str(tmp_path))
    before = file_tree(tmp_path)
    args = [a.replace("{port}", str(free_port())) for a in args]
    code, out, err = run_cli("proxy", spec, "--width", "16", *args)
    assert code == 2 and err.startswith(f"error: {message}") and err.count("\n") == 1, err
    assert file_tree(tmp_path) == before


def test_backend_settings_come_from_the_spec_and_flags_override_them():
    spec = parse_spec(spec_dict(ray={"cpus_per_trial": 2, "max_concurrent": 3},
                                slurm={"partition": "gpu", "time": 30, "mem": 4}))
    ray = get_backend("ray", spec, 2, {"cpus_per_trial": 1, "gpus_per_trial": None})
    assert (ray.options.cpus_per_trial, ray.options.max_concurrent, ray.max_concurrent) == (1, 3, 3)
    slurm = get_backend("slurm", spec, 4, {"partition": "debug", "account": None})
    assert (slurm.options.partition, slurm.options.time, slurm.options.mem, slurm.workers) == ("debug", 30, 4, 4)


def test_a_bad_backend_setting_in_the_spec_is_one_line_naming_its_key(tmp_path, run_cli, monkeypatch):
    spec = write_spec(tmp_path, slurm={"gpus_per_task": -1})
    monkeypatch.setenv("SWEEP_ROOT", str(tmp_path))
    before = file_tree(tmp_path)
    code, out, err = run_cli("proxy", spec, "--width", "16", "--backend", "slurm")
    assert code == 2 and err.startswith("error: slurm.gpus_per_task") and err.count("\n") == 1, err
    assert file_tree(tmp_path) == before


def test_gpus_per_trial_on_a_local_ray_instance_without_a_gpu_is_refused(tmp_path):
    """Tune would wait forever for a GPU the machine does not have (no GPU visible: CUDA_VISIBLE_DEVICES empty)."""
    spec = write_spec(tmp_path, trials=2)
    done = run_sweep(tmp_path, "proxy", spec, "--width", "16", "--backend", "ray", "--gpus-per-trial", "0.5",
                     env={**sweep_env(tmp_path), "CUDA_VISIBLE_DEVICES": ""})
    assert done.returncode == 2 and done.stderr == ("error: --gpus-per-trial: 0.5, but this machine has no GPU for the "
                                                    "local Ray instance (0, or --address of a cluster with GPUs)\n")
    assert file_tree(tmp_path) == {"spec.yaml"}


@pytest.mark.parametrize("backend, entry, setting", [("slurm", "workers", "cpus_per_task"),
                                                    ("slurm", "workers", "array_parallelism"),
                                                    ("slurm", "run", "nodes"), ("slurm", "run", "time"),
                                                    ("ray", "workers", "max_concurrent"),
                                                    ("ray", "workers", "cpus_per_trial"),
                                                    ("local", "run", "nproc")])
def test_a_setting_past_its_bound_is_refused_alike_as_a_flag_and_in_the_spec(backend, entry, setting):
    """Found by an outside reviewer: the flags were held to sweep/study/bounds.py's limits and the spec's sections
    to the settings model's (`--cpus-per-task 2000` refused, `slurm: {cpus_per_task: 2000}` accepted)."""
    from sweep.cluster.settings import section
    from sweep.errors import InputError
    from sweep.study.bounds import FLAGS, KINDS, check_flag

    high = KINDS[FLAGS[setting]][1]
    model = section(backend, entry)
    model(**{setting: high})  # the highest the flag allows, the spec allows
    with pytest.raises(ValueError, match="less than or equal"):
        model(**{setting: high + 1})
    with pytest.raises(InputError, match="at most"):
        check_flag(f"{backend}-{entry}", setting, f"--{setting}", high + 1)


def test_launch_takes_the_gpus_flag_by_either_of_its_names():
    """`--gpus-per-task` (the name sweeps used) is SLURM's alias of `--gpus-per-node`; `sweep launch` lacked it."""
    from typer.main import get_command

    from sweep.cli import app

    names = {opt for p in get_command(app).commands["launch"].params for opt in p.opts}
    assert {"--gpus-per-node", "--gpus-per-task"} <= names
