import hashlib
import os
from pathlib import Path

import pytest

from memo.embed import integrity
from memo.errors import ModelUnavailable


def test_verify_hashes_once_per_file_state(tmp_path: Path, monkeypatch):
    f = tmp_path / "m.bin"
    f.write_bytes(b"model bytes")
    sha = hashlib.sha256(b"model bytes").hexdigest()
    calls = []
    real = integrity.sha256_file
    monkeypatch.setattr(integrity, "sha256_file", lambda p: calls.append(p) or real(p))
    integrity.verify(f, sha)
    integrity.verify(f, sha)
    assert len(calls) == 1                      # cached per (path, size, mtime)
    f.write_bytes(b"other bytes")               # replaced on disk -> rehashed, and rejected
    os.utime(f, ns=(1, 1))
    with pytest.raises(ModelUnavailable, match="sha256"):
        integrity.verify(f, sha)
    assert len(calls) == 2


def test_missing_file(tmp_path: Path):
    with pytest.raises(ModelUnavailable, match="missing"):
        integrity.verify(tmp_path / "nope.onnx", "0" * 64)
