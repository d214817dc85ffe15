"""Values that break things: odd numbers and texts for a document's fields, odd and huge values for a flag, names
and paths past the file system's limits."""
from __future__ import annotations

import math

from hypothesis import strategies as st

ODD_NUMBERS = [0, -1, -0.0, 1e-300, 1e300, 2**63, -(2**63), 10**30, math.nan, math.inf, -math.inf, 0.5, 3]
ODD_TEXT = [
    "",
    " ",
    ".",
    "..",
    "../..",
    "a/b",
    "/",
    "-",
    "--",
    "x" * 300,
    "ü-名前",
    "a\nb",
    "$HOME",
    "%s",
    "null",
    "~",
    "*",
    "a b",
    "\x00",
]
ODD_FLAG_VALUES = [
    "",
    "0",
    "-1",
    "1.5",
    "nan",
    "inf",
    "-inf",
    "1e309",
    "abc",
    "..",
    "/",
    "x" * 300,
    "--help",
    "2147483648",
    "1,2",
    "0x10",
    "ü",
]
NAMES = [".", "..", "", "a/b", "../x", "x" * 300, "ü", "-", " tiny", "CON", "a\tb", "tiny2", "ok_name-1"]
# counts past what a machine can do and integers past machine range: any number a flag takes
HUGE_VALUES = ["1000000000", str(10**12), str(10**23), str(2**63), "9" * 5000, "1e300", "1e20", "65536"]
LONG_PATHS = {"name-over-255": "x" * 300, "deep": "/".join(["d" * 200] * 25)}  # past NAME_MAX, past PATH_MAX


def odd_value():
    return st.one_of(
        st.sampled_from(ODD_NUMBERS),
        st.sampled_from(ODD_TEXT),
        st.booleans(),
        st.none(),
        st.just([]),
        st.just({}),
        st.just([1, "a"]),
        st.just({"x": 1}),
    )
