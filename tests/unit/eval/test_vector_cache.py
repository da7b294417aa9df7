"""Passage vectors are reused text by text across index builds (memo_eval.vector_cache): a
corpus with one changed passage embeds that passage only (the whole corpus was embedded
again: relnotes' 20,617 passages for one changed file), and every reused vector is the one
the model gave that text before."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from memo.store.db import open_db
from memo_eval.datasets import load_eval_set
from memo_eval.index import build_index, ensure_passage_vectors
from memo_eval.vector_cache import keys_path


def _vectors(db) -> dict[str, np.ndarray]:  # noqa: ANN001
    conn = open_db(db)
    try:
        return {r[0]: np.frombuffer(r[1], dtype="<f4") for r in conn.execute(
            "SELECT p.text, v.vec FROM vectors v JOIN passages p ON p.pk = v.passage_pk")}
    finally:
        conn.close()


def test_one_changed_text_embeds_one_passage(tiny):
    first = build_index(load_eval_set(str(tiny), "test")).path
    got = ensure_passage_vectors(first, "tiny", progress=False)
    assert got["source"] == "embedded" and got["reused"] == 0
    assert keys_path(Path(got["file"])).exists()
    before = _vectors(first)

    lines = (tiny / "corpus.jsonl").read_text().splitlines()
    doc = json.loads(lines[0])
    doc["text"] += " One more sentence."
    (tiny / "corpus.jsonl").write_text("\n".join([json.dumps(doc), *lines[1:]]) + "\n")
    second = build_index(load_eval_set(str(tiny), "test")).path
    assert second != first
    again = ensure_passage_vectors(second, "tiny", progress=False)
    assert again["source"] == "embedded" and again["reused"] == again["vectors"] - 1
    after = _vectors(second)
    shared = before.keys() & after.keys()
    assert len(shared) == again["vectors"] - 1
    assert all(np.array_equal(before[t], after[t]) for t in shared)
