"""Each verb's flags with plausible values, set to those or to odd ones (`flag:`, `count:`), and a single-valued
option given twice (`flag:twice:`)."""
from __future__ import annotations

from hypothesis import strategies as st

from tests.fuzz.odd_values import HUGE_VALUES, ODD_FLAG_VALUES
from tests.fuzz.plans import PLAN_OUTS, SEED_PLAN

STUDY_REFS = ["tiny", "spec.yaml", "nosuch", ".", "..", "../results", "/etc", "x" * 300, "tiny/../tiny", ""]
VERB_OPTIONS = {  # flag → plausible values (None: a switch), drawn by mutate_flags
    "init": {"--out": ["new.yaml", "results", "results/x.yaml", "spec.yaml", "/dev/null", "out/"]},
    "inspect": {
        "--width": ["8", "16", "0", "24"],
        "--depth": ["1", "3"],
        "--parametrization": ["sp", "mup", "xp"],
        "--opt": ["n_head=2", "head_dim=8", "head_dim=3", "block_size=0", "nope=1", "novalue"],
        "--set": ["optimizer.roles.embedding.lr_mult=4", "optimizer.roles.tied.lr_mult=2", "model.init.readout=0",
                  "optimizer.roles.embedding.lr_width_exp=-0.5", "optimizer.roles.norm.lr_width_exp=3",
                  "model.init.nope=2", "optimizer.lr=1", "novalue"],
    },
    "coord-check": {
        "--widths": ["8,16", "16,8", "8", "8,8", "0,8", "a,b"],
        "--steps": ["2", "1"],
        "--seeds": ["1", "0"],
        "--model": ["mlp", "gpt", "resnet", "no.such:fn", "os:system"],
        "--lr": ["0.01", "-1", "nan"],
        "--data": ["synthetic", "stdlib", "tokens", "text", "bogus"],
        "--data-path": ["data.bin", "/dev/zero"],
        "--out": ["cc", "results/cc", "spec.yaml"],
        "--opt": ["n_head=1", "x=y", "novalue"],
    },
    "train": {"--steps": ["1", "3", "0"], "--resume": [None], "--quiet": [None]},
    "proxy": {
        "--width": ["16", "8", "24", "0"],
        "--trials": ["2", "1", "0", "-1"],
        "--workers": ["1", "0", "-2"],
        "--enqueue": ["optimizer.lr=0.01", "optimizer.lr=-1", "nope=1", "optimizer.lr", "optimizer.lr=nan"],
        "--timeout": ["0", "nan", "-1", "inf", "1e308"],
        "--backend": ["local", "k8s"],
        "--parametrization": ["sp", "mup"],
        "--warm-start": ["8", "16", "-1"],
        "--warm-start-top": ["2", "0"],
        "--detach": [None],
        "--cpus-per-trial": ["-1", "nan"],
        "--time": ["-5"],
    },
    "results": {
        "--width": ["16", "8", "-1"],
        "--top": ["0", "-1", "3"],
        "--format": ["csv", "json", "xml"],
        "--plots": [None],
        "--no-plots": [None],
    },
    "sql": {
        "--study": STUDY_REFS,
        "--format": ["csv", "parquet", "json"],
        "--out": ["q.csv", "results/q.parquet", "spec.yaml", "."],
    },
    "export": {"--format": ["csv", "parquet", "xlsx"], "--out": ["exp", "results/exp", "spec.yaml", "."]},
    "compare": {
        "--x": ["step", "tokens", "fraction", "time"],
        "--metric": ["val_loss", "train_loss", "acc"],
        "--study": STUDY_REFS,
        "--out": ["c.png", "results/c.png", "spec.yaml", "."],
    },
    "verify": {
        "--widths": ["16,32", "16", "0,16", "8,8", "a"],
        "--across": ["batch_size=4,8", "steps=2,4", "width=16,32", "batch_size=4", "nope=1,2", "steps=0,4", "depth=x",
                     "steps=2,2,4"],
        "--values": ["0.01,0.02", "0.01", "-1,2", "2^-8,2^-7", "nan,1"],
        "--range": ["0.001,0.1,2", "0.1,0.001,3", "1,2,0", "x"],
        "--param": ["optimizer.lr", "optimizer.beta1", "nope"],
        "--parametrizations": ["mup", "sp", "mup,sp", "xp"],
        "--seeds": ["1", "0"],
        "--trials-from": ["spec", "best", "worst"],
        "--max-drift": ["1", "nan", "-1"],
        "--ladder-width": ["16", "32", "0", "-8", "x"],
        "--ladder-batch": ["8", "16", "0", "-4", "1e30", "x"],
        "--refine": ["0", "2", "-1", "33", "nan"],
        "--workers": ["1", "0"],
        "--plan": [SEED_PLAN, "nosuch.yaml", "spec.yaml", "results", "/dev/zero"],  # a case with it stops dry
    },
    "transfer": {
        "--width": ["64", "16", "0", "24"],
        "--depth": ["2", "0"],
        "--batch-size": ["4", "0", "3"],
        "--tokens": ["1000", "0"],
        "--steps": ["50", "4", "0"],
        "--batch-rule": ["none", "sqrt", "linear", "noise", "fitted", "cubic"],
        "--horizon-rule": ["none", "fitted", "x"],
        "--depth-rule": ["model", "fitted", "x"],
        "--extrapolate": [None],
        "--warmup-rule": ["fraction", "tokens", "x"],
        "--beta2-rule": ["halflife", "none", "x"],
        "--wd-rule": ["tokens", "fraction", "none", "x"],
        "--trial": ["best", "0", "1", "99", "-1", "x"],
        "--proxy-width": ["16", "8"],
        "--out": ["t.yaml", "results/t.yaml", "spec.yaml", "."],
    },
    "launch": {
        "--backend": ["local", "k8s"],
        "--nproc": ["1", "0", "-1"],
        "--gpus-per-node": ["0", "-1"],
        "--time": ["0", "-1"],
        "--mem": ["nan", "-1"],
        "--detach": [None],
    },
    "status": {"--format": ["table", "json", "xml"]},
    "doctor": {
        "--width": ["16", "8", "0"],
        "--lr-max": ["0.1", "0", "nan", "inf"],
        "--out": ["d.parquet", "results/d.parquet", "spec.yaml", "."],
    },
    "report": {"--out": ["r.html", "results/r.html", "spec.yaml", "."]},
    "plan": {
        "--tokens": ["6400", "1600", "26e9", "6400.5", "10", "0"],
        "--width": ["256", "4096", "64", "32", "0"],
        "--depth": ["1", "4", "8", "0"],
        "--params": ["1e6", "1.3e9", "1e3", "0"],
        "--batch-size": ["2", "4", "512", "0"],
        "--share": ["0.05", "0.5", "1", "1.5", "1e-9", "0"],
        "--flops": ["1e11", "1e20", "1e8", "1e31", "0"],
        "--goal": ["0.45", "3", "0.01", "0", "-1"],
        "--proxy-width": ["32", "64", "256", "0"],
        "--out": PLAN_OUTS,
    },
}


@st.composite
def mutate_flags(draw, argv: list, options: dict[str, list[str]]) -> tuple[list, list[str]]:
    """`argv` with 0–2 of the verb's `options` (flag → plausible values) set to plausible or odd values,
    a positional dropped or an unknown flag added."""
    argv, classes = list(argv), []
    for _ in range(draw(st.integers(0, 2))):
        kind = draw(st.sampled_from(["value", "value", "odd", "unknown", "drop", "huge"]))
        if kind == "unknown":
            argv.append(draw(st.sampled_from(["--no-such-flag", "-x", "--width=", "--"])))
            classes.append("flag:unknown")
        elif kind == "drop" and len(argv) > 1:
            argv.pop(draw(st.integers(1, len(argv) - 1)))
            classes.append("flag:drop")
        elif kind == "huge" and options:
            flag = draw(st.sampled_from(sorted(options)))
            value = draw(st.sampled_from(HUGE_VALUES))
            argv += [flag, value]
            classes.append(f"count:{flag}={value[:12]}")
        elif options:
            flag = draw(st.sampled_from(sorted(options)))
            value = (
                draw(st.sampled_from(options[flag] or [""]))
                if kind == "value"
                else draw(st.sampled_from(ODD_FLAG_VALUES))
            )
            argv += [flag] if value is None else [flag, value]
            classes.append(f"flag:{flag}={'odd' if kind == 'odd' else value}")
    return argv, classes


def single_valued(verb: str) -> list[tuple[str, bool]]:
    """Every option of `verb` that takes one value, as (its first name, whether it is a switch), read from the
    command itself, so an option added later is drawn too."""
    import typer

    from sweep.cli import app

    command = typer.main.get_command(app).commands[verb]
    return sorted((p.opts[0], p.is_flag) for p in command.params if p.param_type_name == "option" and not p.multiple)


@st.composite
def given_twice(draw, verb: str, argv: list, classes: list[str]) -> tuple[list, list[str]]:
    """Now and then (1 in 6) one of the verb's single-valued options given twice, right after the verb (so no
    `--` drawn later turns it into a positional): refused, naming it, however plausible each value (`flag:twice:`,
    tests/fuzz/contract.py)."""
    if draw(st.integers(0, 5)):
        return argv, classes
    flag, switch = draw(st.sampled_from(single_valued(verb)))
    values = [v for v in VERB_OPTIONS[verb].get(flag, []) if v is not None] or ["1"]
    pair = [flag, flag] if switch else [flag, draw(st.sampled_from(values)), flag, draw(st.sampled_from(values))]
    return [argv[0], *pair, *argv[1:]], [*classes, f"flag:twice:{flag}"]
