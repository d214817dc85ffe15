"""Which modules a reader follows from `sweep proxy SPEC` through its pre-flight, and how often they climb back up.

Method: `sys.setprofile` records every Python call while `sweep proxy SPEC` runs in this process, up to its first
write (`open_storage` in sweep/proxy/command.py, patched to stop the command there): that stretch is the pre-flight,
everything the command validates before it creates a study. A call counts where its function is defined in this
repository (sweep/, trainer/, proxies/). Each module is placed under the module that first called into it; a reader
following the spec visits the modules in that order, and climbs back up whenever the next new module is not called
from the module they just read.

    PYTHONPATH=$PWD python benchmarks/preflight_path.py [SPEC]   # default: the packaged demo spec
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("sweep", "trainer", "proxies")


class Stop(Exception):
    """Raised where `sweep proxy` would first write."""


def module_of(filename: str) -> str | None:
    path = Path(filename)
    if not path.is_relative_to(ROOT) or path.suffix != ".py":
        return None
    parts = path.relative_to(ROOT).with_suffix("").parts
    if parts[0] not in PACKAGES:
        return None
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def trace(spec: Path) -> tuple[list[tuple[str, str | None]], set[tuple[str, str]], dict[str, set[str]]]:
    """(module, the module that first called it) in the order they were first entered; every (caller, callee) pair
    of modules of sweep/ that a call crossed; the `check*` functions that ran, by module."""
    import sweep.proxy.command as proxy
    from sweep.cli import app

    first: dict[str, str | None] = {}
    edges: set[tuple[str, str]] = set()
    checks: dict[str, set[str]] = {}
    stack: list[str | None] = []

    def profile(frame, event, arg):
        if event == "call":
            module = module_of(frame.f_code.co_filename)
            caller = next((m for m in reversed(stack) if m), None)
            if module and module not in first:
                first[module] = caller
            if module and frame.f_code.co_name.startswith("check"):
                checks.setdefault(module, set()).add(frame.f_code.co_name)
            if module and caller and caller != module and module.startswith("sweep") and caller.startswith("sweep"):
                edges.add((caller, module))
            stack.append(module)
        elif event == "return" and stack:
            stack.pop()

    def stop(*args, **kwargs):
        raise Stop

    proxy.open_storage = stop
    sys.setprofile(profile)
    try:
        app(["proxy", str(spec), "--width", "32", "--trials", "1"], standalone_mode=False)
    except Stop:
        pass
    finally:
        sys.setprofile(None)
    return list(first.items()), edges, checks


def climbs(visits: list[tuple[str, str | None]]) -> int:
    """New modules not called from the module read just before them (the first is where reading starts)."""
    return sum(parent != before for (_, parent), (before, _) in zip(visits[1:], visits, strict=False))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("spec", nargs="?", type=Path, help="study spec [default: the packaged demo spec]")
    args = parser.parse_args()
    from sweep import examples

    spec = args.spec or Path(str(examples.example("demo")))
    with tempfile.TemporaryDirectory() as root:
        os.environ["SWEEP_ROOT"] = root
        visits, edges, checks = trace(spec.resolve())
    depth = {}
    for module, parent in visits:
        depth[module] = depth.get(parent, -1) + 1
        print(f"{'  ' * depth[module]}{module}")
    ours = [m for m, _ in visits if m.startswith("sweep")]
    print(f"\nmodules visited: {len(visits)} ({len(ours)} of sweep/); climbs back up: {climbs(visits)}; "
          f"sweep/ only: climbs {climbs([(m, p) for m, p in visits if m.startswith('sweep')])}, "
          f"{len(edges)} caller → callee pairs of its modules:")
    for caller, callee in sorted(edges):
        print(f"  {caller} → {callee}")
    ours = {m: names for m, names in checks.items() if m.startswith("sweep")}
    print(f"check* functions that ran in sweep/: {sum(map(len, ours.values()))}, in {len(ours)} modules:")
    for module, names in sorted(ours.items()):
        print(f"  {module}: {', '.join(sorted(names))}")


if __name__ == "__main__":
    main()
