"""The tutorial (docs/tutorial.md) runs as written: its files are written and its commands run, in page order,
read from the Markdown itself, so the page cannot drift from the code.

A fenced block with `title="FILE"` is a file the reader writes; a ```bash block holds commands the reader types.
They run in one bash session (an `export` carries over, as in the reader's shell) in an empty folder, with
`sweep` and `python` being this interpreter's, and `set -e`: any command that exits non-zero fails the test,
naming the command.
"""
import os
import re
import subprocess
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
TUTORIAL = ROOT / "docs" / "tutorial.md"
FENCE = re.compile(r"^```(\w+)([^\n]*)\n(.*?)^```$", re.S | re.M)
TITLE = re.compile(r'title="([^"]+)"')
THE_PATH = ("coord-check", "proxy", "verify", "transfer", "launch")  # the page must walk the whole path


def tutorial_steps(text: str) -> list[tuple[str, str]]:
    """("file", NAME + body) or ("bash", commands), in page order."""
    steps = []
    for lang, attrs, body in FENCE.findall(text):
        title = TITLE.search(attrs)
        if title:
            steps.append(("file", title[1], body))
        elif lang == "bash":
            steps.append(("bash", "", body))
    return steps


def script_of(steps, folder: Path) -> str:
    lines = ["PS4='+ [${EPOCHREALTIME}] '", "set -euxo pipefail"]  # each command echoed with its start time
    for kind, name, body in steps:
        if kind == "file":
            (folder / name).write_text(body)  # written up front: each is used only after the page shows it
        else:
            lines.append(body)
    return "\n".join(lines)


def shims(folder: Path) -> Path:
    """`sweep` and `python` as the reader has them after set-up, run by this interpreter."""
    bin_dir = folder / ".bin"
    bin_dir.mkdir()
    for name, command in (("sweep", f'exec "{sys.executable}" -m sweep "$@"'),
                          ("python", f'exec "{sys.executable}" "$@"')):
        (bin_dir / name).write_text(f"#!/bin/sh\n{command}\n")
        (bin_dir / name).chmod(0o755)
    return bin_dir


def test_tutorial_walks_the_whole_path():
    commands = "\n".join(body for kind, _, body in tutorial_steps(TUTORIAL.read_text()) if kind == "bash")
    used = set(re.findall(r"^sweep ([a-z-]+)", commands, re.M))
    assert set(THE_PATH) <= used, f"the tutorial no longer runs {sorted(set(THE_PATH) - used)}"
    assert re.search(r"model: \{name: \"mymodel:", TUTORIAL.read_text()), "the spec must name the reader's builder"


def test_every_tutorial_command_runs_as_written(tmp_path):
    work = tmp_path / "my-project"
    work.mkdir()
    script = script_of(tutorial_steps(TUTORIAL.read_text()), work)
    env = {key: value for key, value in os.environ.items() if key not in ("SWEEP_ROOT", "PYTHONPATH")}
    env.update(PATH=f"{shims(tmp_path)}{os.pathsep}{env['PATH']}", PYTHONPATH=str(ROOT), OMP_NUM_THREADS="1")
    done = subprocess.run(["bash", "-c", script], cwd=work, env=env, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, f"exit {done.returncode}\n{done.stderr[-4000:]}"
    # what the reader was told they would get: a full-width config carrying the proxy's best trial
    config = yaml.safe_load((work / "studies/mine/transfer/w256-d2-b8.yaml").read_text())
    assert config["model"]["name"] == "mymodel:tiny_lm" and config["model"]["width"] == 256
    assert config["provenance"]["trial"] is not None
    assert list((work / "studies/mine/runs").glob("*/result.json")), "the launched run left no result"
    # the README's table names the coordinate check's folder for this builder: it is where the check wrote
    folder, model = re.search(r"\(`([\w.-]+)/` for `--model ([\w.:]+)`\)", (ROOT / "README.md").read_text()).groups()
    assert model == config["model"]["name"], "the README's example folder is for another model than the tutorial's"
    assert (work / "studies/coord-check" / folder / "coord_check.png").is_file(), f"no studies/coord-check/{folder}/"
