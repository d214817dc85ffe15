"""The layout as rules a change can break: import directions, private modules, cycles, the top of sweep/,
and light commands that start without torch or ray.

- `sweep → trainer → proxies`: trainer and proxies never import sweep, optuna, ray or submitit (the
  training loop runs without the orchestrator); proxies never import trainer.
- a package of sweep/ never imports a sibling package's private module (`sweep.study.storage._open`):
  what a package offers is its public modules and its `__init__`.
- no import cycle between the packages of sweep/ (a cycle makes two packages one).
- at most 6 modules at the top of sweep/ (the CLI and what every command shares); the rest is packages.
- `sweep --help`, `sql`, `status`, `export`, `results --no-plots` import neither torch nor ray (seen by
  `python -X importtime` in a subprocess): the commands one runs to look at results start in about a second.
"""
from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FORBIDDEN_BELOW_SWEEP = ("sweep", "optuna", "ray", "submitit")
LIGHT_COMMANDS = [["--help"], ["sql", "select 42"], ["status"], ["export", "nosuchsweep"],
                  ["results", "nosuchsweep", "--no-plots"]]


def imports(path: Path) -> list[str]:
    """Every module `path` imports, at any depth of its code (lazy imports inside functions count)."""
    names = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names += [node.module] + [f"{node.module}.{alias.name}" for alias in node.names]
    return names


def sources(package: str) -> list[Path]:
    return sorted((ROOT / package).rglob("*.py"))


@pytest.mark.parametrize("package, forbidden", [("trainer", FORBIDDEN_BELOW_SWEEP),
                                                ("proxies", FORBIDDEN_BELOW_SWEEP + ("trainer",))])
def test_imports_flow_from_sweep_to_trainer_to_proxies_never_back(package, forbidden):
    wrong = [f"{path.relative_to(ROOT)} imports {name}" for path in sources(package) for name in imports(path)
             if name.split(".")[0] in forbidden]
    assert not wrong, wrong


def sweep_package(path: Path) -> str | None:
    """The package of sweep/ that `path` belongs to (None for a top-level module)."""
    parts = path.relative_to(ROOT / "sweep").parts
    return parts[0] if len(parts) > 1 else None


def test_no_package_of_sweep_imports_a_siblings_private_module():
    wrong = []
    for path in sources("sweep"):
        for name in imports(path):
            parts = name.split(".")
            if parts[0] == "sweep" and len(parts) > 2 and parts[1] != sweep_package(path) \
                    and any(part.startswith("_") for part in parts[2:]):
                wrong.append(f"{path.relative_to(ROOT)} imports {name}")
    assert not wrong, wrong


def package_graph() -> dict[str, set[str]]:
    """Package of sweep/ → the other packages of sweep/ it imports from."""
    packages = {p.name for p in (ROOT / "sweep").iterdir() if (p / "__init__.py").is_file()}
    graph: dict[str, set[str]] = {p: set() for p in packages}
    for path in sources("sweep"):
        source = sweep_package(path)
        for name in imports(path):
            parts = name.split(".")
            if source and parts[0] == "sweep" and len(parts) > 1 and parts[1] in packages and parts[1] != source:
                graph[source].add(parts[1])
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """A cycle of the graph as the path that closes it, or None (depth-first search)."""
    state: dict[str, str] = {}

    def visit(node: str, path: list[str]) -> list[str] | None:
        state[node] = "open"
        for nxt in sorted(graph[node]):
            if state.get(nxt) == "open":
                return path[path.index(nxt):] + [node, nxt]  # nxt is open: it is on the path to node
            if nxt not in state and (cycle := visit(nxt, path + [node])):
                return cycle
        state[node] = "done"
        return None

    for node in sorted(graph):
        if node not in state and (cycle := visit(node, [])):
            return cycle
    return None


def test_no_import_cycle_between_the_packages_of_sweep():
    assert find_cycle(package_graph()) is None, " → ".join(find_cycle(package_graph()))


def test_the_cycle_finder_finds_a_cycle():
    """The check above could pass by finding nothing: it must see a planted cycle, and not a chain."""
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": set()}) is None


def test_at_most_six_modules_at_the_top_of_sweep():
    modules = sorted(p.name for p in (ROOT / "sweep").glob("*.py"))
    assert len(modules) <= 6, modules


@pytest.mark.parametrize("args", LIGHT_COMMANDS, ids=[" ".join(a) for a in LIGHT_COMMANDS])
def test_light_commands_import_neither_torch_nor_ray(tmp_path, args):
    env = {**os.environ, "PYTHONPATH": str(ROOT), "SWEEP_ROOT": str(tmp_path / "results")}
    done = subprocess.run([sys.executable, "-X", "importtime", "-m", "sweep", *args], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=300)
    imported = {line.rsplit("|", 1)[1].strip() for line in done.stderr.splitlines() if line.startswith("import time:")}
    assert "sweep.cli" in imported, done.stderr[-2000:]  # the measurement saw the command start
    assert not {"torch", "ray"} & imported, sorted(m for m in imported if m.split(".")[0] in ("torch", "ray"))
