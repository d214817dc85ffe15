"""Each command's defaults are written once, in the dataclass its flags fill (the request, the transfer target, the
coordinate check's constants): the command line shows that value, so `--help`, the docs' reference and a library
caller never disagree."""
import dataclasses

import pytest
import typer.main

from sweep.cli import app
from sweep.coords import DEFAULT_STEPS
from sweep.launch.request import LaunchRequest
from sweep.plan.request import PlanRequest
from sweep.proxy.request import SweepRequest
from sweep.rules.target import Target
from sweep.verify.request import VerifyRequest

TRANSFER = {"batch_rule": "batch_rule", "horizon_rule": "horizon", "depth_rule": "depth_rule",
            "role_rule": "role_rule", "extrapolate": "extrapolate", "prior": "prior", "warmup_rule": "warmup",
            "beta2_rule": "beta2", "wd_rule": "weight_decay"}


def options(command: str) -> dict:
    click = typer.main.get_command(app).commands[command]
    return {p.name: p.default for p in click.params}


def defaults(cls) -> dict:
    return {f.name: f.default for f in dataclasses.fields(cls) if f.default is not dataclasses.MISSING}


def shown(value):
    """A choice's Enum as its value; a repeatable flag's "none given" (None) as the field's empty tuple."""
    return () if value is None or value == [] else getattr(value, "value", value)


@pytest.mark.parametrize("command, cls, names", [("proxy", SweepRequest, None), ("verify", VerifyRequest, None),
                                                 ("launch", LaunchRequest, None), ("plan", PlanRequest, None),
                                                 ("transfer", Target, TRANSFER)])
def test_every_flag_of_a_command_defaults_to_its_dataclass_field(command, cls, names):
    flags, fields = options(command), defaults(cls)
    pairs = names or {name: name for name in flags if name in fields}
    assert pairs, command
    assert {flag: shown(flags[flag]) for flag in pairs} == {flag: shown(fields[field]) for flag, field in pairs.items()}


def test_coord_check_records_the_steps_the_doctor_checks():
    assert options("coord-check")["steps"] == DEFAULT_STEPS
