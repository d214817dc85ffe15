"""The layout of the code, generated at build time from the source tree, so it names what is there.

On the page holding `<!-- code-layout -->` the marker becomes, for each of `proxies/`, `trainer/` and `sweep/`,
a nested list of its packages and modules, each with the first sentence of its docstring (read with `ast`,
nothing imported). A module renamed, moved or added appears under its new name at the next build.
"""
from __future__ import annotations

import ast
import re
from pathlib import Path

MARKER = "<!-- code-layout -->"
ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("proxies", "trainer", "sweep")
LONGEST = 220  # characters of a summary


def summary(path: Path) -> str:
    """The first sentence of the module's docstring, on one line; '' when it has none."""
    doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""
    paragraphs = [" ".join(part.split()) for part in doc.split("\n\n")]
    text = paragraphs[0]
    if text.endswith(":") and len(paragraphs) > 1:  # "Trackers:" then what they are
        text = f"{text} {paragraphs[1]}"
    sentence = re.split(r"(?<=\.)\s(?=[A-Z`(])", text, maxsplit=1)[0]
    return sentence if len(sentence) <= LONGEST else sentence[:LONGEST].rsplit(" ", 1)[0] + " …"


def entries(folder: Path, depth: int) -> list[str]:
    lines = []
    for path in sorted(folder.iterdir(), key=lambda p: (p.is_dir(), p.name)):
        if path.is_dir() and (path / "__init__.py").is_file():
            text = summary(path / "__init__.py")
            lines.append(f"{'    ' * depth}- `{path.name}/`" + (f" — {text}" if text else ""))
            lines += entries(path, depth + 1)
        elif path.suffix == ".py" and path.name != "__init__.py":
            text = summary(path)
            lines.append(f"{'    ' * depth}- `{path.name}`" + (f" — {text}" if text else ""))
    return lines


def render() -> str:
    sections = []
    for name in PACKAGES:
        text = summary(ROOT / name / "__init__.py")
        sections += [f"## `{name}/`", "", text, "", *entries(ROOT / name, 0), ""]
    return "\n".join(sections)


def on_page_markdown(markdown: str, page, config, files) -> str:
    return markdown.replace(MARKER, render()) if MARKER in markdown else markdown
