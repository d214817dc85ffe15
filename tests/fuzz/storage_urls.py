"""Storage URLs for `--storage` (`url:`): new, missing and special files, passwords from the environment or
written into the URL (the planted SECRET must never be shown or written), unknown schemes and garbage."""
from __future__ import annotations

from pathlib import Path

from hypothesis import strategies as st

from tests.fuzz.odd_values import LONG_PATHS

SECRET = "pw-Fuzz7q@x/y:z#k"  # planted in $SWEEP_FUZZ_PW: never in any output or file
SECRET_ENV = "SWEEP_FUZZ_PW"
# port 9 (discard): nothing listens on loopback here, so a connection is refused at once
URLS = {
    "sqlite-new": "sqlite:///{folder}/other.db",
    "sqlite-missing-folder": "sqlite:///{folder}/no/such/dir/x.db",
    "sqlite-dev-null": "sqlite:////dev/null",
    "sqlite-relative": "sqlite:///rel.db",
    "journal-new": "journal:{folder}/j.log",
    "env-password": "postgresql://sweep:${SWEEP_FUZZ_PW}@127.0.0.1:9/sweep",
    "env-password-flag": "postgresql://sweep@127.0.0.1:9/sweep",
    "literal-userinfo": "postgresql://sweep:{secret}@127.0.0.1:9/sweep",
    "literal-query": "postgresql://sweep@127.0.0.1:9/sweep?password={secret}",
    "literal-libpq": "postgresql:///sweep?host=127.0.0.1&port=9&user=u&password={secret}",
    "unknown-scheme": "mongodb://127.0.0.1/db",
    "garbage": "::::",
    "empty": "",
    "no-host": "postgresql://",
    "unset-env": "postgresql://u:${NO_SUCH_FUZZ_VAR}@127.0.0.1:9/db",
    "sqlite-memory": "sqlite://",
    "sqlite-proc": "sqlite:////proc/self/x.db",
    "sqlite-name-over-255": "sqlite:///{folder}/" + LONG_PATHS["name-over-255"] + ".db",
    "sqlite-deep": "sqlite:///{folder}/" + LONG_PATHS["deep"] + "/x.db",
    "journal-name-over-255": "journal:{folder}/" + LONG_PATHS["name-over-255"] + ".log",
}
# the file a storage URL names in the example's folder: the user asked for it there, so a success may write it
# (and its journal or lock beside it)
STORAGE_FILES = {"sqlite-new": "other.db", "sqlite-relative": "rel.db", "journal-new": "j.log"}


def storage_url(kind: str, folder: Path) -> str:
    return URLS[kind].replace("{folder}", str(folder)).replace("{secret}", SECRET)


@st.composite
def storage_flags(draw) -> tuple[list, list[str]]:
    kind = draw(st.sampled_from(sorted(URLS)))
    flags = ["--storage", lambda folder: storage_url(kind, folder)]
    if kind == "env-password-flag" or draw(st.integers(0, 5)) == 0:
        flags += ["--storage-password-env", SECRET_ENV]
    return flags, [f"url:{kind}"]
