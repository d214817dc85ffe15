"""The example specs shipped inside the package (package data, read with `importlib.resources`, so they are
there in a wheel install as in a clone): study specs for `sweep proxy` and one RunConfig for `sweep train`.
`sweep init NAME` copies one out to edit; `sweep demo` reads `demo` from here."""
from __future__ import annotations

from importlib.resources import files
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # importlib.resources.abc is Python ≥ 3.11; the project runs on 3.10
    from importlib.resources.abc import Traversable


def names() -> list[str]:
    """The examples' names: their file names without `.yaml`, sorted."""
    return sorted(f.name.removesuffix(".yaml") for f in files(__name__).iterdir() if f.name.endswith(".yaml"))


def example(name: str) -> Traversable:
    """The packaged file of example `name` (one of `names()`); open it with `.read_text()` or `as_file`."""
    return files(__name__) / f"{name}.yaml"


def summary(name: str) -> str:
    """What the example is: its header comment's first clause (up to a colon, semicolon or full stop outside
    parentheses), read across line breaks up to the first indented command line."""
    prose = []
    for line in example(name).read_text(encoding="utf-8").splitlines():
        if not line.startswith("#") or line.startswith("#   "):
            break
        prose.append(line.removeprefix("#").strip())
    text, depth = " ".join(prose) + " ", 0
    for i, char in enumerate(text):
        depth += {"(": 1, ")": -1}.get(char, 0)
        if depth == 0 and char in ":;." and text[i + 1] == " ":
            return text[:i].strip(" ,")
    return text.strip(" .,")
