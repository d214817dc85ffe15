"""Per-role multipliers: `optimizer.roles.<role>` (LR and weight decay) and `model.init.<role>` (init scale)."""
from __future__ import annotations

from typing import Annotated

from pydantic import Field

from trainer.config._base import Strict

# The parameter roles of the μP table (`proxies.parametrization.ROLES`, equal by test: config imports no torch).
ROLES = ("hidden", "input", "embedding", "readout", "tied", "bias", "norm", "other")
# far above any trained setting, far below where float32 overflows (3.4e38) in lr × multipliers × updates
LR_MAX = MULT_MAX = 1e4
MULT_MIN = 1 / MULT_MAX  # a role at 1e-4 of the base is as good as frozen; below, a subnormal reaches the optimizer
Mult = Annotated[float, Field(ge=MULT_MIN, le=MULT_MAX)]  # a finite multiplier (Strict refuses inf and nan)


def _one(value: float) -> bool:
    return value == 1.0


def _zero(value: float) -> bool:
    return value == 0.0


def _unset(value: RoleSettings) -> bool:
    return value == RoleSettings()


class InitMults(Strict):
    """`model.init.<role>`: each parameter of that role is multiplied by it after the model's own init (μP's or
    SP's), the same number at every width, so the init's width scaling is kept; 1 (the default) leaves it as drawn.
    A role left at 1 is absent from dumps (here and in `RoleMults`): a config states the multipliers it changes."""

    hidden: Mult = Field(1.0, exclude_if=_one)
    input: Mult = Field(1.0, exclude_if=_one)
    embedding: Mult = Field(1.0, exclude_if=_one)
    readout: Mult = Field(1.0, exclude_if=_one)
    tied: Mult = Field(1.0, exclude_if=_one)
    bias: Mult = Field(1.0, exclude_if=_one)
    norm: Mult = Field(1.0, exclude_if=_one)
    other: Mult = Field(1.0, exclude_if=_one)

    def given(self) -> dict[str, float]:
        """{role: multiplier} for the roles set away from 1."""
        return {role: v for role, v in self.model_dump().items() if v != 1.0}


class RoleSettings(Strict):
    """One role's multipliers: its LR is base LR × μP multiplier × lr_mult × m^lr_width_exp, with m = width / base
    width; its weight decay × weight_decay_mult.

    `lr_width_exp` (0 by default: μP's table as it is) moves the role off μP's width rule by a power of m, so that a
    role whose LR optimum drifts with width under μP gets a width-free `lr_mult` again. −0.5 on the embedding is
    u-μP's embedding rule, η_emb ∝ 1/√fan-out (Blake et al. 2024, "u-μP: The Unit-Scaled Maximal Update
    Parametrization", section "A new embedding LR rule", found empirically); per-layer exponents as a search axis
    are Everett et al. 2024 ("Scaling Exponents Across Parameterizations and Optimizers")."""

    lr_mult: Mult = 1.0
    weight_decay_mult: Mult = 1.0
    lr_width_exp: float = Field(0.0, ge=-1.0, le=1.0, exclude_if=_zero)


class RoleMults(Strict):
    """`optimizer.roles.<role>`: per-role multipliers on top of the optimizer's μP table (roles as `sweep inspect`
    names them); every role at 1 (the default) gives the μP groups unchanged."""

    hidden: RoleSettings = Field(RoleSettings(), exclude_if=_unset)
    input: RoleSettings = Field(RoleSettings(), exclude_if=_unset)
    embedding: RoleSettings = Field(RoleSettings(), exclude_if=_unset)
    readout: RoleSettings = Field(RoleSettings(), exclude_if=_unset)
    tied: RoleSettings = Field(RoleSettings(), exclude_if=_unset)
    bias: RoleSettings = Field(RoleSettings(), exclude_if=_unset)
    norm: RoleSettings = Field(RoleSettings(), exclude_if=_unset)
    other: RoleSettings = Field(RoleSettings(), exclude_if=_unset)

    def given(self) -> dict[str, tuple[float, float]]:
        """{role: (lr_mult, weight_decay_mult)} for the roles set away from 1."""
        return {role: (s.lr_mult, s.weight_decay_mult) for role in ROLES
                if (s := getattr(self, role)) != RoleSettings()}

    def width_exps(self) -> dict[str, float]:
        """{role: lr_width_exp} for the roles whose exponent is not 0."""
        return {role: e for role in ROLES if (e := getattr(self, role).lr_width_exp) != 0.0}
