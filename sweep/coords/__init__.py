"""The coordinate check as a library, below the commands that run it (`coord-check`, `inspect`, `doctor`):
the measurement and its verdict (`check.py`), the μP-readiness refusal (`ready.py`), model and data from
flags (`args.py`), per-role settings (`roles.py`)."""

DEFAULT_STEPS = 8  # steps the check records (t = 0 … 7): `coord-check --steps` and the doctor's check
