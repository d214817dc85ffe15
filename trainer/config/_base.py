"""What every section of the RunConfig shares: the one-line ConfigError, strict models, names that become folders."""
from __future__ import annotations

import re
from types import UnionType
from typing import Annotated, Any, Literal, Union, get_args, get_origin

from pydantic import AfterValidator, BaseModel, ConfigDict, ValidationInfo, field_validator

from trainer.yaml_io import FLOAT, INT


class ConfigError(ValueError):
    """A bad run config; str() is one line: `key.path: what is wrong (what is allowed)`."""


# A name that becomes a folder (a study, a run): never `.`, `..`, hidden or flag-like, and short enough that
# the folders made from it (NAME-w1024-mup, curve partitions) stay under the file system's 255 bytes.
NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9._-]{0,99}")
NAME_RULE = "1 to 100 letters, digits, '.', '_' or '-', not starting with '.' or '-'"


def check_name(value: str) -> str:
    """`value` if it is a NAME, else a ValueError stating the rule."""
    if not NAME.fullmatch(value):
        shown = value if len(value) <= 40 else value[:40] + "…"
        raise ValueError(f"a name of {NAME_RULE} (got {shown!r})")
    return value


Name = Annotated[str, AfterValidator(check_name)]


def takes_bool(annotation) -> bool:
    """Whether a field's type admits a boolean (bool itself, Any, or a union or Annotated holding one)."""
    if annotation is bool or annotation is Any:
        return True
    if get_origin(annotation) is Literal:
        return any(isinstance(v, bool) for v in get_args(annotation))
    return any(takes_bool(a) for a in get_args(annotation) if not isinstance(a, (str, int, float)) or a is None)


def number_kind(annotation) -> str | None:
    """"an integer" or "a number" when a field's type admits numbers and nothing else (int, float, an Annotated one,
    a union of them with None); None otherwise."""
    if get_origin(annotation) is Annotated:
        return number_kind(get_args(annotation)[0])
    if annotation in (int, float):
        return "an integer" if annotation is int else "a number"
    kinds = [number_kind(a) for a in get_args(annotation) if a is not type(None)]
    if get_origin(annotation) not in (Union, UnionType) or not kinds or None in kinds:
        return None
    return "an integer" if set(kinds) == {"an integer"} else "a number"


class Strict(BaseModel):
    # allow_inf_nan=False: a float field is finite whatever its bounds (`lr: .inf` passes `gt=0` otherwise)
    model_config = ConfigDict(extra="forbid", validate_assignment=True, allow_inf_nan=False)

    @field_validator("*", mode="before")
    @classmethod
    def _no_bool_for_a_number(cls, value, info: ValidationInfo):
        """`lr_mult: true` read as 1, `lr_mult: "1_000"` as 1000 (pydantic's lax mode takes a bool, or text Python
        reads as a number, for a number): a YAML typo trained. Text that is a YAML 1.2 number is that number (PyYAML
        reads `1e-8` as text, so a config edited in Python holds it so)."""
        annotation = cls.model_fields[info.field_name].annotation
        if isinstance(value, bool) and not takes_bool(annotation):
            raise ValueError(f"a boolean is not allowed here (got {str(value).lower()})")
        kind = number_kind(annotation)
        if isinstance(value, str) and kind and not (INT.match(value) or FLOAT.match(value)):
            shown = value if len(value) <= 40 else value[:40] + "…"
            raise ValueError(f"{kind}, not text (got {shown!r})")
        return value
