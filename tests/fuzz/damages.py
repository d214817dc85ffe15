"""Files the tool wrote, damaged before a command reads them (`damaged:`): the seed root's curve parts, results,
launch record, checkpoints and run config."""
from __future__ import annotations

import json
import shutil
from pathlib import Path


def first(results: Path, pattern: str) -> Path:
    return sorted(results.glob(pattern))[0]


def cut(path: Path) -> None:
    path.write_bytes(path.read_bytes()[: max(1, path.stat().st_size // 3)])


def edit_record(results: Path, **fields) -> None:
    path = first(results, "tiny/runs/fuzzrun/launch.json")
    record = json.loads(path.read_text())
    record.update(fields)
    path.write_text(json.dumps({k: v for k, v in record.items() if v is not None}))


def checkpoints_a_file(results: Path) -> None:
    folder = first(results, "tiny/runs/fuzzrun/checkpoints")
    shutil.rmtree(folder)
    folder.write_text("not a folder")


DAMAGES = {  # the seed root holds the finished tiny study and the launched run `fuzzrun`
    "curve-part-cut": lambda results: cut(first(results, "tiny/curves/study=*/kind=*/run=*/part-*.parquet")),
    "curve-part-empty": lambda results: first(results, "tiny/curves/study=*/kind=*/run=*/part-*.parquet")
    .write_bytes(b""),
    "result-json-cut": lambda results: cut(first(results, "tiny/runs/*/result.json")),
    "result-json-list": lambda results: first(results, "tiny/runs/*/result.json").write_text("[1, 2]"),
    "record-field-missing": lambda results: edit_record(results, curve=None),
    "record-field-mistyped": lambda results: edit_record(results, process="x", job=7),
    "checkpoints-a-file": checkpoints_a_file,
    "config-yaml-cut": lambda results: cut(first(results, "tiny/runs/*/config.yaml")),
}
READERS = {"results", "sql", "export", "compare", "status", "train", "launch", "report", "transfer", "verify"}
