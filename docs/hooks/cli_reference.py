"""The CLI reference, generated from the `sweep` typer app at build time, so it cannot drift from `--help`.

MkDocs calls `on_page_markdown` for every page; on the page holding the marker `<!-- cli-reference -->` the
marker is replaced by `render()`: per command its one-line summary, usage, description, and every parameter
as `--help` prints it (click's own help records: names, metavar, help text, default). mkdocs-click would do
this for a click app, but typer ≥ 0.26 vendors its own click, whose objects are not `click.Command`s.
"""
from __future__ import annotations

import html
import sys
from pathlib import Path

MARKER = "<!-- cli-reference -->"
ROOT = Path(__file__).resolve().parents[2]


def cli_group():
    """The click group typer builds from `sweep.cli.app` (the object `sweep --help` prints)."""
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    import typer.main

    from sweep.cli import app
    return typer.main.get_command(app)


def cell(text: str) -> str:
    """Text safe inside a Markdown table cell: no raw HTML, no column break, no emphasis."""
    text = html.escape(" ".join(text.split()), quote=False)
    return text.replace("|", "&#124;").replace("*", r"\*").replace("_", r"\_")


def render_command(name: str, command) -> list[str]:
    ctx = command.make_context(f"sweep {name}", [], resilient_parsing=True)
    lines = [f"## `sweep {name}`", "", cell(command.short_help or ""), "", "```text",
             command.get_usage(ctx).removeprefix("Usage: "), "```", "", cell(command.help or ""), "",
             "| parameter | what it is |", "| --- | --- |"]
    for param in command.get_params(ctx):
        record = param.get_help_record(ctx)
        if record is None or getattr(param, "hidden", False):
            continue
        names, text = record
        lines.append(f"| `{names}` | {cell(text)} |")
    return lines + [""]


def render() -> str:
    group = cli_group()
    lines = ["## Commands", "", cell(group.help or ""), "", "| command | what it does |", "| --- | --- |"]
    lines += [f"| [`sweep {name}`](#sweep-{name}) | {cell(command.short_help or '')} |"
              for name, command in group.commands.items()]
    lines.append("")
    for name, command in group.commands.items():
        lines += render_command(name, command)
    return "\n".join(lines)


def on_page_markdown(markdown: str, page, config, files) -> str:
    return markdown.replace(MARKER, render()) if MARKER in markdown else markdown
