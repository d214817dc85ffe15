"""The one rule for a password or token inside text a user gave (a URL, a flag's value): the storage URL check,
the MLflow tracking URI and the masking of usage errors all apply it, so a form caught in one is caught in all."""
from __future__ import annotations

import re
from urllib.parse import unquote

# `key=value` where the key names a secret (not `tokens=`, a budget that lines quote back: `--across tokens=1,2`),
# or a URL's user info `scheme://user:secret@`, also with its slashes collapsed (`scheme:/user:secret@`), as a URL
# taken for a path comes back in a message
EMBEDDED_SECRET = re.compile(r"(?:pass\w*|pwd|secret\w*|token(?!s\s*=)\w*|api_?key\w*|access_?key\w*)\s*="
                             r"|:/+[^/?#]*:[^/?#]*@", re.IGNORECASE)


def decoded(text: str) -> str:
    """`text` percent-decoded until it no longer changes (a driver may decode a nested URL again)."""
    for _ in range(8):
        text, before = unquote(text), text
        if text == before:
            break
    return text


def holds_secret(text: str) -> bool:
    """Whether `text`, percent-decoded, holds a password or token by EMBEDDED_SECRET."""
    return bool(EMBEDDED_SECRET.search(decoded(text)))
