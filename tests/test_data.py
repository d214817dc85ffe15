"""Tests for proxies.data: splits, batch order, the stdlib corpus, token files, bad input, synthetic data."""

import json
import re
import socket

import numpy as np
import pytest
import torch

from proxies.data import DataError, SyntheticImages, SyntheticVectors, open_data
from proxies.data.text import stdlib_files


def batches(data, split, seed, n=3, batch_size=4):
    g = torch.Generator().manual_seed(seed)
    return [data.batch(split, batch_size, g) for _ in range(n)]


def same_batches(a, b):
    return all(torch.equal(xa, xb) and torch.equal(ya, yb) for (xa, ya), (xb, yb) in zip(a, b, strict=True))


def test_split_is_deterministic_and_val_is_the_tail(tmp_path):
    stream = bytes(np.random.default_rng(0).integers(0, 256, 5000, dtype=np.uint8))
    (tmp_path / "a.txt").write_bytes(stream)
    a = open_data("text", path=str(tmp_path / "a.txt"), seq_len=16, val_fraction=0.2)
    b = open_data("text", path=str(tmp_path / "a.txt"), seq_len=16, val_fraction=0.2, seed=7)
    for split in ("train", "val"):
        assert np.array_equal(a.splits[split], b.splits[split])
    train, val = a.splits["train"], a.splits["val"]
    assert len(train) + len(val) == len(stream) and len(val) == 1000
    assert train.tobytes() + val.tobytes() == stream
    assert a.provenance["n_train"] == 4000 and a.provenance["n_val"] == 1000


def test_batch_order_is_a_function_of_the_generator_and_y_is_x_shifted(tmp_path):
    ids = np.arange(5000, dtype=np.uint32)  # every id unique, so a window's first id is its start
    ids.tofile(tmp_path / "ids.bin")
    data = open_data("tokens", path=str(tmp_path / "ids.bin"), dtype="uint32", vocab_size=5000, seq_len=8)
    for split in ("train", "val"):
        assert same_batches(batches(data, split, 1), batches(data, split, 1))
        assert not same_batches(batches(data, split, 1), batches(data, split, 2))
    for split, offset in (("train", 0), ("val", 4500)):
        for x, y in batches(data, split, 3):
            assert x.dtype == y.dtype == torch.int64 and x.shape == y.shape == (4, 8)
            for row_x, row_y in zip(x.numpy(), y.numpy(), strict=True):
                s = row_x[0] - offset
                assert 0 <= s <= data.provenance[f"n_{split}"] - 9
                assert np.array_equal(row_x, ids[offset + s : offset + s + 8])
                assert np.array_equal(row_y, ids[offset + s + 1 : offset + s + 9])


def test_stdlib_corpus_loads_offline_and_is_reproducible(monkeypatch):
    monkeypatch.setattr(socket, "socket", None)  # any network use would fail
    a = open_data("stdlib", seq_len=64)
    b = open_data("stdlib", seq_len=64)
    p = a.provenance
    assert p["n_train"] > 1_000_000 and a.model_options() == {"vocab_size": 256, "block_size": 64}
    assert re.fullmatch(r"[0-9a-f]{64}", p["sha256"]) and p["sha256"] == b.provenance["sha256"]
    assert p["n_files"] > 100 and p["python"]


def test_stdlib_corpus_skips_tests_and_site_packages():
    root, files = stdlib_files()
    skipped = {"test", "tests", "idle_test", "site-packages", "dist-packages"}
    assert files and all(f.suffix == ".py" for f in files)
    for f in files:
        assert not skipped & set(f.relative_to(root).parts[:-1]), f


def test_text_folder_is_its_files_concatenated_in_sorted_order(tmp_path):
    files = {"b.txt": b"bravo " * 20, "a/z.txt": b"zulu " * 20, "a/c.txt": b"charlie " * 20, "c": b"delta " * 20}
    for name, content in files.items():
        (tmp_path / name).parent.mkdir(exist_ok=True)
        (tmp_path / name).write_bytes(content)
    (tmp_path / ".hidden").write_bytes(b"never")
    data = open_data("text", path=str(tmp_path), seq_len=4)
    stream = data.splits["train"].tobytes() + data.splits["val"].tobytes()
    assert stream == b"".join(files[name] for name in sorted(files))
    assert data.provenance["n_files"] == 4 and data.provenance["path"] == str(tmp_path.resolve())


@pytest.mark.parametrize("dtype", ["uint16", "uint32"])
def test_tokens_bin_round_trips(tmp_path, dtype):
    ids = np.random.default_rng(0).integers(0, 70_000 if dtype == "uint32" else 60_000, 3000).astype(dtype)
    ids.tofile(tmp_path / "data.bin")
    data = open_data("tokens", path=str(tmp_path / "data.bin"), dtype=dtype, vocab_size=70_000, seq_len=8)
    assert np.array_equal(np.concatenate([data.splits["train"], data.splits["val"]]), ids)
    x, _ = data.batch("train", 2, torch.Generator().manual_seed(0))
    assert x.dtype == torch.int64 and int(x.max()) < 70_000


def test_tokens_folder_layout_and_meta_json(tmp_path):
    train, val = np.arange(500, dtype=np.uint16) % 100, np.arange(200, dtype=np.uint16) % 100
    train.tofile(tmp_path / "train.bin")
    val.tofile(tmp_path / "val.bin")
    (tmp_path / "meta.json").write_text(json.dumps({"vocab_size": 100}))
    data = open_data("tokens", path=str(tmp_path), seq_len=8)
    assert np.array_equal(data.splits["train"], train) and np.array_equal(data.splits["val"], val)
    assert data.model_options() == {"vocab_size": 100, "block_size": 8}
    assert data.provenance["dtype"] == "uint16" and data.provenance["n_val"] == 200


def test_tokens_dtype_from_meta_json(tmp_path):
    np.arange(1000, dtype=np.uint32).tofile(tmp_path / "d.bin")
    (tmp_path / "meta.json").write_text(json.dumps({"vocab_size": 1000, "dtype": "uint32"}))
    data = open_data("tokens", path=str(tmp_path / "d.bin"), seq_len=8)
    assert data.splits["train"][-1] == 899
    with pytest.raises(DataError, match="data.dtype"):
        open_data("tokens", path=str(tmp_path / "d.bin"), dtype="uint16", seq_len=8)


def bad_inputs(tmp_path):
    """(field named in the message, open_data kwargs) for each kind of bad input."""
    (tmp_path / "empty.txt").write_bytes(b"")
    (tmp_path / "odd.bin").write_bytes(bytes(1001))
    np.zeros(1000, dtype=np.uint16).tofile(tmp_path / "ok.bin")
    np.full(1000, 500, dtype=np.uint16).tofile(tmp_path / "big_ids.bin")
    (tmp_path / "empty_dir").mkdir()
    return [
        ("data.path", dict(kind="text", path=str(tmp_path / "missing.txt"))),
        ("data.path", dict(kind="text", path=str(tmp_path / "empty.txt"))),
        ("data.path", dict(kind="text", path=str(tmp_path / "empty_dir"))),
        ("data.path", dict(kind="tokens", path=str(tmp_path / "odd.bin"), dtype="uint16", vocab_size=10)),
        ("data.vocab_size", dict(kind="tokens", path=str(tmp_path / "ok.bin"), seq_len=8)),
        ("data.vocab_size", dict(kind="tokens", path=str(tmp_path / "big_ids.bin"), vocab_size=100, seq_len=8)),
        ("data.kind", dict(kind="parquet")),
        ("data.dtype", dict(kind="tokens", path=str(tmp_path / "ok.bin"), dtype="int16", vocab_size=10)),
        ("data.seq_len", dict(kind="synthetic-tokens", seq_len=0)),
        ("data.seq_len", dict(kind="synthetic-tokens", seq_len=500, n_tokens=1000)),
        ("data.val_fraction", dict(kind="stdlib", val_fraction=1.0)),
        ("data.n_tokens", dict(kind="synthetic-vectors", n_tokens=10)),
    ]


def test_bad_input_raises_one_line_data_error_naming_the_field(tmp_path):
    for field, kwargs in bad_inputs(tmp_path):
        with pytest.raises(DataError) as info:
            open_data(**kwargs)
        message = str(info.value)
        assert message.startswith(field + ":") and "\n" not in message, (kwargs, message)
    with pytest.raises(DataError, match="has 1001 bytes, not a multiple of 2"):
        open_data("tokens", path=str(tmp_path / "odd.bin"), vocab_size=10)


@pytest.mark.parametrize("cls, x_shape", [(SyntheticVectors, (5, 32)), (SyntheticImages, (5, 3, 16, 16))])
def test_synthetic_classification(cls, x_shape):
    data = cls(seed=3)
    for split in ("train", "val"):
        x, y = data.batch(split, 5, torch.Generator().manual_seed(0))
        assert x.shape == x_shape and x.dtype == torch.float32 and y.shape == (5,) and y.dtype == torch.int64
    again, other = cls(seed=3), cls(seed=4)
    assert torch.equal(data.val_x, again.val_x) and torch.equal(data.val_y, again.val_y)
    assert not torch.equal(data.val_x, other.val_x)
    assert len(data.val_y.unique()) > 5 and data.tokens_per_example == 1
    assert same_batches(batches(data, "val", 1), batches(again, "val", 1))
    assert same_batches(batches(data, "train", 1), batches(again, "train", 1))


def test_open_data_builds_synthetic_classification_with_options():
    vectors = open_data("synthetic-vectors", in_features=8, classes=3)
    images = open_data("synthetic-images", channels=1, size=8, classes=4)
    assert vectors.model_options() == {"in_features": 8, "classes": 3}
    assert images.model_options() == {"in_channels": 1, "classes": 4}
    assert images.batch("train", 2, torch.Generator())[0].shape == (2, 1, 8, 8)
    json.dumps(vectors.provenance)
    json.dumps(images.provenance)
