"""PostgreSQL's answers to the arms' questions (``memo.retrieve.backend.SearchBackend``):
bm25 over postings tables and pgvector, in the server, with the scope in each statement
(``memo.store.postgres.fts`` and ``.vectors`` hold the SQL and the ranking's definition)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from memo.retrieve.backend_sqlite import allowed_pks
from memo.retrieve.conn_cache import conn_cache
from memo.retrieve.scope import ScopeSQL, scope_stats
from memo.retrieve.types import ArmHit
from memo.store.postgres import fts as pg_fts
from memo.store.postgres import vectors as pg_vectors

if TYPE_CHECKING:
    import numpy as np


_QUOTED = re.compile(r'"((?:[^"]|"")*)"')
_NO_CFG = object()


def _terms(match: str) -> list[str]:
    """The quoted terms of an FTS5 OR query (``memo.text.fts_query``: keyword words, or the
    exact arm's hex-encoded identifiers)."""
    return [t.replace('""', '"') for t in _QUOTED.findall(match)]


class PostgresSearch:
    name = "postgresql"

    def text_topk(self, ctx: Any, index: str, match: str, words: list[str] | None) -> list[ArmHit]:
        cfg = ctx.profile.retrieve if ctx.profile is not None else None
        weight = cfg.keyword_section_weight if cfg is not None and index == "passages_fts" else 1.0
        rows = pg_fts.bm25_topk(ctx.conn, index, _terms(match), ctx.scope_sql.where, ctx.scope_sql.params,
                                ctx.fetch_depth, conn_cache(ctx.conn), section_weight=weight)
        return [ArmHit(pk=pk, rank=i, raw=score) for i, (pk, score) in enumerate(rows, 1)]

    def vector_topk(self, ctx: Any, svc: Any, qvec: np.ndarray) -> list[ArmHit]:
        if getattr(svc.index, "cfg", _NO_CFG) is _NO_CFG:    # a unit test's fake index: its own answer
            hits = svc.index.search(ctx.conn, qvec, allowed_pks(ctx, svc), ctx.fetch_depth)
        else:
            cfg = ctx.profile.index if ctx.profile is not None else None
            hits = pg_vectors.vector_topk(ctx.conn, svc.model_id, qvec, ctx.scope_sql.where, ctx.scope_sql.params,
                                          ctx.fetch_depth, in_scope=scope_stats(ctx.conn, ctx.scope_sql).in_scope,
                                          cfg=cfg, cache=conn_cache(ctx.conn))
        return [ArmHit(pk=int(pk), rank=i + 1, raw=float(cos)) for i, (pk, cos) in enumerate(hits)]

    def prepare_vectors(self, ctx: Any, svc: Any) -> None:
        # The vectors live in the server (pgvector): nothing to map in this process.
        return None

    def vectors_pending(self, ctx: Any, svc: Any) -> int:
        # The vectors live in the server (pgvector): one anti-join there.
        return int(svc.pending_in_scope(ctx.conn, ctx.scope_sql.where, ctx.scope_sql.params))

    def fact_text_topk(self, ctx: Any, match: str, where: str, params: Sequence[Any]) -> list[tuple[int, float]]:
        return pg_fts.bm25_topk(ctx.conn, "facts_fts", _terms(match), where, params, ctx.fetch_depth,
                                conn_cache(ctx.conn))

    def fact_vector_topk(self, ctx: Any, svc: Any, qvec: np.ndarray,
                         allowed: Sequence[int]) -> list[tuple[int, float]]:
        if getattr(svc.fact_index, "cfg", _NO_CFG) is _NO_CFG:   # a unit test's fake index
            return [(int(pk), float(c)) for pk, c in svc.fact_index.search(ctx.conn, qvec, allowed, ctx.fetch_depth)]
        return pg_vectors.fact_vector_topk(ctx.conn, svc.model_id, qvec, allowed, ctx.fetch_depth)

    def passage_cosines(self, conn: Any, model_id: str, qvec: np.ndarray, pks: Sequence[int]) -> dict[int, float]:
        keys = sorted({int(pk) for pk in pks})
        if not keys:
            return {}
        return {int(pk): float(cos) for pk, cos in pg_vectors.passage_cosines(conn, model_id, qvec, keys)}

    def keyword_scores(self, ctx: Any, match: str, pks: Sequence[int],
                       words: Sequence[str] | None = None) -> dict[int, float]:
        keys = sorted(set(pks))
        if not keys:
            return {}
        return dict(pg_fts.bm25_topk(ctx.conn, "passages_fts", _terms(match),
                                     f"p.pk IN ({','.join('?' * len(keys))})", keys, len(keys),
                                     conn_cache(ctx.conn)))

    def word_df(self, conn: Any, word: str, where: str, params: Sequence[Any]) -> int:
        # Few passages out of scope (the usual live filter): the posting list's length
        # minus the excluded holders; else every holder joined to its record.
        stats = scope_stats(conn, ScopeSQL(where or "TRUE", tuple(params)))
        if stats.excluded is not None:
            return pg_fts.count_holding(conn, "passages_fts", word.split(), sorted(stats.excluded), conn_cache(conn))
        return pg_fts.scoped_count(conn, "passages_fts", word.split(), where, params)

    def term_holders(self, conn: Any, table: str, terms: Sequence[str],
                     rows: Sequence[int]) -> list[tuple[str, int, list[int]]]:
        # A query word is held when the row holds every lexeme PostgreSQL makes of it; its
        # count is the rarest of its lexemes' (a word with no lexeme, a stop word there,
        # counts as held by no row).
        counts = conn_cache(conn).setdefault(f"pg_term_rows:{table}", {})
        out = []
        for term in terms:
            lexes = pg_fts.lexemes(conn, table, [term])
            n_hit = min(pg_fts.term_counts(conn, table, lexes, counts), default=0)
            held: list[int] = []
            if n_hit and rows and lexes:
                keep = set(rows)
                for lx in lexes:
                    keep &= set(pg_fts.holders(conn, table, lx, sorted(keep)))
                held = [r for r in rows if r in keep]
            out.append((term, int(n_hit), held))
        return out


POSTGRES = PostgresSearch()
