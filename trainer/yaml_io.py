"""YAML as every command reads it: the safe loader, scalars as YAML 1.2 reads them, and the input bounded.

PyYAML follows YAML 1.1, where `1e-3` (no dot) is a string, `1:30` the integer 90, `017` octal,
`yes`, `no`, `on` and `off` booleans and `2026-01-01` a date; in a config each silently turns a
setting into something else.
This loader resolves booleans, integers and floats by YAML 1.2's core schema: `1e-3`, `2E5` and `.5`
are floats, `true`/`false` the only booleans, and the rest of YAML 1.1's forms are text.

Bounds (a spec or config is hand-written and small; anything else is refused as bad YAML, a
yaml.YAMLError the callers turn into one line naming the file):
- a key given twice in one mapping (PyYAML keeps the last one silently);
- a document whose aliases expand it past MAX_NODES nodes: the "billion laughs" bomb, 855 bytes
  that become 10⁹ nodes once hashed or dumped, is refused while it is composed, before any expansion;
- a document nested deeper than MAX_DEPTH collections: PyYAML composes (and every reader walks) a document
  recursively, so 50,000 `[` in under 1 MiB ended in a RecursionError; refused while composed;
- a file that is not a regular file (a FIFO, `/dev/zero`, a folder) or is over MAX_BYTES (`read_file`).
"""
from __future__ import annotations

import os
import re
import stat
from collections.abc import Hashable
from pathlib import Path
from typing import Any

import yaml

MAX_BYTES = 1 << 20  # 1 MiB of YAML: a spec or a RunConfig is a few KiB
MAX_NODES = 100_000  # nodes of the document once every alias is expanded
MAX_DIGITS = 100  # characters of one integer
MAX_DEPTH = 100  # collections nested in one another: a config nests 4 deep, Python's stack ends near 1,000


class Loader(yaml.SafeLoader):
    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict:
        seen = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=True)
            if not isinstance(key, Hashable):
                continue  # SafeLoader's own construct_mapping refuses it, naming the key
            if key in seen:
                raise yaml.constructor.ConstructorError(None, None, f"key {key!r} is given twice",
                                                        key_node.start_mark)
            seen.add(key)
        return super().construct_mapping(node, deep=deep)

    depth = 0

    def compose_node(self, parent: yaml.Node | None, index: Any) -> yaml.Node:
        self.depth += 1
        try:
            if self.depth > MAX_DEPTH:
                raise yaml.composer.ComposerError(None, None, f"it nests deeper than {MAX_DEPTH} levels",
                                                  self.peek_event().start_mark)
            return super().compose_node(parent, index)
        finally:
            self.depth -= 1

    def compose_document(self) -> yaml.Node:
        node = super().compose_document()
        expanded_size(node, {})
        return node


def expanded_size(node: yaml.Node, sizes: dict[int, int]) -> int:
    """Nodes under `node` with every alias expanded, memoised per node (so counting costs what the file
    holds, not what it expands to); a yaml.YAMLError past MAX_NODES."""
    if id(node) not in sizes:
        children = node.value if isinstance(node, yaml.SequenceNode) else \
            [n for pair in node.value for n in pair] if isinstance(node, yaml.MappingNode) else []
        sizes[id(node)] = 1 + sum(expanded_size(child, sizes) for child in children)
        if sizes[id(node)] > MAX_NODES:
            raise yaml.composer.ComposerError(None, None, f"its aliases expand it past {MAX_NODES} nodes",
                                              node.start_mark)
    return sizes[id(node)]


# YAML 1.2's core schema for the scalars a config holds (PyYAML resolves YAML 1.1's, where `yes`, `on` and `n`
# are booleans, `1:30` is 90, `017` is 15, `1_000` is 1000 and `2026-01-01` a date: a typo that trains)
BOOL = re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$")
INT = re.compile(r"^[-+]?\d+$|^0o[0-7]+$|^0x[0-9a-fA-F]+$")
FLOAT = re.compile(r"^[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?$|^[-+]?\.(?:inf|Inf|INF)$|^\.(?:nan|NaN|NAN)$")
CORE = {"tag:yaml.org,2002:bool": BOOL, "tag:yaml.org,2002:int": INT, "tag:yaml.org,2002:float": FLOAT}
Loader.yaml_implicit_resolvers = {
    first: [(tag, rx) for tag, rx in resolvers if tag not in CORE and tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()}
for tag, firsts in (("tag:yaml.org,2002:bool", "tTfF"), ("tag:yaml.org,2002:int", "-+0123456789"),
                    ("tag:yaml.org,2002:float", "-+0123456789.")):
    for first in firsts:  # int before float, so "3" stays an int and only what int rejects can become a float
        Loader.yaml_implicit_resolvers.setdefault(first, []).append((tag, CORE[tag]))


def construct_int(loader: Loader, node: yaml.ScalarNode) -> int:
    """A core-schema int: decimal (a leading zero too: `017` is 17), `0o` octal or `0x` hex."""
    text = loader.construct_scalar(node)
    base = {"0o": 8, "0x": 16}.get(text[:2], 10)
    if len(text) > MAX_DIGITS:  # Python's int() refuses 4,300 digits; every field's bound is far below 100
        raise yaml.constructor.ConstructorError(None, None, f"an integer of {len(text)} characters (at most "
                                                f"{MAX_DIGITS})", node.start_mark)
    return int(text[2:] if base != 10 else text, base)


Loader.add_constructor("tag:yaml.org,2002:int", construct_int)


def reason(err: yaml.YAMLError) -> str:
    """What is wrong with a document and where, in one line, without quoting it: PyYAML's own message shows the
    offending line, and a file read by mistake (a key file, a password list) must not reach the screen."""
    if isinstance(err, yaml.MarkedYAMLError) and err.problem_mark is not None:
        mark = err.problem_mark
        context = f"{err.context}: " if err.context else ""
        return f"{context}{err.problem} at line {mark.line + 1}, column {mark.column + 1}"
    return " ".join(str(err).split())


def load(text: str | bytes) -> Any:
    """The document in `text`; bytes are decoded by the YAML reader, so bytes that are not text (UTF-8 or
    UTF-16) are a yaml.YAMLError like any other bad YAML."""
    if len(text) > MAX_BYTES:
        raise yaml.YAMLError(f"{len(text)} bytes, over the {MAX_BYTES} a spec or config may have")
    return yaml.load(text, Loader=Loader)


def read_file(path: Path) -> bytes:
    """The bytes of a YAML file, which must be a regular file of at most MAX_BYTES: a FIFO or `/dev/zero`
    is refused before it is opened (reading it would block or never end). FileNotFoundError when missing,
    yaml.YAMLError when not a regular file or too big."""
    try:
        info = os.stat(path)
    except FileNotFoundError:
        raise
    except OSError as err:  # a symlink loop (ELOOP), a path through a file (ENOTDIR), no permission
        raise yaml.YAMLError(f"cannot be read ({err.strerror})") from None
    if not stat.S_ISREG(info.st_mode):
        raise yaml.YAMLError("not a regular file (a folder, FIFO or device)")
    if info.st_size > MAX_BYTES:
        raise yaml.YAMLError(f"{info.st_size} bytes, over the {MAX_BYTES} a spec or config may have")
    with open(path, "rb") as file:
        return file.read(MAX_BYTES + 1)
