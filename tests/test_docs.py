"""The docs cannot drift from the code: the CLI reference is generated from the typer app and holds every option
`--help` shows, and every command the README names exists (each `sweep` subcommand and its flags, each `make`
target, each script). `make test` also builds the site with warnings as errors (`mkdocs build --strict`)."""
import importlib.util
import re
import shlex
from pathlib import Path

import pytest
import typer.main

from sweep import examples
from sweep.cli import app

ROOT = Path(__file__).resolve().parents[1]
GROUP = typer.main.get_command(app)
FLAG = re.compile(r"(?<![\w-])(--[a-z][a-z0-9-]*)")


def reference_markdown() -> str:
    spec = importlib.util.spec_from_file_location("cli_reference", ROOT / "docs/hooks/cli_reference.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    page = (ROOT / "docs/reference/cli.md").read_text()
    assert module.MARKER in page, "docs/reference/cli.md lost the marker the generator fills"
    return module.on_page_markdown(page, None, None, None)


@pytest.mark.parametrize("name", sorted(GROUP.commands))
def test_every_option_that_help_prints_is_in_the_reference(run_cli, name):
    """What a user sees in `sweep NAME --help` (every flag, each spelling) is in the reference's section."""
    code, out, _ = run_cli(name, "--help")
    assert code == 0
    flags = set(FLAG.findall(out)) - {"--help"}
    assert flags, f"`sweep {name} --help` printed no option: the parser above is wrong"
    section = reference_markdown().split(f"## `sweep {name}`", 1)[1].split("\n## ", 1)[0]
    missing = sorted(flag for flag in flags if f"`{flag}" not in section and f" {flag}" not in section)
    assert not missing, f"sweep {name}: {missing} are not in the CLI reference"


def test_every_parameter_of_every_command_is_in_the_reference():
    reference = reference_markdown()
    for name, command in GROUP.commands.items():
        section = reference.split(f"## `sweep {name}`", 1)[1].split("\n## ", 1)[0]
        for param in command.params:
            for spelling in [*param.opts, *param.secondary_opts]:
                assert spelling in section, f"sweep {name}: {spelling} missing from the CLI reference"


def readme_commands() -> list[str]:
    """Each command line of the README's ```bash blocks, comments dropped, `a && b` split."""
    blocks = re.findall(r"^```bash\n(.*?)^```$", (ROOT / "README.md").read_text(), re.S | re.M)
    lines = [line.split(" #")[0].strip() for block in blocks for line in block.replace("\\\n", " ").splitlines()]
    return [part.strip() for line in lines if line and not line.startswith("#") for part in line.split("&&")]


def options_of(command) -> set[str]:
    return {spelling for param in command.params for spelling in [*param.opts, *param.secondary_opts]}


def test_readme_commands_exist():
    """Every `sweep` subcommand and flag, `make` target and script the README tells a reader to type exists."""
    makefile = (ROOT / "Makefile").read_text()
    checked = 0
    for line in readme_commands():
        words = shlex.split(line.replace("$PWD", "."), comments=True)
        if "sweep" in words:
            words = words[words.index("sweep"):]
            if len(words) < 2 or words[1].startswith("-"):
                continue
            assert words[1] in GROUP.commands, f"README: `sweep {words[1]}` is not a command ({line})"
            command = GROUP.commands[words[1]]
            for word in words[2:]:
                flag = word.split("=")[0]
                if flag.startswith("--"):
                    assert flag in options_of(command), f"README: `sweep {words[1]}` has no {flag} ({line})"
            checked += 1
        elif words[0] == "make":
            assert re.search(rf"^{words[1]}:", makefile, re.M), f"README: no make target {words[1]}"
            checked += 1
        elif words[0] in ("bash", "sh") or words[0].startswith("scripts/"):
            script = words[1] if words[0] in ("bash", "sh") else words[0]
            assert (ROOT / script).is_file(), f"README: no script {script}"
            checked += 1
    assert checked >= 8, f"only {checked} README commands found: the README's code blocks changed form"


def docs_sweep_lines() -> list[tuple[str, str]]:
    """(page, line) for each `sweep COMMAND …` line of the site's ```bash blocks, a synopsis's indented
    continuation lines joined to it."""
    found = []
    for page in sorted((ROOT / "docs").rglob("*.md")):
        for block in re.findall(r"^```bash[^\n]*\n(.*?)^```$", page.read_text(), re.S | re.M):
            lines = []
            for line in block.splitlines():
                if line.startswith(" ") and lines:
                    lines[-1] += line
                else:
                    lines.append(line.split(" #")[0])
            found += [(page.name, line) for line in lines if re.match(r"(\S+ )*sweep [a-z]", line)]
    return found


def test_every_flag_the_docs_show_exists():
    """A flag shown in a page's commands or synopses (`[--trials N]`) is one its command takes."""
    lines = docs_sweep_lines()
    assert len(lines) >= 20, "the docs' command blocks changed form"
    for page, line in lines:
        name = re.search(r"sweep ([a-z-]+)", line)[1]
        assert name in GROUP.commands, f"{page}: `sweep {name}` is not a command ({line})"
        unknown = set(FLAG.findall(line.split("sweep " + name, 1)[1])) - options_of(GROUP.commands[name]) - {"--help"}
        assert not unknown, f"{page}: `sweep {name}` has no {sorted(unknown)} ({line})"


PAGES = [ROOT / "README.md", ROOT / "RELIABILITY.md", ROOT / "benchmarks/README.md",
         *sorted((ROOT / "docs").rglob("*.md"))]
SOURCE_PATH = re.compile(r"`((?:sweep|trainer|proxies|tests|benchmarks|scripts)/[\w./-]*\w)(?:::\w+)?`")
MODULE = re.compile(r"`((?:sweep|trainer|proxies)(?:\.\w+)+)")


def test_every_source_path_and_module_the_docs_name_exists():
    """A file, folder or module named in the README or the site (`sweep/study/liveness.py`,
    `sweep.study.worker.run_worker`) is in the tree: a rename that leaves the docs behind fails here."""
    stale = []
    for page in PAGES:
        text = page.read_text()
        for path in SOURCE_PATH.findall(text):
            if not (ROOT / path).exists():
                stale.append(f"{page.relative_to(ROOT)}: {path}")
        for dotted in MODULE.findall(text):
            parts = dotted.split(".")
            # a module or package, or an attribute of one
            if not any((ROOT / Path(*parts[:n])).with_suffix(".py").is_file() or (ROOT / Path(*parts[:n])).is_dir()
                       for n in (len(parts), len(parts) - 1)):
                stale.append(f"{page.relative_to(ROOT)}: {dotted}")
    assert not stale, "the docs name what is not there:\n" + "\n".join(stale)


def test_readme_walkthrough_checks_the_readers_own_model():
    """The five steps are for the reader's model: step 1 checks the builder the tutorial writes, not the zoo's gpt
    (a reader who copied `--model gpt` checked a model they will never train)."""
    tutorial = (ROOT / "docs/tutorial.md").read_text()
    builder = re.search(r'model: \{name: "([\w.]+:\w+)"', tutorial)[1]
    coord = [line for line in readme_commands() if line.startswith("sweep coord-check")]
    assert coord and all(f"--model {builder}" in line for line in coord), coord


SINGLE_COMMAND_GUIDES = ("coord-check", "verify", "transfer")  # pages about one command; proxy.md also has init


@pytest.mark.parametrize("name", SINGLE_COMMAND_GUIDES)
def test_a_flag_in_a_guides_prose_is_its_commands(name):
    """`--flag` in the prose of docs/guide/NAME.md is `sweep NAME`'s (the coord-check page once named the
    calibration benchmark's `--mup` as if the command took it); another tool's flag is written beside its path."""
    options = options_of(GROUP.commands[name])
    text = (ROOT / f"docs/guide/{name}.md").read_text()
    unknown = {m[1] for m in re.finditer(r"`(--[a-z][a-z0-9-]*)[^`]*`", text)} - options
    assert not unknown, f"docs/guide/{name}.md names {sorted(unknown)}, which `sweep {name}` does not take"


@pytest.mark.parametrize("name", examples.names())
def test_sweep_init_lists_each_examples_whole_first_clause(name):
    """`sweep init`'s list shows what each example is, whole: the llama's line was cut at its header's line break
    ("… untied readout) on the"), because the summary read one line."""
    header = []
    for line in examples.example(name).read_text().splitlines():
        if not line.startswith("#") or line.startswith("#   "):
            break
        header.append(line.removeprefix("#").strip())
    prose, shown = " ".join(header) + " ", examples.summary(name)
    assert prose.startswith(shown) and prose[len(shown)] in ":;.", f"{name}: {shown!r} cuts {prose!r}"
