"""Shared test helpers."""
import sys

import pytest

from sweep.cli import main


@pytest.fixture
def run_cli(capsys, monkeypatch):
    """Run `sweep ARGS…` in this process; returns (exit code, stdout, stderr)."""

    def run(*args: str) -> tuple[int, str, str]:
        monkeypatch.setattr(sys, "argv", ["sweep", *map(str, args)])
        capsys.readouterr()
        with pytest.raises(SystemExit) as exit_info:
            main()
        out, err = capsys.readouterr()
        return exit_info.value.code, out, err

    return run
