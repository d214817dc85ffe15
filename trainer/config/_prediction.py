"""`provenance.prediction`, as the trainer and `sweep status` read it: checked when a config is read, so that a
hand-edited prediction is one line naming its field before any step, not a crash at an evaluation mid-run
(trainer/predicted.py) or a refusal of every run `sweep status` lists."""
from __future__ import annotations

import math
from itertools import pairwise

from trainer.predicted import RATIO, REFINE_FROM

TABLES = {"curve": ("fraction", "loss", "low", "high"), "refine": ("fraction", "ratio", "half")}
REFINE_KEYS = {"fraction", "ratio", "half", "runs", "widths"}
# every key `sweep transfer` writes, and no other (a hand-edited or misspelled key was kept without a word): the fit
# (sweep/rules/scaling.py `predict`: the final interval, the law's own keys in each of its forms, additive and
# local), where the target lies and the law's held-out check (sweep/rules/ladder.py `predicted_loss`), the band and
# the ratios or why there are none (sweep/transfer/command.py `live_band`). tests/test_prediction.py holds transfer's
# own output to it, so the list cannot drift.
FIT_KEYS = {"loss", "low", "high", "level", "rms", "points", "forms", "target", "form", "source", "unknowns"}
LAW_KEYS = {"E", "A", "B", "alpha", "beta", "c", "a", "b", "g", "N0", "D0"}
KEYS = FIT_KEYS | LAW_KEYS | {"beyond", "cut_at_zero", "held_out"} | set(TABLES) | {"no_band", "no_refine"}


def finite(x) -> bool:
    """A finite int or float (numpy's too, as a config built in code holds them), never a bool or a string."""
    return isinstance(x, int | float) and not isinstance(x, bool) and math.isfinite(x)


def check_prediction(value: dict) -> dict:
    """The tables parallel lists of finite numbers, the fractions rising within [0, 1], the curve's low at most its
    high; refine from REFINE_FROM on, its ratios within RATIO and its half-widths in [0, ratio); a prediction
    with anything in it has its final loss ≥ 0 and interval 0 ≤ low ≤ high (what transfer writes); no key
    transfer never writes (KEYS)."""
    if extra := sorted(set(value) - KEYS, key=str):
        raise ValueError(f"unknown key {extra[0]!r}: not one `sweep transfer` writes ({', '.join(sorted(KEYS))})")
    for key, columns in TABLES.items():
        if key in value:
            check_table(key, value[key], columns)
    if "refine" in value:
        check_refine(value["refine"])
    if value and not (all(finite(value.get(k)) for k in ("loss", "low", "high"))
                      and value["loss"] >= 0 and 0 <= value["low"] <= value["high"]):  # what status and the report read
        raise ValueError("loss, low, high: finite numbers, all three, with loss ≥ 0 and 0 ≤ low ≤ high")
    if "level" in value and not (finite(value["level"]) and 0 < value["level"] < 1):
        raise ValueError(f"level: the interval's level in (0, 1), got {value['level']!r}")
    return value


def check_table(key: str, table, columns: tuple[str, ...]) -> None:
    lists = [table.get(c) for c in columns] if isinstance(table, dict) else [None]
    if not all(isinstance(v, list) and all(finite(x) for x in v) for v in lists) or len({len(v) for v in lists}) != 1:
        raise ValueError(f"{key} must map {', '.join(columns)} to lists of finite numbers of one length")
    fraction = table["fraction"]
    if any(not 0 <= f <= 1 for f in fraction) or any(b <= a for a, b in pairwise(fraction)):
        raise ValueError(f"{key}.fraction must rise within [0, 1]")
    if key == "curve" and any(low > high for low, high in zip(table["low"], table["high"], strict=True)):
        raise ValueError("curve: each low at most its high (a band the run is held to)")


def check_refine(refine: dict) -> None:
    if extra := sorted(set(refine) - REFINE_KEYS):
        raise ValueError(f"refine: unknown key {extra[0]!r} (it holds {', '.join(sorted(REFINE_KEYS))})")
    if refine["fraction"] and refine["fraction"][0] < REFINE_FROM:
        raise ValueError(f"refine.fraction: from {REFINE_FROM} of the run on, got {refine['fraction'][0]}")
    if any(not (RATIO[0] <= r <= RATIO[1] and 0 <= h < r) for r, h in zip(refine["ratio"], refine["half"],
                                                                          strict=True)):
        raise ValueError(f"refine: each ratio within [{RATIO[0]:g}, {RATIO[1]:g}] and each half in [0, ratio) "
                         "(the final is L(f) / (ratio ± half))")
    runs, widths = refine.get("runs", 3), refine.get("widths", [1, 2])
    if not (type(runs) is int and runs >= 3 and isinstance(widths, list) and len(widths) >= 2
            and all(type(w) is int and w >= 1 for w in widths)):
        raise ValueError("refine: runs, a whole number ≥ 3, and widths, two positive whole numbers or more")
