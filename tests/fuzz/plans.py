"""`sweep plan` and `sweep verify --plan` (dry): a plan command line of a full run and a budget, its `--out`, and the
plan file verify reads (`plan:` out of bounds, `plan-edit:` within them, `plan-yaml:`, `plan-path:`, `plan-file:`)."""
from __future__ import annotations

import copy
import math
import os
from pathlib import Path

import yaml
from hypothesis import strategies as st

from tests.fuzz.baseline import TINY_SPEC, File
from tests.fuzz.documents import spec_argument, yaml_shape
from tests.fuzz.odd_values import LONG_PATHS

# the tiny spec's full run that `sweep plan` gives two ladders (width 32–128, depth 1–2) and exit 1 (at 2 steps the
# tokens law has no room for a second rung, so the goal is out of reach): the seed root holds its plan
SEED_PLAN_ARGS = ["--width", "256", "--depth", "4", "--tokens", "6400", "--goal", "0.45", "--share", "0.5"]
SEED_PLAN = "results/tiny/plan.yaml"
PLAN_TARGETS = [["--width", "256"], ["--width", "256", "--depth", "4"], ["--params", "1e6"],
                ["--width", "128", "--batch-size", "4"]]
PLAN_BUDGETS = [[], ["--share", "0.5"], ["--flops", "1e11"], ["--goal", "3"], ["--goal", "0.45", "--share", "0.5"]]


class Link:
    """An argument naming a symbolic link made in the example's folder: `name` → `target` (both relative to it)."""

    def __init__(self, name: str, target: str):
        self.name, self.target, self.text = name, target, f"{name}->{target}"

    def __str__(self) -> str:  # its mutation class
        return f"link:{self.text}"

    def __call__(self, folder: Path) -> str:
        if not (folder / self.name).is_symlink():  # the same flag drawn twice names one link
            (folder / self.name).symlink_to(folder / self.target)
        return self.name


# `sweep plan --out`: inside the results root or refused; never the tool's own state (its storage, a run's config,
# the spec), nor through a link out of the root
PLAN_OUTS = ["results/p.yaml", SEED_PLAN, "results/tiny/optuna.db", "results/tiny/runs/fuzzrun/config.yaml",
             "spec.yaml", "p.yaml", "results/../p.yaml", "results", ".", "results/new/dir/p.yaml", "/dev/null",
             "results/" + "x" * 300, "results/p.yaml/", Link("results/out-link.yaml", "p.yaml"),
             Link("results/storage-link.yaml", "results/tiny/optuna.db"), Link("results/dangling.yaml", "no/p.yaml")]

DROP = "<dropped>"
L = ("ladders", 0)  # a ladder's field; the index is drawn (the seed plan has two)
# the fields `sweep verify --plan` reads (sweep/forecast/planfile.py), each with values out of their bounds: every
# one refused before anything runs (`plan:` classes, tests/fuzz/contract.py)
PLAN_OUT_OF_BOUNDS = {
    ("plan",): [2, 0, "1", None, True, DROP],
    ("study",): [None, 1, [], {"a": 1}, "other", "", "../tiny", "tiny\n", DROP],
    ("goal",): [0, -1, math.nan, math.inf, 101, 1e-9, "0.45", True, None, DROP],
    ("proxy",): [None, "32", [32], DROP],
    ("proxy", "width"): [0, -1, 2**21, 1.5, "32", True, None, math.nan, 10**30, DROP],
    ("ladders",): [None, {}, "x", [1], [None], [[]], DROP],
    L + ("rungs",): [[], [32], [0, 64], [-32, 64], [math.nan, 64], ["32", 64], [True, 64], [32] * 65, "32,64",
                     None, {}, [1e16, 32], DROP],
    L + ("seeds",): [0, -1, 65, 10**6, 2.5, True, "6", None, math.nan, math.inf, DROP],
    L + ("grid",): [0, 1, 2, 8, 65, 99, 10**6 + 1, 9.5, "9", True, None, DROP],
    L + ("param",): ["run.dir", "optimizer.beta1", "", None, 1, DROP],
    L + ("across",): ["steps", "../../etc", "", None, "width\n", DROP],
    L + ("proxy_value",): [0, -1, math.nan, math.inf, 1e16, "32", None, DROP],
    L + ("target_value",): [0, -1, math.nan, math.inf, 1e16, "32", None, DROP],
    L + ("prior",): ["x", [], {"centre": math.nan, "spread": 0.1}, {"centre": 0, "spread": 0},
                     {"centre": 11, "spread": 0.1}],
    L + ("name",): [None, 1, "", "a\nb", "x" * 300, DROP],
    ("own_curve",): ["x", 1, [32, 64], {}, {"name": "x", "widths": [32], "seeds": 2, "grid": 3}],  # the seed buys none
}
# values within those bounds that verify may still refuse (a width of 33.5, past the machine) or run, and the fields
# verify does not read: refused in one line or run, never a traceback (`plan-edit:`)
PLAN_EDITS = {
    L + ("rungs",): [[32, 33.5], [32, 1e15], [32, 32], [128, 32], [1e-300, 32], [1, 2**20], [3, 5]],
    L + ("seeds",): [64, 1], L + ("grid",): [63, 3], L + ("proxy_value",): [1e15, 1e-300, 48],
    L + ("target_value",): [1e15, 1e-300, 32], L + ("prior",): [None, DROP], L + ("name",): ["[/]", "lr × width"],
    L + ("across",): ["width", "depth", "tokens", "batch_size"],
    ("proxy", "width"): [2**20, 1, 7, 16], ("goal",): [100, 1e-6],
    ("spec",): ["../../etc/passwd", None], ("target",): ["x", DROP], ("budget",): [None], ("noise",): [DROP],
    ("verdict",): [{}], ("total",): [[]], ("hook",): [1], ("own_curve",): [None, DROP],
}
PLAN_YAML_SHAPES = ["duplicate-key", "alias-bomb", "list", "scalar", "empty", "null", "two-documents", "python-tag",
                    "tabs", "truncated", "latin1", "deep-lists", "deep-mappings", "long-line", "bom"]


def edited(doc, path: tuple, value):
    """A copy of the plan document `doc` with `path` (keys and list indices) set to `value` (or removed: DROP);
    unchanged where an earlier edit left no container on the way."""
    out = copy.deepcopy(doc)
    target = out
    for key in path[:-1]:
        ok = isinstance(target, dict) and key in target or isinstance(target, list) and key < len(target)
        if not ok:
            return out
        target = target[key]
    last = path[-1]
    if isinstance(target, dict) and value == DROP:
        target.pop(last, None)
    elif isinstance(target, dict) or isinstance(target, list) and last < len(target) and value != DROP:
        target[last] = copy.deepcopy(value)
    return out


class PlanFile:
    """The `--plan` argument: the seed root's plan (`sweep plan` wrote it) copied to `name` with `edits` ((path,
    value) pairs) and maybe reshaped as YAML text (`shape`); the seed's own plan when neither."""

    def __init__(self, name: str = SEED_PLAN, edits: list | None = None, shape: str | None = None):
        self.name, self.edits, self.shape = name, edits or [], shape
        self.text = " ".join([name, *(f"{'.'.join(map(str, p))}={v!r:.40}" for p, v in self.edits), shape or ""])

    def __call__(self, folder: Path) -> str:
        if self.name == SEED_PLAN and not self.edits and not self.shape:
            return self.name
        doc = yaml.safe_load((folder / SEED_PLAN).read_text())
        for path, value in self.edits:
            doc = edited(doc, path, value)
        text = yaml.safe_dump(doc, sort_keys=False, allow_unicode=True)
        text = yaml_shape(text, self.shape) if self.shape else text
        (folder / self.name).parent.mkdir(parents=True, exist_ok=True)
        (folder / self.name).write_bytes(text.encode("utf-8", "surrogatepass") if isinstance(text, str) else text)
        return self.name


def planted_plan(which: str, folder: Path) -> str:
    """A `--plan` path that is no plan to read: each refused before it is read (`plan-path:`)."""
    results = folder / "results"
    if which == "fifo":
        os.mkfifo(results / "plan.fifo")
        return "results/plan.fifo"
    if which == "link-out-of-root":  # a plan `sweep plan` wrote, moved out of the root, a link to it left inside
        PlanFile("outside-plan.yaml")(folder)
        (results / "plan-link.yaml").symlink_to(folder / "outside-plan.yaml")
        return "results/plan-link.yaml"
    if which == "symlink-loop":
        (results / "loop.yaml").symlink_to(results / "loop.yaml")
        return "results/loop.yaml"
    if which == "big":
        (results / "big-plan.yaml").write_text("#" * ((1 << 20) + 1))
        return "results/big-plan.yaml"
    if which == "empty":
        (results / "empty-plan.yaml").write_text("")
        return "results/empty-plan.yaml"
    return {"missing": "results/tiny/no-plan.yaml", "folder": "results/tiny", "dev-zero": "/dev/zero",
            "proc-environ": "/proc/self/environ", "etc": "/etc/hostname", "spec": "spec.yaml",
            "storage": "results/tiny/optuna.db", "run-config": "results/tiny/runs/fuzzrun/config.yaml",
            "name-over-255": "results/" + LONG_PATHS["name-over-255"], "deep": LONG_PATHS["deep"]}[which]


PLANTED = ["fifo", "link-out-of-root", "symlink-loop", "big", "empty", "missing", "folder", "dev-zero",
           "proc-environ", "etc", "spec", "storage", "run-config", "name-over-255", "deep"]


class Planted:
    def __init__(self, which: str):
        self.which = self.text = which

    def __call__(self, folder: Path) -> str:
        return planted_plan(self.which, folder)


@st.composite
def plan_argument(draw) -> tuple[object, list[str]]:
    """`--plan`: the seed's plan as `sweep plan` wrote it (in the root, or copied out of it, which verify refuses), with
    0–2 of its fields out of bounds (`plan:`) or edited within them (`plan-edit:`), maybe reshaped as YAML text
    (`plan-yaml:`); or a path that is no plan (`plan-path:`)."""
    kind = draw(st.sampled_from(["seed", "copy", "copy", "copy", "planted"]))
    if kind == "seed":
        return PlanFile(), ["plan-file:seed"]
    if kind == "planted":
        which = draw(st.sampled_from(PLANTED))
        return Planted(which), [f"plan-path:{which}"]
    edits, classes = [], []
    for _ in range(draw(st.integers(0, 2))):
        bad = draw(st.booleans())
        table = PLAN_OUT_OF_BOUNDS if bad else PLAN_EDITS
        path = draw(st.sampled_from(sorted(table, key=str)))
        value = draw(st.sampled_from(table[path]))
        path = tuple(draw(st.integers(0, 1)) if key == 0 and path[0] == "ladders" else key for key in path)
        edits.append((path, value))
        classes.append(f"{'plan' if bad else 'plan-edit'}:{'.'.join(map(str, path))}")
    shape = draw(st.sampled_from(PLAN_YAML_SHAPES)) if draw(st.integers(0, 3)) == 0 else None
    name = draw(st.sampled_from(["results/edited-plan.yaml", "plan.yaml"]))  # plan.yaml: outside the root, refused
    return PlanFile(name, edits, shape), classes + ([f"plan-yaml:{shape}"] if shape else []) + \
        (["plan-path:outside-root"] if name == "plan.yaml" else [])


@st.composite
def plan_case(draw, verb: str, focused: bool) -> tuple[str, list, list[str]]:
    """`sweep plan` of a full run and a budget, or `sweep verify --plan` of a plan file (plan_argument); the tiny spec
    when `focused`, else a shipped or mutated one."""
    spec, classes = (File("spec.yaml", TINY_SPEC), []) if focused else draw(spec_argument())
    if verb == "plan":
        budget = draw(st.sampled_from(PLAN_BUDGETS))
        return verb, [spec, "--tokens", "6400", *draw(st.sampled_from(PLAN_TARGETS)), *budget], classes
    plan, plan_classes = draw(plan_argument())
    return "verify", [spec, "--plan", plan, "--trials-from", "spec"], classes + plan_classes
