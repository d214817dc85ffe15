"""Mutation tests: every planted μP bug (tests/mutations/bugs.py, each naming the Tensor Programs V rule it
breaks) fails the coordinate check's verdict, and the same model and optimizer unmodified pass it.

Settings are the CLI's defaults (widths 1×, 2×, 4× base, 8 steps on one batch, gpt 4 × 32 tokens, the bug's
optimizer at its default LR: AdamW 2^-7) with 2 seeds instead of 3, and 1 seed for the bugs that the
calibration puts ≥ 0.5 beyond their bound (docs/guide/coord-check.md), to keep the suite quick.
"""
import pytest
import torch

from proxies.registry import base_width_of
from sweep.coords import DEFAULT_BATCH
from sweep.coords import check as cc
from sweep.coords.args import open_model_data
from sweep.coords.check import DEFAULT_LR
from sweep.coords.ready import refuse_unless_mup_ready
from sweep.errors import InputError
from tests.mutations.bugs import BUGS, Bug, keep_groups, make_model, make_optimizer

FAR_BEYOND_BOUND = {"hidden Adam LR not /m", "hidden init not 1/√fan_in", "embedding/bias/gain LR /m",
                    "Lion hidden LR not /m"}


def check(bug: Bug, seeds: int = 2) -> cc.Verdict:
    source = open_model_data(bug.model, None, None, 32)
    base = base_width_of(bug.model)
    batch = DEFAULT_BATCH.get(bug.model, 4 if bug.model == "llama" else 16)  # llama: few tokens, as the gpt
    _, _, verdict = cc.coord_check(make_model(bug, **source.model_options()),
                                   lambda seed: source.batch("train", batch, torch.Generator().manual_seed(seed)),
                                   bug.widths or [base, 2 * base, 4 * base], seeds, 8, lr=DEFAULT_LR[bug.optimizer],
                                   make_optimizer=make_optimizer(bug))
    return verdict


@pytest.mark.parametrize("bug", BUGS, ids=[b.name for b in BUGS])
def test_planted_bug_fails(bug):
    verdict = check(bug, seeds=1 if bug.name in FAR_BEYOND_BOUND else 2)
    assert not verdict.passed, verdict.table


@pytest.mark.parametrize("bug", [Bug("gpt head dim fixed", "", "gpt"), Bug("gpt heads fixed", "", "gpt", {"n_head": 4}),
                                 Bug("llama heads fixed", "", "llama", {"n_head": 4, "n_kv_head": 2}),
                                 Bug("mlp", "", "mlp"),
                                 Bug("gpt muon", "", "gpt", optimizer="muon", widths=(32, 64, 128))],
                         ids=lambda b: b.name)
def test_unmodified_model_and_optimizer_pass(bug):
    """The control: the mutation machinery itself (copy of the groups, plain AdamW over them) is μP."""
    verdict = check(bug)
    assert verdict.passed, verdict.table


@pytest.mark.parametrize("bug", [b for b in BUGS if b.mutate_groups is not keep_groups], ids=lambda b: b.name)
def test_optimizer_bugs_are_refused_up_front(bug):
    """An optimizer whose groups break the μP LR table is refused before anything runs, naming a parameter."""
    source = open_model_data(bug.model, None, None, 32)
    model = make_model(bug, **source.model_options())(2 * base_width_of(bug.model))
    with pytest.raises(InputError, match=r"^optimizer: \S+ \(\w+\) has lr .* μP needs"):
        refuse_unless_mup_ready(model, make_optimizer(bug)(model, 0.01), bug.optimizer)
