"""The model's session built on a helper thread (memo.embed.model.SessionBuild,
``start_loading``) with the real MiniLM model: an embedder takes the build started ahead
for its model and gives the vectors of one loaded the plain way; a damaged file started
ahead still fails as ``ModelUnavailable`` when the model is asked for; and ``memo search``
starts the build before it imports the pipeline (issue 31.2: a cold hybrid search waits
for the longer of the two, not their sum)."""

from __future__ import annotations

import dataclasses
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from memo.embed import integrity, model
from memo.embed.model import OnnxEmbedder, start_loading
from memo.embed.registry import load_registry
from memo.errors import ModelUnavailable

REPO = Path(__file__).resolve().parents[2]
REAL = load_registry().get()
TEXTS = ["Insulin resistance in skeletal muscle", "python check if file exists", "x"]


def _vectors(emb: OnnxEmbedder) -> np.ndarray:
    return np.vstack([emb.embed_passages(TEXTS), emb.embed_query("what causes insulin resistance")[None]])


def test_an_embedder_takes_the_build_started_ahead() -> None:
    plain = _vectors(OnnxEmbedder(REAL))
    start_loading(REAL)
    build = model._builds[REAL.id]
    start_loading(REAL)                                  # a second start reuses the first
    assert model._builds[REAL.id] is build
    emb = OnnxEmbedder(REAL)
    assert REAL.id not in model._builds                  # taken, not left for another
    assert emb.session is build.result()
    assert np.array_equal(_vectors(emb), plain)


def test_a_build_for_another_file_is_not_taken(tmp_path: Path) -> None:
    copy = tmp_path / "model.onnx"
    shutil.copyfile(REAL.onnx, copy)
    other = dataclasses.replace(REAL, onnx=copy)         # same id, another file
    start_loading(other)
    build = model._builds[REAL.id]
    emb = OnnxEmbedder(REAL)
    assert emb.session is not build.result()
    assert REAL.id not in model._builds


def test_an_embedder_takes_the_tokenizer_parsed_ahead(tmp_path: Path) -> None:
    """The semantic arm's prepare parses the tokenizer while the session builds; the next
    embedder of the same spec takes it (same vectors), another spec's is not taken, and a
    missing tokenizer parsed ahead is still reported when the model is asked for."""
    plain = _vectors(OnnxEmbedder(REAL))
    model.preload_tokenizer(REAL)
    tok = model._tokenizers[REAL.id][1]
    model.preload_tokenizer(REAL)                        # a second call keeps the first
    assert model._tokenizers[REAL.id][1] is tok
    emb = OnnxEmbedder(REAL)
    assert emb.tokenizer is tok and REAL.id not in model._tokenizers
    assert np.array_equal(_vectors(emb), plain)
    copy = tmp_path / "tokenizer.json"
    shutil.copyfile(REAL.tokenizer, copy)
    model.preload_tokenizer(dataclasses.replace(REAL, tokenizer=copy))
    other = model._tokenizers[REAL.id][1]
    assert OnnxEmbedder(REAL).tokenizer is not other and REAL.id not in model._tokenizers
    gone = dataclasses.replace(REAL, tokenizer=tmp_path / "missing.json", tokenizer_sha256=None)
    model.preload_tokenizer(gone)                        # nothing parsed, nothing raised
    assert REAL.id not in model._tokenizers
    with pytest.raises(ModelUnavailable, match="tokenizer"):
        OnnxEmbedder(gone)


def test_a_damaged_file_started_ahead_fails_when_asked_for(tmp_path: Path) -> None:
    bad = tmp_path / "model.onnx"
    bad.write_bytes(REAL.onnx.read_bytes()[:4096])
    spec = dataclasses.replace(REAL, onnx=bad)
    integrity.forget()
    start_loading(spec)                                  # raises nothing: the build fails on its thread
    with pytest.raises(ModelUnavailable, match="sha256"):
        OnnxEmbedder(spec)
    # the hash matches but onnxruntime refuses the graph: the same error type, onnxruntime's reason
    start_loading(dataclasses.replace(spec, sha256=integrity.sha256_file(bad)))
    with pytest.raises(ModelUnavailable, match="failed to load"):
        OnnxEmbedder(dataclasses.replace(spec, sha256=integrity.sha256_file(bad)))


def _import_order(stderr: str) -> list[str]:
    return [m.group(1) for m in re.finditer(r"^import time:\s+\d+ \|\s+\d+ \|\s*(\S+)$", stderr, re.M)]


def test_memo_search_starts_the_model_before_the_pipeline(tmp_path: Path) -> None:
    """``-X importtime`` lists modules as their import ends: onnxruntime (imported by
    ``start_loading`` in the main thread, just before the build's thread starts) must end
    before the pipeline's package does.  Without the early start the pipeline comes first
    (the semantic service is made after the database opens)."""
    db = tmp_path / "memo.db"
    env = dict(os.environ, MEMO_DB=str(db))
    notes = REPO / "datasets" / "sample" / "notes"
    subprocess.run([sys.executable, "-m", "memo", "import", str(notes), "--json"], env=env, cwd=tmp_path,
                   check=True, capture_output=True, timeout=300)
    res = subprocess.run([sys.executable, "-X", "importtime", "-m", "memo", "search", "database is locked",
                          "--json"], env=env, cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr[-3000:]
    doc = json.loads(res.stdout)
    assert doc["results"] and not doc["trace"]["degraded"]["flag"], doc["trace"]["degraded"]
    order = _import_order(res.stderr)
    assert "onnxruntime" in order and "memo.retrieve" in order
    assert order.index("onnxruntime") < order.index("memo.retrieve"), "the pipeline was imported first"
    assert "model_load" in doc["trace"]["stage_ms"]        # this process loaded the model, and says so
