"""Transfer rules: how a proxy's settings carry to a run of another width, depth, batch size or length.

Each rule is a small pure function on numbers (its docstring gives the formula and its source);
`sweep.rules.plan.transfer_run` composes them into a full-size RunConfig and records every value a
rule changed (`Change`: rule, field, before, after, formula) in the config's provenance.

A layer below the commands: what `verify` measures along an axis (`axis.py`) and leaves behind (`summary.py`),
and the ladder and per-role laws read from it (`ladder.py`, `roles.py`), are read here by `transfer`, `results`
and `demo`, so no command imports another.
"""
from sweep.rules.change import Change
from sweep.rules.target import BATCH_RULES, Target

__all__ = ["BATCH_RULES", "Change", "Target"]
