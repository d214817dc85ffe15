"""Tests for trainer.schedule: formulas, step alignment, μP group ratios, resume, bad arguments."""

import math
import pickle
import warnings

import pytest
import torch

from trainer.schedule import KINDS, Schedule, make_scheduler

LR = 0.01
MULTS = (1.0, 0.25, 1 / 16)


def optimizer_with_groups(mults=MULTS, lr=LR):
    """Plain torch SGD with one group per lr_mult, lr = base · lr_mult, as trainer.optim builds them."""
    groups = [{"params": [torch.nn.Parameter(torch.ones(2))], "lr": lr * m, "lr_mult": m} for m in mults]
    return torch.optim.SGD(groups, lr=lr)


def lrs_used(optimizer, scheduler, n, scheduler_first=False):
    """The lr of group 0 that each of n optimizer steps actually ran with (read by a pre-step hook)."""
    used = []
    optimizer.register_step_pre_hook(lambda opt, args, kwargs: used.append(opt.param_groups[0]["lr"]))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch warns when the scheduler steps first
        for _ in range(n):
            if scheduler_first:
                scheduler.step()
            optimizer.step()
            if not scheduler_first:
                scheduler.step()
    return used


def test_warmup_starts_tiny_and_reaches_peak():
    s = Schedule("cosine", total_steps=100, warmup_steps=10)
    assert s(0) == pytest.approx(1 / 11) and s(0) > 0
    assert s(9) == pytest.approx(10 / 11)
    assert s(10) == pytest.approx(1.0)  # first step after warmup is the peak


@pytest.mark.parametrize("kind,mid,end", [
    ("cosine", 0.1 + 0.9 * 0.5, 0.1),  # p = ½: halfway between peak and floor
    ("linear", 1 - 0.9 * 0.5, 0.1),
    ("constant", 1.0, 1.0),
    ("wsd", 1.0, 0.1),  # still in the stable phase mid-run
])
def test_values_mid_run_and_at_the_end(kind, mid, end):
    s = Schedule(kind, total_steps=110, warmup_steps=10, min_lr_ratio=0.1)
    assert s(60) == pytest.approx(mid)  # p = (60 - 10) / 100
    assert s(110) == pytest.approx(end) and s(500) == pytest.approx(end)  # clipped past the end
    p_last = 99 / 100
    last = {"cosine": 0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * p_last)), "linear": 1 - 0.9 * p_last,
            "constant": 1.0, "wsd": 0.1 + 0.9 * (1 - 21 / 22)}[kind]
    assert s(109) == pytest.approx(last)  # the last optimizer step


@pytest.mark.parametrize("shape,f", [
    ("linear", lambda q: 1 - q),
    ("cosine", lambda q: 0.5 * (1 + math.cos(math.pi * q))),
    ("sqrt", lambda q: 1 - math.sqrt(q)),
])
def test_wsd_decays_over_the_last_fraction_with_its_shape(shape, f):
    s = Schedule("wsd", total_steps=100, warmup_steps=5, min_lr_ratio=0.2, decay_fraction=0.2, decay_shape=shape)
    assert s.decay_start == 80
    assert s(79) == 1.0 and s(80) == 1.0
    assert s(90) == pytest.approx(0.2 + 0.8 * f(0.5))
    assert s(100) == pytest.approx(0.2)


def test_first_optimizer_step_uses_factor_0_not_factor_1():
    s = Schedule("linear", total_steps=20, warmup_steps=5)
    expected = [pytest.approx(LR * s(t)) for t in range(20)]
    opt = optimizer_with_groups()
    assert lrs_used(opt, make_scheduler(opt, s), 20) == expected  # optimizer.step(); scheduler.step()
    assert expected[0] == LR * s(0) and s(0) > 0
    opt = optimizer_with_groups()  # the check tells the orders apart: stepping the scheduler first skips factor(0)
    assert lrs_used(opt, make_scheduler(opt, s), 20, scheduler_first=True) != expected


@pytest.mark.parametrize("kind", KINDS)
def test_group_ratios_equal_lr_mult_ratios_at_every_step(kind):
    s = Schedule(kind, total_steps=30, warmup_steps=4, decay_fraction=0.5)
    opt = optimizer_with_groups()
    sched = make_scheduler(opt, s)
    for t in range(35):
        lrs = [g["lr"] for g in opt.param_groups]
        for g, lr in zip(opt.param_groups, lrs, strict=True):
            assert lr == pytest.approx(LR * g["lr_mult"] * s(t))  # not one absolute LR for all groups
        for i in range(len(lrs)):
            for j in range(len(lrs)):
                assert lrs[i] / lrs[j] == pytest.approx(MULTS[i] / MULTS[j])
        opt.step()
        sched.step()


def test_state_dict_round_trips_with_weights_only_and_continues_identically(tmp_path):
    s = Schedule("wsd", total_steps=40, warmup_steps=4, decay_fraction=0.5, decay_shape="sqrt")
    opt = optimizer_with_groups()
    sched = make_scheduler(opt, s)
    for _ in range(15):
        opt.step()
        sched.step()
    torch.save({"optimizer": opt.state_dict(), "scheduler": sched.state_dict()}, tmp_path / "ckpt.pt")
    reference = lrs_used(opt, sched, 25)

    ckpt = torch.load(tmp_path / "ckpt.pt", weights_only=True)
    opt2 = optimizer_with_groups()
    sched2 = make_scheduler(opt2, s)  # as the trainer resumes: build both, then load both
    opt2.load_state_dict(ckpt["optimizer"])
    sched2.load_state_dict(ckpt["scheduler"])
    assert lrs_used(opt2, sched2, 25) == reference
    assert reference[0] == pytest.approx(LR * s(15))


def test_schedule_is_picklable():
    s = Schedule("cosine", total_steps=10, warmup_steps=2)
    assert pickle.loads(pickle.dumps(s)) == s


@pytest.mark.parametrize("kwargs,field", [
    (dict(kind="foo"), "schedule.kind"),
    (dict(total_steps=0, warmup_steps=0), "schedule.total_steps"),
    (dict(warmup_steps=100), "schedule.warmup_steps"),
    (dict(warmup_steps=-1), "schedule.warmup_steps"),
    (dict(min_lr_ratio=1.5), "schedule.min_lr_ratio"),
    (dict(min_lr_ratio=-0.1), "schedule.min_lr_ratio"),
    (dict(decay_fraction=2.0), "schedule.decay_fraction"),
    (dict(kind="wsd", warmup_steps=90, decay_fraction=0.2), "schedule.decay_fraction"),
    (dict(decay_shape="exp"), "schedule.decay_shape"),
])
def test_bad_arguments_raise_naming_the_field(kwargs, field):
    args = dict(kind="cosine", total_steps=100, warmup_steps=10) | kwargs
    with pytest.raises(ValueError, match=rf"^{field}: ") as e:
        Schedule(**args)
    assert "\n" not in str(e.value)


def test_kind_error_lists_the_choices():
    with pytest.raises(ValueError, match="schedule.kind: 'foo' is not one of cosine, wsd, linear, constant"):
        Schedule("foo", total_steps=10, warmup_steps=0)
