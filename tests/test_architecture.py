"""The layout as rules a change can break: import directions, private modules, cycles, the top of sweep/,
and light commands that start without torch or ray.

- `sweep → trainer → proxies`: trainer and proxies never import sweep, optuna, ray or submitit (the
  training loop runs without the orchestrator); proxies never import trainer.
- a package of sweep/ never imports a sibling package's private module (`sweep.study.storage._open`):
  what a package offers is its public modules and its `__init__`.
- no import cycle between the packages of sweep/ (a cycle makes two packages one).
- at most 6 modules at the top of sweep/ (the CLI and what every command shares); the rest is packages.
- each command lives in a package named after it (`COMMAND_PACKAGES`), and no command package imports another:
  commands share through the layers below them (`rules`, `runs`, `coords`, `study`, `backends`, `cluster`).
- sweep/ is at most 7 layers deep: the longest chain of import-time imports among its packages and top modules.
- `sweep --help`, `sql`, `status`, `export`, `results --no-plots` import neither torch nor ray (seen by
  `python -X importtime` in a subprocess): the commands one runs to look at results start in about a second.
- pre-flight, the doctor and launch's command check a config without importing the training loop
  (`trainer.resolve`, `DataConfig.open`): only what trains imports it.
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
# The packages of sweep/ that are commands (`sweep NAME`; results/ also holds sql, export, compare and report).
COMMAND_PACKAGES = {"coord_check", "doctor", "init", "inspect", "launch", "plan", "proxy", "recipe", "results",
                    "status", "transfer", "verify"}
MAX_LAYERS = 7
LIGHT_COMMANDS = [["--help"], ["sql", "select 42"], ["status"], ["export", "nosuchsweep"],
                  ["results", "nosuchsweep", "--no-plots"]]


def imports(path: Path) -> list[str]:
    """Every module `path` imports, at any depth of its code (lazy imports inside functions count)."""
    return imports_of(ast.walk(ast.parse(path.read_text(), str(path))))


def imports_of(nodes) -> list[str]:
    names = []
    for node in nodes:
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


def top_level_imports(path: Path) -> list[str]:
    """The modules `path` imports when it is imported: its top-level statements (and those under a top-level
    `try`/`if`), not the lazy imports inside functions that a command runs only when called."""
    body = ast.parse(path.read_text(), str(path)).body
    nodes = body + [child for node in body if isinstance(node, (ast.Try, ast.If)) for child in ast.walk(node)]
    return imports_of(nodes)


def package_graph(read=imports, top_modules: bool = False) -> dict[str, set[str]]:
    """Package of sweep/ → the other packages of sweep/ it imports from (`read`: which imports of a file count).
    With `top_modules`, the modules at the top of sweep/ (`cli`, `errors`, …) are nodes too."""
    units = {p.name for p in (ROOT / "sweep").iterdir() if (p / "__init__.py").is_file()}
    if top_modules:
        units |= {p.stem for p in (ROOT / "sweep").glob("*.py") if p.stem != "__init__"}
    graph: dict[str, set[str]] = {unit: set() for unit in units}
    for path in sources("sweep"):
        source = sweep_package(path) or (path.stem if top_modules and path.stem != "__init__" else None)
        for name in read(path):
            parts = name.split(".")
            if source and parts[0] == "sweep" and len(parts) > 1 and parts[1] in units and parts[1] != source:
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


def test_every_command_package_is_a_package_named_after_a_command():
    """The list the next test reads is the real one: each is a package of sweep/ and `sweep` has its command."""
    from sweep.cli import app

    commands = {command.name.replace("-", "_") for command in app.registered_commands}
    packages = {p.name for p in (ROOT / "sweep").iterdir() if (p / "__init__.py").is_file()}
    assert COMMAND_PACKAGES <= packages, sorted(COMMAND_PACKAGES - packages)
    assert COMMAND_PACKAGES <= commands, sorted(COMMAND_PACKAGES - commands)
    assert not (packages - COMMAND_PACKAGES) & commands, "a command package missing from COMMAND_PACKAGES"


def test_no_command_package_imports_another():
    """Commands share through the layers below them; a command importing a command stacks peers into a tower.
    Lazy imports count. `demo.py` runs the commands in order, so it may import them, and only the CLI imports it."""
    graph = package_graph()
    wrong = [f"{source} imports {target}" for source in sorted(COMMAND_PACKAGES)
             for target in sorted(graph[source] & COMMAND_PACKAGES)]
    assert not wrong, wrong
    importers = sorted(source for source, targets in package_graph(top_modules=True).items() if "demo" in targets)
    assert importers == ["cli"], importers


def layers(graph: dict[str, set[str]]) -> list[str]:
    """The longest chain of the (acyclic) graph, from its top down: the number of layers is its length."""
    chains: dict[str, list[str]] = {}

    def chain(node: str) -> list[str]:
        if node not in chains:
            chains[node] = [node] + max((chain(nxt) for nxt in sorted(graph[node])), key=len, default=[])
        return chains[node]

    return max((chain(node) for node in sorted(graph)), key=len, default=[])


def test_sweep_is_at_most_seven_layers_deep():
    """Over what a module imports when imported (the CLI's lazy imports of its commands are each one call's)."""
    graph = package_graph(top_level_imports, top_modules=True)
    assert find_cycle(graph) is None, " → ".join(find_cycle(graph))
    assert len(layers(graph)) <= MAX_LAYERS, " → ".join(layers(graph))


def test_the_layer_count_counts_the_longest_chain():
    assert layers({"a": {"b", "c"}, "b": {"c"}, "c": set(), "d": {"c"}}) == ["a", "b", "c"]


@pytest.mark.parametrize("args", LIGHT_COMMANDS, ids=[" ".join(a) for a in LIGHT_COMMANDS])
def test_light_commands_import_neither_torch_nor_ray(tmp_path, args):
    env = {**os.environ, "PYTHONPATH": str(ROOT), "SWEEP_ROOT": str(tmp_path / "results")}
    done = subprocess.run([sys.executable, "-X", "importtime", "-m", "sweep", *args], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=300)
    imported = {line.rsplit("|", 1)[1].strip() for line in done.stderr.splitlines() if line.startswith("import time:")}
    assert "sweep.cli" in imported, done.stderr[-2000:]  # the measurement saw the command start
    assert not {"torch", "ray"} & imported, sorted(m for m in imported if m.split(".")[0] in ("torch", "ray"))


def test_preflight_doctor_and_launch_check_a_config_without_importing_the_training_loop():
    modules = ["sweep.study.preflight", "sweep.doctor.command", "sweep.launch.command"]
    code = (f"import importlib, sys\n"
            f"for m in {modules}:\n    importlib.import_module(m)\n"
            "print('trainer.loop' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)},
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "False"


def fresh_process_modules(code: str) -> set[str]:
    """The modules a fresh interpreter holds after running `code` from the repository."""
    done = subprocess.run([sys.executable, "-c", f"{code}\nimport sys; print(' '.join(sys.modules))"], cwd=ROOT,
                          env={**os.environ, "PYTHONPATH": str(ROOT)}, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    return set(done.stdout.split())


def test_sizing_a_model_never_imports_torchdynamo():
    """torch runs `normal_` on the meta device through reference kernels whose first call imports TorchDynamo (a
    second per process): a transfer, a plan or a check that only sizes a model must not pay it."""
    modules = fresh_process_modules("from proxies.registry import build_model, count_parameters\n"
                                    "count_parameters('gpt', 512, 4)\nbuild_model('llama', 64, 2)")
    assert "torch" in modules and "torch._dynamo" not in modules


def test_importing_the_trainer_imports_neither_fsdp_nor_distributed_checkpoints():
    """DCP, DTensor and FSDP2 cost about half a second to import; only a sharded run uses them."""
    modules = fresh_process_modules("import trainer.loop")
    assert "trainer.loop" in modules
    assert not {"torch.distributed.checkpoint", "torch.distributed.tensor", "torch.distributed.fsdp"} & modules


def test_a_model_built_for_its_shapes_has_the_real_models_shapes_and_no_values():
    from proxies.meta import shapes_only
    from proxies.registry import build_model

    for name in ("gpt", "llama", "mlp", "resnet"):
        real = {n: p.shape for n, p in build_model(name, 64, 2).named_parameters()}
        with shapes_only():
            meta = build_model(name, 64, 2)
        assert {n: p.shape for n, p in meta.named_parameters()} == real
        assert all(p.is_meta for p in meta.parameters())
