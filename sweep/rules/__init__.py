"""Transfer rules: how a proxy's settings carry to a run of another width, depth, batch size or length.

Each rule is a small pure function on numbers (its docstring gives the formula and its source);
`sweep.rules.plan.transfer_run` composes them into a full-size RunConfig and records every value a
rule changed (`Change`: rule, field, before, after, formula) in the config's provenance.
"""
from sweep.rules.change import Change
from sweep.rules.plan import BATCH_RULES, Target, transfer_run

__all__ = ["BATCH_RULES", "Change", "Target", "transfer_run"]
