"""The installed wheel, not the clone: `sweep init` and `sweep demo` work from an empty folder after a pip install.

Catches the packaging bug where the example specs were read from the repository (`site-packages/studies/demo.yaml
does not exist` after `pip install`), and a wheel that carries tests/, benchmarks/ or studies/. The wheel is built
and installed offline (`--no-index`); the fresh venv reaches the dependencies through a `.pth` line naming this
interpreter's site-packages, so no torch is downloaded. A `.pth` path line is not itself a site dir, so the
editable install of the clone found there stays off: `sweep` is imported from the wheel alone.
"""
from __future__ import annotations

import os
import shutil
import site
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest
import yaml

from sweep import examples

REPO = Path(__file__).resolve().parents[1]
ANYWHERE = shutil.ignore_patterns("*.egg-info", "__pycache__", ".pytest_cache")
AT_TOP = {".git", ".venv", "studies", "build", "runs", "dist"}  # results and build outputs at the repo's top only:
# a package may be named like one of them (sweep/runs/ was left out of the wheel by a pattern matching any depth)


def not_sources(folder: str, names: list[str]) -> set[str]:
    return set(ANYWHERE(folder, names)) | (AT_TOP & set(names) if Path(folder) == REPO else set())


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> tuple[Path, Path]:
    """(the wheel, the venv's python): the project built from a copy of its sources and installed in a fresh venv."""
    tmp = tmp_path_factory.mktemp("install")
    shutil.copytree(REPO, tmp / "src", ignore=not_sources)  # the build writes build/ and egg-info: not in the repo
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "-q"]
    subprocess.run([*pip, "wheel", "--no-deps", "--no-build-isolation", "--no-index", "-w", tmp / "dist", tmp / "src"],
                   check=True)
    wheel = next((tmp / "dist").glob("mup_sweep-*.whl"))
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", tmp / "venv"], check=True)
    python = tmp / "venv" / "bin" / "python"
    purelib = Path(subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                                  capture_output=True, text=True, check=True).stdout.strip())
    ours = [*site.getsitepackages(), sysconfig.get_paths()["purelib"]]
    (purelib / "project-deps.pth").write_text("".join(f"{p}\n" for p in dict.fromkeys(ours)))
    subprocess.run([python, "-m", "pip", "--disable-pip-version-check", "-q", "install", "--no-deps", "--no-index",
                    "--ignore-installed", wheel], check=True, env=clean_env(tmp / "venv"))
    return wheel, python


def clean_env(venv: Path) -> dict:
    """The environment of a user of the venv: its bin/ first, no PYTHONPATH pointing at a clone, no results root set."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "SWEEP_ROOT", "VIRTUAL_ENV")}
    return {**env, "PATH": f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}", "PYTHONUNBUFFERED": "1"}


def test_the_wheel_carries_the_examples_and_no_tests_benchmarks_or_studies(installed):
    wheel, _ = installed
    names = zipfile.ZipFile(wheel).namelist()
    assert {f"sweep/examples/{n}.yaml" for n in examples.names()} <= set(names)
    assert {"demo", "mlp", "gpt-tokens", "gpt-proxy-run"} <= set(examples.names())
    assert not [n for n in names if n.split("/")[0] in ("tests", "benchmarks", "studies", "scripts")]


def test_init_then_a_sweep_from_an_empty_folder_uses_the_wheel_and_writes_only_there(installed, tmp_path):
    _, python = installed
    venv, work = python.parents[1], tmp_path / "empty"
    work.mkdir()
    env, sweep = clean_env(venv), venv / "bin" / "sweep"
    run = dict(cwd=work, env=env, capture_output=True, text=True)

    where = subprocess.run([python, "-c", "import sweep; print(sweep.__file__)"], **run).stdout.strip()
    assert Path(where).is_relative_to(venv), where  # the wheel's code, not the clone's
    made = subprocess.run([sweep, "init", "demo"], **run)
    assert made.returncode == 0, made
    spec = work / "studies" / "demo.yaml"
    assert spec.read_text() == examples.example("demo").read_text()

    raw = yaml.safe_load(spec.read_text())  # edit the copy as a user would: a tiny, quick sweep
    raw["run"].update(steps=4, log_every=2, batch_size=4, eval={"every": 2, "batches": 1, "noise_scale_batches": 0})
    raw["run"]["data"]["seq_len"] = raw["run"]["model"]["options"]["block_size"] = 16
    spec.write_text(yaml.safe_dump(raw))
    swept = subprocess.run([sweep, "proxy", "studies/demo.yaml", "--width", "16", "--trials", "1"], **run)
    assert swept.returncode == 0, swept.stdout[-2000:] + swept.stderr[-2000:]
    assert (work / "studies" / "demo" / "optuna.db").is_file() and list((work / "studies" / "demo" / "runs").iterdir())
    assert not list(venv.rglob("studies"))  # nothing looked for, nor written, beside the installed package


def test_demo_starts_from_an_empty_folder_with_its_packaged_spec(installed, tmp_path):
    _, python = installed
    venv = python.parents[1]
    demo = subprocess.Popen([venv / "bin" / "sweep", "demo"], cwd=tmp_path, env=clean_env(venv), text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)
    seen = []
    try:
        for line in demo.stdout:  # the spec is read before step 1 starts: wait for that header, then stop the demo
            seen.append(line)
            if "step 1/" in line:
                break
    finally:
        os.killpg(demo.pid, 9)
        demo.wait()
    assert any("step 1/" in line for line in seen), "".join(seen)


def test_init_lists_every_example_and_copies_one_into_a_folder(tmp_path, run_cli, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, out, err = run_cli("init")
    assert code == 0 and all(name in out for name in examples.names()) and not list(tmp_path.iterdir()), out + err
    (tmp_path / "mine").mkdir()
    code, out, err = run_cli("init", "mlp", "--out", "mine")
    assert code == 0 and (tmp_path / "mine" / "mlp.yaml").read_text() == examples.example("mlp").read_text(), err
