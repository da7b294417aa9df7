"""The semantic arm on pgvector.

``vec`` holds unit-length vectors (the model normalises), so the inner product is the
cosine the SQLite index reports as ``raw``: ``-(vec <#> q)`` (pgvector's ``<#>`` is the
negative inner product).  The scope filter sits in the statement, before ``LIMIT``.

Two plans (profile ``[index]``):

* **exact** (a scope with fewer than ``ann_min`` vectors of the model, or no HNSW index):
  every in-scope vector is scored; the answer is exact.
* **HNSW** (``ann_min`` or more, and ``ann_index`` built): pgvector's HNSW index, one
  partial expression index per model (``vec::vector(dims)`` where ``model_id`` is the
  model), returns ``ann_overfetch x fetch_depth`` nearest vectors (``hnsw.ef_search``
  raised to match), then the scope filter keeps the in-scope ones.  On pgvector 0.8+ the
  scan is iterative (``hnsw.iterative_scan = strict_order``: it goes on until the filter is
  met); the server the tests run bundles 0.6, which cannot, so there a filter that leaves
  fewer than ``fetch_depth`` candidates falls back to the exact plan.  Either way a filter
  never starves the top-k; it only costs time.  Recall against the
  exact plan is measured in ``bench/pg_ann_recall.py`` (docs/postgres.md).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from memo.store.postgres.fts import native

if TYPE_CHECKING:
    import numpy as np

EF_SEARCH_MAX = 1000      # pgvector's bound on hnsw.ef_search


def literal(vec: np.ndarray) -> str:
    """pgvector's text form of a vector."""
    import numpy as np  # the semantic arm's module is imported by keyword-only searches too

    return "[" + ",".join(repr(float(x)) for x in np.asarray(vec, dtype=np.float32).tolist()) + "]"


def ann_index_name(model_id: str) -> str:
    import hashlib  # OpenSSL's, ~2.5 ms to import: not for every SQLite search that imports this module

    return "vectors_hnsw_" + hashlib.sha256(model_id.encode()).hexdigest()[:12]


def _quoted(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def iterative_scans(conn: Any, cache: dict[str, Any] | None = None) -> bool:
    """Does the server's pgvector have iterative index scans (0.8.0 and later)?  The
    ``pgserver`` wheel the tests run bundles 0.6.2, so this path is not exercised here."""
    if cache is not None and "pg_iterative" in cache:
        return cache["pg_iterative"]
    row = conn.execute_native("SELECT extversion FROM pg_extension WHERE extname = 'vector'").fetchone()
    parts = tuple(int(x) for x in str(row[0]).split(".")[:2] if x.isdigit()) if row else ()
    found = parts >= (0, 8)
    if cache is not None:
        cache["pg_iterative"] = found
    return found


def ann_index_exists(conn: Any, model_id: str, cache: dict[str, Any] | None = None) -> bool:
    key = f"pg_ann:{model_id}"
    if cache is not None and key in cache:
        return cache[key]
    found = conn.execute_native("SELECT 1 FROM pg_indexes WHERE indexname = %s",
                                (ann_index_name(model_id),)).fetchone() is not None
    if cache is not None:
        cache[key] = found
    return found


def build_ann_index(conn: Any, model_id: str, dimensions: int) -> bool:
    """Build the model's HNSW index (inner product, pgvector defaults m=16,
    ef_construction=64) unless it exists; True when built now.  Outside any transaction:
    ``CREATE INDEX CONCURRENTLY`` lets searches and writes go on meanwhile."""
    if ann_index_exists(conn, model_id):
        return False
    conn.execute_native(
        f"CREATE INDEX CONCURRENTLY IF NOT EXISTS {ann_index_name(model_id)} ON vectors USING hnsw "
        f"((vec::vector({int(dimensions)})) vector_ip_ops) WHERE model_id = {_quoted(model_id)}", None)
    return True


def passage_cosines(conn: Any, model_id: str, qvec: np.ndarray, pks: Sequence[int]) -> list[tuple[int, float]]:
    """[(passage pk, cosine)] for those of ``pks`` with a vector of ``model_id`` (unit
    vectors: the cosine is minus pgvector's negative inner product)."""
    return [(int(r[0]), float(r[1])) for r in conn.execute_native(
        "SELECT passage_pk, -(vec <#> %s::vector) FROM vectors WHERE model_id = %s AND passage_pk = ANY(%s)",
        (literal(qvec), model_id, list(pks))).fetchall()]


def vector_topk(conn: Any, model_id: str, qvec: np.ndarray, where: str, params: Sequence[Any], k: int,
                *, in_scope: int = 0, cfg: Any = None, cache: dict[str, Any] | None = None,
                plan_out: list[str] | None = None) -> list[tuple[int, float]]:
    """[(passage pk, cosine)] best first, ties by pk, under the scope ``where`` (a fragment
    over ``passages p JOIN records r`` with ``?`` placeholders).  ``in_scope``: passages
    the scope allows (the plan choice); ``plan_out`` receives the plan used."""
    scope = (" AND " + native(where)) if where else ""
    q = literal(qvec)
    use_ann = (cfg is not None and in_scope >= cfg.ann_min and ann_index_exists(conn, model_id, cache))
    if use_ann:
        dims = len(qvec)
        fetch = int(min(EF_SEARCH_MAX, max(k, round(cfg.ann_overfetch * k))))
        # SET LOCAL lasts until the search's read transaction ends.
        conn.execute_native(f"SET LOCAL hnsw.ef_search = {max(40, fetch)}", None)
        if iterative_scans(conn, cache):
            # pgvector 0.8+: the scope filter sits in the index scan's own statement and the
            # scan goes on past ef_search until k rows pass it (strict order: exact ranks).
            conn.execute_native("SET LOCAL hnsw.iterative_scan = strict_order", None)
            rows = _ann_filtered(conn, model_id, q, dims, scope, params, k)
        else:
            rows = _ann_overfetch(conn, model_id, q, dims, scope, params, fetch, k)
        if len(rows) >= k:
            if plan_out is not None:
                plan_out.append("hnsw")
            return [(int(r[0]), float(r[1])) for r in rows]
        if plan_out is not None:
            plan_out.append("hnsw_starved_exact")
    elif plan_out is not None:
        plan_out.append("exact")
    # Every vector of the model scored and ordered, then each scope-checked by primary key,
    # best first, until k pass (a join of every vector to its record cost several times the
    # scan: docs/results-log.md "Word counts for routing and keyword evidence"); the outer
    # ORDER BY repeats the inner one so no second sort is planned.
    rows = conn.execute_native(
        "SELECT s.pk, -s.d FROM (SELECT v.passage_pk AS pk, v.vec <#> %s::vector AS d FROM vectors v"
        "   WHERE v.model_id = %s ORDER BY d, pk) s"
        " WHERE EXISTS (SELECT 1 FROM passages p JOIN records r ON r.id = p.record_id"
        f"   WHERE p.pk = s.pk{scope}) ORDER BY s.d, s.pk LIMIT %s",
        (q, model_id, *params, int(k))).fetchall()
    return [(int(r[0]), float(r[1])) for r in rows]


def _ann_overfetch(conn: Any, model_id: str, q: str, dims: int, scope: str, params: Sequence[Any],
                   fetch: int, k: int) -> list[Any]:
    """pgvector < 0.8: the index's ``fetch`` nearest, then the scope filter."""
    return conn.execute_native(
        f"WITH ann AS (SELECT v.passage_pk, v.vec FROM vectors v WHERE v.model_id = {_quoted(model_id)}"
        f"   ORDER BY v.vec::vector({dims}) <#> %s::vector({dims}) LIMIT %s)"
        " SELECT ann.passage_pk, -(ann.vec <#> %s::vector) AS cos FROM ann"
        f" JOIN passages p ON p.pk = ann.passage_pk JOIN records r ON r.id = p.record_id WHERE TRUE{scope}"
        " ORDER BY cos DESC, ann.passage_pk LIMIT %s",
        (q, fetch, q, *params, int(k))).fetchall()


def _ann_filtered(conn: Any, model_id: str, q: str, dims: int, scope: str, params: Sequence[Any],
                  k: int) -> list[Any]:
    """pgvector 0.8+ (iterative scans): one statement, the filter beside the index scan."""
    return conn.execute_native(
        "SELECT v.passage_pk, -(v.vec <#> %s::vector) AS cos FROM vectors v"
        " JOIN passages p ON p.pk = v.passage_pk JOIN records r ON r.id = p.record_id"
        f" WHERE v.model_id = {_quoted(model_id)}{scope}"
        f" ORDER BY v.vec::vector({dims}) <#> %s::vector({dims}), v.passage_pk LIMIT %s",
        (q, *params, q, int(k))).fetchall()


def fact_vector_topk(conn: Any, model_id: str, qvec: np.ndarray, allowed: Sequence[int],
                     k: int) -> list[tuple[int, float]]:
    """[(fact pk, cosine)] best first among the ``allowed`` facts (the fact arm's filter)."""
    q = literal(qvec)
    rows = conn.execute_native(
        "SELECT fact_pk, -(vec <#> %s::vector) FROM fact_vectors WHERE model_id = %s AND fact_pk = ANY(%s)"
        " ORDER BY vec <#> %s::vector, fact_pk LIMIT %s",
        (q, model_id, [int(x) for x in allowed], q, int(k))).fetchall()
    return [(int(r[0]), float(r[1])) for r in rows]
