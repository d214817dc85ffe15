"""What `sweep sql`, `export` and `compare` look at: the results root, one sweep's folder or every sweep
under it, and the Optuna storages that hold their trials."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from sweep.errors import InputError
from sweep.paths import inside_root, kept_inside, results_root, sweep_name
from sweep.study.lookup import locate
from sweep.study.storage import StorageURL, storage_url


@dataclass(frozen=True)
class Scope:
    root: Path  # the results root, absolute
    sweep: str | None  # one sweep's name (its folder ROOT/NAME), or None: every sweep under root
    storages: tuple[StorageURL, ...]  # where the trials are; with `sweep` set only its studies are read

    def folders(self) -> list[Path]:
        """The sweeps' folders (ROOT/NAME), each holding runs/ and curves/ when it has any."""
        if self.sweep is not None:
            folders = [self.root / self.sweep]
        else:
            folders = sorted(p for p in self.root.iterdir() if p.is_dir()) if self.root.is_dir() else []
        return [inside_root(folder, self.root, "study") for folder in folders]

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
        if storage:
            return Scope(root, None, (storage_url(storage, password_env, default_sqlite=Path()),))
        return Scope(root, None, tuple(StorageURL.sqlite(db) for db in kept_inside(root.glob("*/optuna.db"), root,
                                                                                  "storage")))
    path = Path(study)
    if (not (storage or path.suffix in (".yaml", ".yml") or path.is_file())
            and not (root / study / "optuna.db").is_file()):
        sweep_name(study, "--study")
        if not (root / study).is_dir():
            raise InputError(f"--study: no sweep named {study!r} under {root}")
        return Scope(root, study, ())
    name, url = locate(study, storage=storage, password_env=password_env)
    return Scope(root, name, (url,))
