"""A single-valued option given twice is refused (click keeps the last silently), and a float typed as nan or inf
(values.py: `finite_floats`) before its type and range are checked; the parameters a line gave are recorded for a
command that must tell a typed default from an untyped one (`sweep verify --plan`)."""
from __future__ import annotations

from collections import Counter
from contextvars import ContextVar

from typer.core import TyperCommand

from sweep.argv.values import finite_floats
from sweep.errors import InputError


class OnceEach(TyperCommand):
    """A command refusing a single-valued option given more than once (`--across width=… --across tokens=…`): click
    keeps the last silently, so the first the user typed would be dropped. Options declared as lists (`--set`,
    `--opt`, `--enqueue`) repeat by design."""

    def parse_args(self, ctx, args: list[str]) -> list[str]:
        if not ctx.resilient_parsing:  # shell completion parses half-typed lines
            given, _, order = self.make_parser(ctx).parse_args(args=list(args))
            refuse_repeats(order)
            finite_floats(self.params, given)
            TYPED.set(frozenset(param.name for param in order))
        return super().parse_args(ctx, args)


TYPED: ContextVar[frozenset[str]] = ContextVar("typed", default=frozenset())  # the parameters this line gave


def refuse_repeats(order: list) -> None:
    """`order`: the parameters as click's parser met them, once per time each was given. With --help, the help."""
    if any(param.is_eager for param in order):
        return
    for param, times in Counter(order).items():
        if times > 1 and param.param_type_name == "option" and not param.multiple:
            raise InputError(f"{'/'.join(param.opts + param.secondary_opts)}: given {times} times; it takes one "
                             "value, so give it once (only the last would count)")
