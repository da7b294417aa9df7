"""The semantic arm on pgvector.

``vec`` holds unit-length vectors (the model normalises), so the inner product is the
cosine the SQLite index reports as ``raw``: ``-(vec <#> q)`` (pgvector's ``<#>`` is the
negative inner product).  The scope filter sits in the statement, before ``LIMIT``, so
a filter never starves the top-k.  This step scans exactly (every in-scope vector of the
model); an HNSW index for large scopes comes with its measured recall (issue 17.2).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np


def literal(vec: np.ndarray) -> str:
    """pgvector's text form of a vector."""
    import numpy as np  # the semantic arm's module is imported by keyword-only searches too

    return "[" + ",".join(repr(float(x)) for x in np.asarray(vec, dtype=np.float32).tolist()) + "]"


def vector_topk(conn: Any, model_id: str, qvec: np.ndarray, where: str, params: Sequence[Any],
                k: int) -> list[tuple[int, float]]:
    """[(passage pk, cosine)] best first, ties by pk, under the scope ``where`` (a fragment
    over ``passages p JOIN records r`` with ``?`` placeholders)."""
    scope = (" AND " + where.replace("?", "%s")) if where else ""
    q = literal(qvec)
    rows = conn.execute_native(
        "SELECT v.passage_pk, -(v.vec <#> %s::vector) AS cos FROM vectors v"
        " JOIN passages p ON p.pk = v.passage_pk JOIN records r ON r.id = p.record_id"
        f" WHERE v.model_id = %s{scope} ORDER BY v.vec <#> %s::vector, v.passage_pk LIMIT %s",
        (q, model_id, *params, q, int(k))).fetchall()
    return [(int(r[0]), float(r[1])) for r in rows]


def fact_vector_topk(conn: Any, model_id: str, qvec: np.ndarray, allowed: Sequence[int],
                     k: int) -> list[tuple[int, float]]:
    """[(fact pk, cosine)] best first among the ``allowed`` facts (the fact arm's filter)."""
    q = literal(qvec)
    rows = conn.execute_native(
        "SELECT fact_pk, -(vec <#> %s::vector) FROM fact_vectors WHERE model_id = %s AND fact_pk = ANY(%s)"
        " ORDER BY vec <#> %s::vector, fact_pk LIMIT %s",
        (q, model_id, [int(x) for x in allowed], q, int(k))).fetchall()
    return [(int(r[0]), float(r[1])) for r in rows]
