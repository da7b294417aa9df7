"""The ``vectors`` table: float32 blobs per (model_id, passage_pk), never mixed across models.

Writes are short: one ``BEGIN IMMEDIATE`` per batch, after the batch was embedded outside
any transaction.  ``INSERT OR IGNORE`` makes two concurrent backfills harmless: the second
writer of a (model, passage) pair is a no-op instead of a UNIQUE failure (tobi/qmd #825).
A passage deleted while its vector was being computed is skipped (the ``WHERE EXISTS``),
because OR IGNORE does not cover foreign-key failures.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence

import numpy as np

from memo.store.connect import write_tx
from memo.store.derived import bump_vectors_epoch
from memo.store.dialect import is_postgres
from memo.store.postgres.vectors import literal as pg_literal


def encode(vec: np.ndarray) -> bytes:
    return np.asarray(vec, dtype="<f4").tobytes()


def decode(blob: bytes, dim: int | None = None) -> np.ndarray:
    vec = np.frombuffer(blob, dtype="<f4")
    if dim is not None and vec.shape[0] != dim:
        raise ValueError(f"vector has {vec.shape[0]} dimensions, expected {dim}")
    return vec


# (vector table, its key column, the canonical table the key points at): constants, never input.
VECTOR_TABLES = {"passage": ("vectors", "passage_pk", "passages"),
                 "fact": ("fact_vectors", "fact_pk", "facts")}


def write_vectors(conn: sqlite3.Connection, model_id: str, pks: Sequence[int], vecs: np.ndarray,
                  *, of: str = "passage", keys: Sequence[tuple[str, str, int]] = ()) -> int:
    """Store one batch in its own short IMMEDIATE transaction; returns rows actually added.
    A row whose passage (or fact, ``of="fact"``) was deleted meanwhile is skipped.
    ``keys``: the batch's ``vector_keys`` rows (``memo.embed.reuse.key_rows``), written in
    the same transaction, so a later passage with the same model input copies the vector."""
    table, key, parent = VECTOR_TABLES[of]
    pg = is_postgres(conn)   # pgvector's vector type takes its text form
    rows = [(int(pk), model_id, pg_literal(v) if pg else encode(v), int(pk)) for pk, v in zip(pks, vecs, strict=True)]
    with write_tx(conn):
        # the statement's own rows (total_changes would count the rows vector_counts'
        # triggers write too: schema v7)
        cur = conn.executemany(
            f"INSERT OR IGNORE INTO {table}({key}, model_id, vec) "
            f"SELECT ?, ?, ?{'::vector' if pg else ''} WHERE EXISTS (SELECT 1 FROM {parent} WHERE pk = ?)", rows)
        added = max(int(cur.rowcount), 0) if rows else 0
        if keys:
            conn.executemany("INSERT OR IGNORE INTO vector_keys(model_id, input_key, passage_pk) VALUES (?, ?, ?)",
                             list(keys))
        return added


def pending_count(conn: sqlite3.Connection, model_id: str) -> int:
    """Passages that have no vector for ``model_id`` yet (the embedding queue)."""
    return int(conn.execute(
        "SELECT COUNT(*) FROM passages p WHERE NOT EXISTS "
        "(SELECT 1 FROM vectors v WHERE v.model_id = ? AND v.passage_pk = p.pk)", (model_id,)).fetchone()[0])


def pending_in_scope(conn: sqlite3.Connection, model_id: str, where: str, params: tuple[object, ...]) -> int:
    """Passages matching a scope filter (``memo.retrieve.scope.build_scope_sql``: a WHERE
    over ``passages p JOIN records r``) that have no vector for ``model_id``: the semantic
    arm cannot see them, the keyword arms can."""
    return int(conn.execute(
        "SELECT count(*) FROM passages p JOIN records r ON r.id = p.record_id WHERE " + (where or "1")
        + " AND NOT EXISTS (SELECT 1 FROM vectors v WHERE v.model_id = ? AND v.passage_pk = p.pk)",
        (*params, model_id)).fetchone()[0])


def pending_batch(conn: sqlite3.Connection, model_id: str, after_pk: int, limit: int) -> list[tuple[int, str, str]]:
    """The next ``limit`` pending passages with pk > ``after_pk``: (pk, section, text).
    A plain autocommit read: no transaction stays open while the caller embeds them."""
    rows = conn.execute(
        "SELECT p.pk, p.section, p.text FROM passages p WHERE p.pk > ? AND NOT EXISTS "
        "(SELECT 1 FROM vectors v WHERE v.model_id = ? AND v.passage_pk = p.pk) "
        "ORDER BY p.pk LIMIT ?", (after_pk, model_id, limit)).fetchall()
    return [(int(r[0]), r[1], r[2]) for r in rows]


def vector_count(conn: sqlite3.Connection, model_id: str) -> int:
    return int(conn.execute("SELECT COUNT(*) FROM vectors WHERE model_id = ?", (model_id,)).fetchone()[0])


def model_ids_in_db(conn: sqlite3.Connection) -> dict[str, int]:
    return {r[0]: int(r[1]) for r in conn.execute(
        "SELECT model_id, COUNT(*) FROM vectors GROUP BY model_id ORDER BY model_id")}


def drop_model_vectors(conn: sqlite3.Connection, model_id: str) -> int:
    """Delete every vector of one model (re-embed from scratch); in-memory indexes reload."""
    with write_tx(conn):
        n = conn.execute("DELETE FROM vectors WHERE model_id = ?", (model_id,)).rowcount
        bump_vectors_epoch(conn)
    return int(n)
