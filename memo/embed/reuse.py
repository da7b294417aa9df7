"""Vectors a pending passage need not be embedded for: the same model input was embedded before.

A file edited on one line and imported again becomes a new version of its record whose
passages are, but for one, the previous version's passages word for word; a page unchanged
between two versions of a library's docs is a record of each version with the same
passages.  Each needs a vector, and embedding them all again made a one-line edit of a
400-passage document cost the whole document's embedding (the model is what a user waits
for: issue 31.4).  The same model id and the same text the model reads
(``memo.embed.model.passage_text``) give the same vector, so a pending passage takes the
vector of a passage with its section and text, found two ways:

* **``vector_keys``** (schema v9 / PostgreSQL M006): every vector the embedding writes or
  copies records the hash of its model input (``input_key``) with its passage, one row per
  (model, input, passage), so purging one copy leaves the others as donors; a pending
  passage with the same key takes one of those passages' vector.  Only vectors written
  from v9 on have keys (older ones are found the next way);
* **the record's earlier version**: the records a pending passage's record superseded
  (``records.superseded_by``, indexed from v9), whose passages already have a vector.

Either way the vector row is copied inside the database (``INSERT ... SELECT``: neither
backend decodes it), and only from a donor whose section and text equal the passage's (the
copy's own condition: a hash never decides alone, and a key whose passage was purged copies
nothing).  A passage that got no copy is embedded, and **the same input twice in one
window** (a boilerplate section in many files, a repeated turn) is embedded once.
"""

from __future__ import annotations

import hashlib
import sqlite3
from collections.abc import Sequence
from typing import Any

import numpy as np

from memo.embed.model import passage_text
from memo.store.connect import write_tx

CHUNK = 500     # ids per IN (...): under SQLite's host-parameter limit

Row = tuple[int, str, str]      # (passage pk, section, text): ``pending_batch``'s rows


def input_key(section: str, text: str) -> str:
    """The key of a passage's model input in ``vector_keys``: sha256, 128 bits in hex."""
    return hashlib.sha256(passage_text(section, text).encode("utf-8", "surrogatepass")).hexdigest()[:32]


def _chunks(items: Sequence[Any]) -> list[Sequence[Any]]:
    return [items[s:s + CHUNK] for s in range(0, len(items), CHUNK)]


def _keyed(conn: sqlite3.Connection, model_id: str, keys: Sequence[str]) -> dict[str, int]:
    """input key -> a passage ``vector_keys`` names for it (the newest)."""
    found: dict[str, int] = {}
    for part in _chunks(sorted(set(keys))):
        for k, pk in conn.execute(
                f"SELECT input_key, max(passage_pk) FROM vector_keys WHERE model_id = ? "
                f"AND input_key IN ({','.join('?' * len(part))}) GROUP BY input_key", (model_id, *part)):
            found[k] = int(pk)
    return found


def _earlier(conn: sqlite3.Connection, model_id: str, pks: Sequence[int]) -> dict[str, int]:
    """input key -> a passage with a vector for ``model_id``, among the passages of the
    records that the records of ``pks`` superseded (one version back: that version got its
    vectors from the one before it the same way)."""
    records: set[str] = set()
    for part in _chunks(pks):
        records.update(r[0] for r in conn.execute(
            f"SELECT DISTINCT record_id FROM passages WHERE pk IN ({','.join('?' * len(part))})", tuple(part)))
    found: dict[str, int] = {}
    for part in _chunks(sorted(records)):
        rows = conn.execute(
            "SELECT p.pk, p.section, p.text FROM records o JOIN passages p ON p.record_id = o.id "
            f"WHERE o.superseded_by IN ({','.join('?' * len(part))}) "
            "AND EXISTS (SELECT 1 FROM vectors v WHERE v.model_id = ? AND v.passage_pk = p.pk)",
            (*part, model_id)).fetchall()
        for pk, section, text in rows:
            found.setdefault(input_key(section, text), int(pk))
    return found


def copy_vectors(conn: sqlite3.Connection, model_id: str, pairs: Sequence[tuple[int, int, str]]) -> set[int]:
    """For each (passage pk, donor pk, input key), the donor's vector becomes the passage's
    when the donor has one and the same section and text, and the passage's key is
    recorded; one short transaction.  Returns the passages that have a vector for
    ``model_id`` afterwards (a copy, or one a concurrent backfill wrote)."""
    if not pairs:
        return set()
    with write_tx(conn):
        conn.executemany(
            "INSERT OR IGNORE INTO vectors(passage_pk, model_id, vec) "
            "SELECT t.pk, v.model_id, v.vec FROM passages t JOIN passages d ON d.pk = ? "
            "JOIN vectors v ON v.model_id = ? AND v.passage_pk = d.pk "
            "WHERE t.pk = ? AND d.section = t.section AND d.text = t.text",
            [(donor, model_id, pk) for pk, donor, _ in pairs])
        conn.executemany(
            "INSERT OR IGNORE INTO vector_keys(model_id, input_key, passage_pk) SELECT ?, ?, ? "
            "WHERE EXISTS (SELECT 1 FROM vectors WHERE model_id = ? AND passage_pk = ?)",
            [(model_id, key, pk, model_id, pk) for pk, _, key in pairs])
    done: set[int] = set()
    for part in _chunks([pk for pk, _, _ in pairs]):
        done.update(int(r[0]) for r in conn.execute(
            f"SELECT passage_pk FROM vectors WHERE model_id = ? AND passage_pk IN ({','.join('?' * len(part))})",
            (model_id, *part)))
    return done


def reuse_vectors(conn: sqlite3.Connection, model_id: str, rows: Sequence[Row]) -> tuple[list[Row], int]:
    """Give the pending ``rows`` whose model input was embedded before that vector.
    Returns the rows still to embed and the number given a vector."""
    if not rows:
        return [], 0
    keys = [input_key(r[1], r[2]) for r in rows]
    donors = _keyed(conn, model_id, keys)
    if len(donors) < len(set(keys)):
        for key, pk in _earlier(conn, model_id, [r[0] for r in rows]).items():
            donors.setdefault(key, pk)
    pairs = [(r[0], donors[k], k) for r, k in zip(rows, keys, strict=True) if k in donors and donors[k] != r[0]]
    if not pairs:
        return list(rows), 0
    done = copy_vectors(conn, model_id, pairs)
    given = {pk for pk, _, _ in pairs} & done
    return [r for r in rows if r[0] not in given], len(given)


def key_rows(model_id: str, pks: Sequence[int], inputs: Sequence[tuple[str, str]]) -> list[tuple[str, str, int]]:
    """``vector_keys`` rows for passages just embedded from ``inputs`` ((section, text) each)."""
    return [(model_id, input_key(sec, txt), int(pk)) for pk, (sec, txt) in zip(pks, inputs, strict=True)]


def embed_unique(embedder: Any, texts: Sequence[str], batch_size: int) -> Any:
    """``embedder.embed_passages`` over each distinct text once; rows in ``texts``' order."""
    index: dict[str, int] = {}
    order = [index.setdefault(t, len(index)) for t in texts]
    if len(index) == len(texts):
        return embedder.embed_passages(list(texts), batch_size)
    vecs = embedder.embed_passages(list(index), batch_size)
    return np.asarray(vecs)[np.asarray(order, dtype=np.int64)]
