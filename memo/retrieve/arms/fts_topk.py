"""Top-k over an FTS5 table with the scope filter applied before the top-k.

Two exact plans (see ``memo.retrieve.scope.ScopeStats``):
* few passages out of scope: query the FTS table alone for fetch_depth + len(excluded)
  rows and drop the excluded pks here (no join: ~3x faster on SciFact);
* many out of scope: join passages/records and put the scope WHERE in the query.
``raw`` = -bm25 (FTS5's bm25 is negative, best first), so higher is better.

The keyword arm passes its words too: then, when the profile allows it
(``retrieve.keyword_index = "impact"``, at least ``retrieve.impact_min_passages`` passages)
and an impact index matches this snapshot, ``memo.retrieve.impact`` answers with the same
ranking without scoring every matching row in SQLite; otherwise FTS5 does.

Column weights: ``passages_fts`` is (text, section); the keyword arm scores it with
``bm25(passages_fts, 1.0, retrieve.keyword_section_weight)`` (FTS5 adds the column's weight,
not 1, per occurrence to a phrase's frequency), and the impact index applies the same weight.
``exact_fts`` has one column and no weights.

On PostgreSQL the same bm25 is computed over tsvectors (``memo.store.postgres.fts``), with
the scope in the statement.
"""

from __future__ import annotations

import re

from memo.retrieve.arms.base import ArmContext, ArmHit
from memo.retrieve.conn_cache import conn_cache
from memo.retrieve.impact import impact_topk
from memo.retrieve.scope import scope_stats
from memo.store.dialect import is_postgres
from memo.store.postgres.fts import bm25_topk

_QUOTED = re.compile(r'"((?:[^"]|"")*)"')

# Table names are constants of this module's callers, never user input.
_TABLES = ("passages_fts", "exact_fts")


def fts_topk(ctx: ArmContext, table: str, match: str, words: list[str] | None = None) -> list[ArmHit]:
    if table not in _TABLES:
        raise ValueError(f"not an FTS table: {table}")
    cfg = ctx.profile.retrieve if ctx.profile is not None else None
    if is_postgres(ctx.conn):
        # The same bm25 over tsvectors (memo.store.postgres.fts), scope in the statement.
        terms = [t.replace('""', '"') for t in _QUOTED.findall(match)]
        weight = cfg.keyword_section_weight if cfg is not None and table == "passages_fts" else 1.0
        rows = bm25_topk(ctx.conn, table, terms, ctx.scope_sql.where, ctx.scope_sql.params, ctx.fetch_depth,
                         conn_cache(ctx.conn), section_weight=weight)
        return [ArmHit(pk=pk, rank=i, raw=score) for i, (pk, score) in enumerate(rows, 1)]
    stats = scope_stats(ctx.conn, ctx.scope_sql)
    section_weight = cfg.keyword_section_weight if cfg is not None and table == "passages_fts" else 1.0
    if words and cfg is not None and cfg.keyword_index == "impact" and stats.total >= cfg.impact_min_passages:
        hits = impact_topk(ctx.conn, ctx.scope_sql, ctx.fetch_depth, table, words, section_weight=section_weight)
        if hits is not None:
            return hits
    # 1.0: today's statement, unweighted (bm25 reads a missing weight as 1.0).
    bm25, weight = (f"bm25({table})", ()) if section_weight == 1.0 else (f"bm25({table}, 1.0, ?)", (section_weight,))
    if stats.excluded is not None:
        rows = ctx.conn.execute(
            f"SELECT rowid, {bm25} AS s FROM {table} WHERE {table} MATCH ? ORDER BY s LIMIT ?",
            (*weight, match, ctx.fetch_depth + len(stats.excluded))).fetchall()
        if stats.excluded:
            rows = [row for row in rows if row[0] not in stats.excluded][:ctx.fetch_depth]
    else:
        rows = ctx.conn.execute(
            f"SELECT f.rowid, {bm25} AS s FROM {table} f"
            " JOIN passages p ON p.pk = f.rowid JOIN records r ON r.id = p.record_id"
            f" WHERE {table} MATCH ? AND " + ctx.scope_sql.where + " ORDER BY s LIMIT ?",
            (*weight, match, *ctx.scope_sql.params, ctx.fetch_depth)).fetchall()
    return [ArmHit(pk=row[0], rank=i, raw=-row[1]) for i, row in enumerate(rows, 1)]
