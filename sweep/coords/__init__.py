"""The coordinate check as a library, below the commands that run it (`coord-check`, `inspect`, `doctor`):
the measurement and its verdict (`check.py`), the μP-readiness refusal (`ready.py`), model and data from
flags (`args.py`), per-role settings (`roles.py`)."""

DEFAULT_STEPS = 8  # steps the check records (t = 0 … 7): `coord-check --steps` and the doctor's check
# Few tokens per step (4 × 32) let q and k align within the default 8 steps, so 1/√d attention shows.
DEFAULT_BATCH = {"gpt": 4}
OTHER_BATCH = 16  # every other model's default batch


def check_batch(model: str) -> int:
    """The coordinate check's default batch for `model` (a zoo name, or a builder's: OTHER_BATCH)."""
    return DEFAULT_BATCH.get(model, OTHER_BATCH)
