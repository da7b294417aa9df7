"""Vectors a pending passage need not be embedded for: the same model input was embedded before.

A file edited on one line and imported again becomes a new version of its record whose
passages are, but for one, the previous version's passages word for word.  Each needs a
vector; embedding them all again made a one-line edit of a 400-passage document cost the
whole document's embedding (the model is what a user waits for: issue 31.4).  Two sources
of an identical input, both exact (the same model id and the same text the model reads,
``memo.embed.model.passage_text``, give the same vector):

* **the record's earlier version**: the records a pending passage's record superseded
  (``records.superseded_by``, indexed from schema v9 / PostgreSQL M006), whose passages
  already have a vector for the model.  The vector row is copied inside the database
  (``INSERT ... SELECT``), so neither backend decodes it;
* **the same input twice in one window** (a boilerplate section in many files, a repeated
  turn): embedded once, written to each passage.

Nothing else is searched for a donor: a passage's text has no index, and a scan of every
passage to find one would cost more than the embedding it saves.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from typing import Any

import numpy as np

from memo.embed.model import passage_text
from memo.store.connect import write_tx

CHUNK = 500     # ids per IN (...): under SQLite's host-parameter limit

Row = tuple[int, str, str]      # (passage pk, section, text): ``pending_batch``'s rows


def _chunks(items: Sequence[Any]) -> list[Sequence[Any]]:
    return [items[s:s + CHUNK] for s in range(0, len(items), CHUNK)]


def _donors(conn: sqlite3.Connection, model_id: str, pks: Sequence[int]) -> dict[str, int]:
    """Model input -> pk of a passage with a vector for ``model_id``, among the passages of
    the records that the records of ``pks`` superseded (one version back: that version got
    its vectors from the one before it the same way)."""
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
            found.setdefault(passage_text(section, text), int(pk))
    return found


def copy_vectors(conn: sqlite3.Connection, model_id: str, pairs: Sequence[tuple[int, int]]) -> int:
    """Write, for each (passage pk, donor pk), the donor's vector as the passage's, in one
    short transaction; returns the rows added (a passage deleted meanwhile, or given a
    vector by a concurrent backfill, adds none: as ``write_vectors``)."""
    if not pairs:
        return 0
    with write_tx(conn):
        cur = conn.executemany(
            "INSERT OR IGNORE INTO vectors(passage_pk, model_id, vec) SELECT ?, v.model_id, v.vec "
            "FROM vectors v WHERE v.model_id = ? AND v.passage_pk = ? "
            "AND EXISTS (SELECT 1 FROM passages WHERE pk = ?)",
            [(pk, model_id, donor, pk) for pk, donor in pairs])
        return max(int(cur.rowcount), 0)


def reuse_vectors(conn: sqlite3.Connection, model_id: str, rows: Sequence[Row]) -> tuple[list[Row], int]:
    """Give the pending ``rows`` whose model input an earlier version of their record holds
    that version's vector.  Returns the rows still to embed and the vectors written."""
    if not rows:
        return [], 0
    donors = _donors(conn, model_id, [r[0] for r in rows])
    if not donors:
        return list(rows), 0
    pairs, rest = [], []
    for row in rows:
        donor = donors.get(passage_text(row[1], row[2]))
        if donor is None:
            rest.append(row)
        else:
            pairs.append((row[0], donor))
    return rest, copy_vectors(conn, model_id, pairs)


def embed_unique(embedder: Any, texts: Sequence[str], batch_size: int) -> Any:
    """``embedder.embed_passages`` over each distinct text once; rows in ``texts``' order."""
    index: dict[str, int] = {}
    order = [index.setdefault(t, len(index)) for t in texts]
    if len(index) == len(texts):
        return embedder.embed_passages(list(texts), batch_size)
    vecs = embedder.embed_passages(list(index), batch_size)
    return np.asarray(vecs)[np.asarray(order, dtype=np.int64)]
