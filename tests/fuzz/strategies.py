"""What the fuzz harness generates: a `Case` per draw, one verb's command line built from a working baseline
(the shipped specs, a tiny RunConfig, a finished tiny study) with mutations applied.

Each mutation carries its class, `KIND:DETAIL` (`type:`, `range:`, `name:`, `path:`, `url:`, `yaml:`, `flag:`,
`space:`, `key:`, `count:` (huge counts and numbers past machine range), `damaged:` (a file the tool wrote, damaged
before the command reads it), and for `sweep verify --plan` `plan:` (a field it reads out of its bounds), `plan-edit:`
(edited within them, or a field it does not read), `plan-yaml:`, `plan-path:` (no plan at all, or a copy outside
the root) and `plan-file:` (the seed's plan)): the contract's failures are reported by class, and `PENDING`
(tests/fuzz/pending.py) names the classes another lane fixes. A case only writes files into the example's own
folder, given to `Case.make`.

Each kind is drawn in its own module: a spec or RunConfig argument (documents.py, with odd_values.py), the flags
(flags.py), storage URLs (storage_urls.py), damaged files (damages.py), `sweep plan` and the plan file verify reads
(plans.py), the security classes (hostile.py); the baseline is baseline.py.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from hypothesis import strategies as st

from tests.fuzz.baseline import WIDTH
from tests.fuzz.damages import DAMAGES, READERS
from tests.fuzz.documents import config_argument, spec_argument
from tests.fuzz.flags import STUDY_REFS, VERB_OPTIONS, given_twice, mutate_flags
from tests.fuzz.hostile import hostile_inputs
from tests.fuzz.plans import plan_case
from tests.fuzz.storage_urls import storage_flags


@dataclass
class Case:
    verb: str
    argv: list  # str, or a callable(folder) -> str that writes what the argument names
    classes: list[str] = field(default_factory=list)  # the mutations applied, KIND:DETAIL
    out: str | None = None  # a path the command may write outside the results root (its --out)
    damage: str | None = None  # a file the tool wrote, damaged before the command runs (DAMAGES)
    dry: bool = False  # stopped where it would start training (`sweep verify --plan`: tests/fuzz/contract.py)

    def make(self, folder: Path) -> list[str]:
        if self.damage:
            DAMAGES[self.damage](folder / "results")
        return [str(a(folder)) if callable(a) else a for a in self.argv]

    def __repr__(self) -> str:  # what Hypothesis prints for a failing example
        argv = [getattr(a, "text", a) for a in self.argv]
        argv = [a[:200] + f"…({len(a)} chars)" if isinstance(a, str) and len(a) > 200 else a for a in argv]
        return f"Case({self.verb!r}, classes={self.classes}, argv={argv}, damage={self.damage!r}, dry={self.dry})"


STORAGE_VERBS = ("proxy", "verify", "transfer", "results", "sql", "export", "report")  # they take --storage
FOCUSED = ("plan", "verify-plan")  # verify-plan: `sweep verify --plan`, dry (tests/fuzz/contract.py)


@st.composite
def case_for(draw, verb: str) -> Case:
    """One generated command line of `verb`, its mutation classes, and where it may write outside the root."""
    classes: list[str] = []
    focused = verb in FOCUSED and draw(st.integers(0, 2)) > 0  # 2 in 3: its own mutations only
    if verb in FOCUSED:
        verb, argv, classes = draw(plan_case(verb, focused))
    elif verb in ("proxy", "verify", "transfer", "doctor"):
        spec, classes = draw(spec_argument()) if verb != "doctor" or draw(st.booleans()) else draw(config_argument())
        base = {
            "proxy": ["--width", str(WIDTH)],
            "transfer": ["--width", "64", "--steps", "50"],
            "doctor": [],
            "verify": [
                "--widths",
                "16,32",
                "--values",
                "0.005,0.01,0.02",
                "--parametrizations",
                "mup",
                "--seeds",
                "1",
                "--trials-from",
                "spec",
                "--refine",
                "0",
            ],
        }[verb]
        argv = [spec, *base]
    elif verb in ("train", "launch"):
        config, classes = draw(config_argument())
        argv = [config] + (["--quiet"] if verb == "train" else [])
    elif verb in ("results", "export", "report"):
        argv = [draw(st.sampled_from(STUDY_REFS[:3]) | st.sampled_from(STUDY_REFS))] + (
            ["--no-plots"] if verb == "results" else []
        )
    elif verb == "sql":
        argv = [draw(st.sampled_from(SQL_STATEMENTS)), "--study", "tiny"]
    elif verb == "compare":
        argv = draw(
            st.lists(
                st.sampled_from(["tiny#0", "tiny#1", "fuzzrun", "tiny#99", "#", "nosuch", "../x"]),
                min_size=1,
                max_size=3,
            )
        )
    elif verb == "init":
        argv = [draw(st.sampled_from(["demo", "mlp", "gpt-proxy-run", "nosuch", "../demo", ""])), "--out", "new.yaml"]
    elif verb == "inspect":
        argv = [draw(st.sampled_from(["gpt", "mlp", "resnet", "llama", "nosuch", "os:system"])), "--width", "16"]
    elif verb == "coord-check":
        argv = ["--model", "mlp", "--widths", "8,16", "--steps", "2", "--seeds", "1"]
    else:  # status
        argv = draw(st.sampled_from([[], ["tiny"], ["nosuch"], [".."]]))
    argv, flag_classes = ([verb, *argv], []) if focused and verb == "verify" else \
        draw(mutate_flags([verb, *argv], VERB_OPTIONS[verb]))
    if not focused:
        argv, flag_classes = draw(hostile_inputs(verb, argv, flag_classes))
        if verb in STORAGE_VERBS and draw(st.integers(0, 3)) == 0:
            flags, url_classes = draw(storage_flags())
            argv, flag_classes = argv + flags, flag_classes + url_classes
        argv, flag_classes = draw(given_twice(verb, argv, flag_classes))
    outs = [argv[i + 1] for i, a in enumerate(argv[:-1]) if a == "--out" and isinstance(argv[i + 1], str)]
    out = outs[-1] if outs else None  # two --out are refused; one is where a success may write
    damage = draw(st.sampled_from(sorted(DAMAGES))) if verb in READERS and not focused and \
        draw(st.integers(0, 4)) == 0 else None
    return Case(verb, argv, classes + flag_classes + ([f"damaged:{damage}"] if damage else []), out, damage,
                dry=verb == "verify" and "--plan" in argv)


SQL_STATEMENTS = [
    "SELECT count(*) AS n FROM trials",
    "SELECT * FROM runs",
    "SELECT run, max(step) FROM curves GROUP BY run",
    "DELETE FROM trials",
    "SELECT 1; SELECT 2",
    "COPY trials TO 'leak.csv'",
    "SELECT * FROM read_csv('/etc/passwd')",
    "SELECT * FROM read_parquet('../**/*.parquet')",
    "ATTACH 'x.db'",
    "",
    "SELEC",
    "SELECT getenv('SWEEP_FUZZ_PW')",
    "INSTALL httpfs",
    "SELECT * FROM read_text('results/tiny/optuna.db')",
]
