"""`sweep init NAME [--out PATH]`: write the packaged example NAME to studies/NAME.yaml (or PATH); never overwrite.

Without NAME it lists the examples. The default destination is where the README's commands look
(`sweep proxy studies/demo.yaml`), in a clone as after a `pip install`."""
from __future__ import annotations

from pathlib import Path

from rich.console import Console

from sweep import examples
from sweep.errors import InputError
from trainer.atomic import atomic_path


def run_init(name: str | None, out: Path | None, console: Console) -> None:
    """Copy example `name` to `out` (a file, or a folder to put NAME.yaml in; default studies/NAME.yaml);
    list the examples when no name is given."""
    known = examples.names()
    if name is None:
        for each in known:
            console.print(f"{each:<16} {examples.summary(each)}")
        console.print("copy one to edit and run: sweep init NAME [--out PATH]")
        return
    if name not in known:
        raise InputError(f"NAME: {name!r} is not an example; one of {', '.join(known)}")
    target = Path("studies") / f"{name}.yaml" if out is None else out / f"{name}.yaml" if out.is_dir() else out
    if target.exists():
        raise InputError(f"--out: {target} exists; it is not overwritten (remove it or pass another --out)")
    blocker = next((p for p in target.parents if p.exists()), None)
    if blocker is not None and not blocker.is_dir():
        raise InputError(f"--out: {blocker} is a file, not a folder")
    try:
        with atomic_path(target) as tmp:
            tmp.write_text(examples.example(name).read_text(encoding="utf-8"), encoding="utf-8")
    except PermissionError as err:
        raise InputError(f"--out: cannot write {target}: permission denied") from err
    console.print(f"wrote {target} (example {name!r}); its first lines say how to run it")
