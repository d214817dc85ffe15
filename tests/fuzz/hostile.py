"""Hypothesis strategies for the security classes of issue 36: texts bound for a scheduler (a SLURM partition,
account, QOS; a Ray address) and names read back from a storage, a checkpoint or a run's files. Each mixes the
forms that broke before (a newline, shell metacharacters, `../`, markup) with text Hypothesis makes up, so the
properties in tests/fuzz/test_fuzz_rules.py find the next case, not only these; `hostile_inputs` puts them on a
verb's command line (tests/fuzz/strategies.py).
"""
from __future__ import annotations

import sqlite3
from pathlib import Path

from hypothesis import strategies as st

SHELL = "\n\r\t\x00\x0b\x0c;&|$`'\"\\ #=(){}<>*?!~%,:/@"
KNOWN_SCHEDULER_TEXT = ["gpu\ntouch /tmp/x", "gpu\rx", "gpu;id", "$(id)", "`id`", "gpu id", "gpu'x", "a=b", "-x",
                        "", "gpu#x", "a" * 65, "gpü", "gpu\x00", "gpu,\nx", ",gpu", "gpu,,cpu"]
KNOWN_STORED_NAMES = ["../../../X", "..", ".", "/etc", "a/b", "<script>alert(1)</script>", "ro\n<b>x", ".hidden",
                      "-flag", "x" * 256, "ro-w16-../../X", "a b", "名前", "a\\b", "&amp;", ""]


def scheduler_text() -> st.SearchStrategy[str]:
    """Text for a SLURM partition/account/QOS or a Ray address: known attacks, words salted with shell characters,
    and any text at all."""
    salted = st.builds(lambda a, c, b: a + c + b, st.text("abcXYZ019_.-", max_size=8), st.sampled_from(SHELL),
                       st.text("abc019", max_size=8))
    return st.one_of(st.sampled_from(KNOWN_SCHEDULER_TEXT), salted, st.text(max_size=80),
                     st.text("abcdefgh0123456789_.-,", min_size=1, max_size=70))


def stored_name() -> st.SearchStrategy[str]:
    """A name as a storage or a run's files may hold it: known attacks, path and markup pieces, any text."""
    pieces = st.lists(st.sampled_from(["..", ".", "/", "<", ">", "&", "\n", "tiny", "-w16-mup", "'", '"', "\\", " "]),
                      min_size=1, max_size=6).map("".join)
    return st.one_of(st.sampled_from(KNOWN_STORED_NAMES), pieces, st.text(max_size=300),
                     st.from_regex(r"[A-Za-z0-9_][A-Za-z0-9._-]{0,254}", fullmatch=True))


class RenamedStudy:
    """An argument that first renames every study in the example's `results/tiny/optuna.db` to `name` (what a
    hostile or damaged storage holds), then stands for the sweep `tiny`."""

    def __init__(self, name: str):
        self.name = self.text = name

    def __call__(self, folder: Path) -> str:
        with sqlite3.connect(folder / "results" / "tiny" / "optuna.db") as con:
            con.execute("UPDATE studies SET study_name = ?", (self.name,))
        con.close()
        return "tiny"


@st.composite
def hostile_inputs(draw, verb: str, argv: list, classes: list[str]) -> tuple[list, list[str]]:
    """Now and then (1 in 4) the security classes of tests/fuzz/hostile.py: a SLURM text that sbatch would read as
    script (always refused, so no job is ever submitted), or the sweep's stored study renamed (`stored:`)."""
    if draw(st.integers(0, 3)):
        return argv, classes
    if verb in ("proxy", "verify", "launch"):
        field = draw(st.sampled_from(["partition", "account", "qos"]))
        refused = [text for text in KNOWN_SCHEDULER_TEXT if text != "a" * 65]
        return [*argv, "--backend", "slurm", f"--{field}", draw(st.sampled_from(refused))], \
            [*classes, f"scheduler:{field}"]
    if verb in ("results", "report", "export", "transfer") and len(argv) > 1:
        return [argv[0], RenamedStudy(draw(stored_name())), *argv[2:]], [*classes, "stored:study-name"]
    return argv, classes
