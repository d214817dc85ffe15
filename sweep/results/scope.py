"""What `sweep sql`, `export` and `compare` look at: the results root, one sweep's folder or every sweep
under it, and the Optuna storages that hold their trials.

Every sweep under the root is every folder in it that stays inside it; an entry that a symlink leads out of the root
is skipped, never read, and said once on stderr (`say_skipped`): one stray link broke every `sweep sql` query while
`status` and `report` answered from the rest (an outside tester). A file inside a sweep's folder that leads out is
still refused (`files`).
"""
from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

from sweep.errors import InputError, printable
from sweep.paths import inside_root, kept_inside, results_root, sweep_name
from sweep.study.lookup import locate
from sweep.study.storage import StorageURL, storage_url


@dataclass(frozen=True)
class Scope:
    root: Path  # the results root, absolute
    sweep: str | None  # one sweep's name (its folder ROOT/NAME), or None: every sweep under root
    storages: tuple[StorageURL, ...]  # where the trials are; with `sweep` set only its studies are read
    skipped: tuple[str, ...] = ()  # why each entry of the root that leads out of it was skipped

    def folders(self) -> list[Path]:
        """The sweeps' folders (ROOT/NAME), each holding runs/ and curves/ when it has any."""
        if self.sweep is not None:
            return [inside_root(self.root / self.sweep, self.root, "study")]
        return sweep_folders(self.root)[0]

    def files(self, pattern: str) -> list[Path]:
        """The files matching `pattern` in every sweep's folder, sorted; one that a symlink leads out of the
        results root is refused (an InputError naming it), never read."""
        return [path for folder in self.folders() for path in kept_inside(folder.glob(pattern), self.root, "runs")]


def scope(study: str | None, *, storage: str | None, password_env: str | None) -> Scope:
    """One sweep (a spec or a name) with its storage, or every sweep under the results root with every
    default SQLite storage there (or the one `storage` given). A folder without a storage, e.g. one
    written by `sweep train`, has runs and curves but no trials."""
    root = results_root().resolve()
    if study is None:
        folders, skipped = sweep_folders(root)
        if storage:
            return Scope(root, None, (storage_url(storage, password_env, default_sqlite=Path()),), skipped)
        dbs = kept_inside((db for db in root.glob("*/optuna.db") if db.parent.resolve() in folders), root, "storage")
        return Scope(root, None, tuple(StorageURL.sqlite(db) for db in dbs), skipped)
    path = Path(study)
    if (not (storage or path.suffix in (".yaml", ".yml") or path.is_file())
            and not (root / study / "optuna.db").is_file()):
        sweep_name(study, "--study")
        if not (root / study).is_dir():
            raise InputError(f"--study: no sweep named {study!r} under {root}")
        return Scope(root, study, ())
    name, url = locate(study, storage=storage, password_env=password_env)
    return Scope(root, name, (url,))


def sweep_folders(root: Path) -> tuple[list[Path], tuple[str, ...]]:
    """Every folder in `root` that stays inside it (resolved, sorted), and why each other one was skipped."""
    folders, skipped = [], []
    for entry in sorted(p for p in root.iterdir() if p.is_dir()) if root.is_dir() else []:
        try:
            folders.append(inside_root(entry, root, "study"))
        except InputError as err:
            skipped.append(str(err).partition(": ")[2].removesuffix("; refused") + "; skipped")
    return folders, tuple(skipped)


def say_skipped(where: Scope, command: str) -> None:
    """One line on stderr for each entry of the root the command skipped because it leads out of it."""
    for why in where.skipped:
        print(printable(f"{command}: {why}"), file=sys.stderr)
