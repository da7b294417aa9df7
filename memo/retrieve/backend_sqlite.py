"""SQLite's answers to the arms' questions (``memo.retrieve.backend.SearchBackend``).

Text top-k (keyword and exact arms): two exact plans over an FTS5 table (see
``memo.retrieve.scope.ScopeStats``):

* few passages out of scope: query the FTS table alone for fetch_depth + len(excluded)
  rows and drop the excluded pks here (no join: docs/results-log.md "Scope plan for the FTS arms");
* many out of scope: join passages/records and put the scope WHERE in the query.

``raw`` = -bm25 (FTS5's bm25 is negative, best first), so higher is better.  For the
keyword arm, when the profile allows it (``index.keyword = "impact"``, at least
``index.impact_min_passages`` passages), the persistent postings
(``memo.retrieve.kw_search``) answer with the same ranking without scoring every matching
row in SQLite; a database without them (schema before v6) uses the in-memory impact index
when one matches this snapshot (``memo.retrieve.impact``); below that count, a current
in-memory index the process already holds (the eval's workers build one); otherwise FTS5 does.

Column weights: ``passages_fts`` is (text, section); the keyword arm scores it with
``bm25(passages_fts, 1.0, retrieve.keyword_section_weight)`` (FTS5 adds the column's weight,
not 1, per occurrence to a phrase's frequency), and the impact index applies the same weight.
``exact_fts`` has one column and no weights.

Vector top-k: the in-process index (``memo.embed.index``: exact float32, or int8 +
rescoring from the sidecar per the profile's ``[index]``), given the excluded pks when
few passages are out of scope, else the allowed ones.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from memo.retrieve import impact, kw_search
from memo.retrieve.conn_cache import conn_cache
from memo.retrieve.scope import ScopeSQL, scope_stats
from memo.retrieve.types import ArmHit

if TYPE_CHECKING:
    import numpy as np


# Table names are constants of this module's callers, never user input.
_TABLES = ("passages_fts", "exact_fts")
_NO_CFG = object()


def _quote(term: str) -> str:
    return '"' + term.replace('"', '""') + '"'


class SqliteSearch:
    name = "sqlite"

    def text_topk(self, ctx: Any, index: str, match: str, words: list[str] | None) -> list[ArmHit]:
        if index not in _TABLES:
            raise ValueError(f"not an FTS table: {index}")
        table = index
        cfg = ctx.profile.retrieve if ctx.profile is not None else None
        idx = ctx.profile.index if ctx.profile is not None else None
        stats = scope_stats(ctx.conn, ctx.scope_sql)
        section_weight = cfg.keyword_section_weight if cfg is not None and table == "passages_fts" else 1.0
        if words and idx is not None and idx.keyword == "impact":
            hits = None
            if stats.total >= idx.impact_min_passages:
                # The persistent postings first (current after every write, any process); the
                # in-memory index for a database without them (a schema before v6, read-only).
                if table == "passages_fts":
                    hits = kw_search.topk(ctx.conn, ctx.scope_sql, ctx.fetch_depth, words,
                                          section_weight=section_weight, merge_rows=idx.keyword_merge_rows)
                if hits is None:
                    hits = impact.impact_topk(ctx.conn, ctx.scope_sql, ctx.fetch_depth, table, words,
                                              section_weight=section_weight)
            elif impact.current_index(ctx.conn, table) is not None:
                # Below impact_min_passages a process does not *build* the index for one
                # search, but one that already holds a current index (the eval's workers build
                # it at start: hundreds of searches each) uses it: the same ranking, bit for bit.
                hits = impact.impact_topk(ctx.conn, ctx.scope_sql, ctx.fetch_depth, table, words,
                                          section_weight=section_weight)
            if hits is not None:
                return hits
        # 1.0: today's statement, unweighted (bm25 reads a missing weight as 1.0).
        bm25, weight = ((f"bm25({table})", ()) if section_weight == 1.0
                        else (f"bm25({table}, 1.0, ?)", (section_weight,)))
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

    def vector_topk(self, ctx: Any, svc: Any, qvec: np.ndarray) -> list[ArmHit]:
        # memo's own index takes the profile's [index] section (exact or int8 +
        # rescoring, the sidecar) and, when few passages are out of scope (the usual case:
        # a few superseded records), those pks instead of every allowed one (reading 1M
        # allowed pks costs more than the scan).  Fakes keep the plain call.
        cfg = ctx.profile.index if ctx.profile is not None else None
        if getattr(svc.index, "cfg", _NO_CFG) is not _NO_CFG:
            stats = scope_stats(ctx.conn, ctx.scope_sql)
            if stats.excluded is not None:
                hits = svc.index.search(ctx.conn, qvec, None, ctx.fetch_depth, cfg, excluded=stats.excluded)
            else:
                hits = svc.index.search(ctx.conn, qvec, allowed_pks(ctx, svc), ctx.fetch_depth, cfg)
        else:
            hits = svc.index.search(ctx.conn, qvec, allowed_pks(ctx, svc), ctx.fetch_depth)
        return [ArmHit(pk=int(pk), rank=i + 1, raw=float(cos)) for i, (pk, cos) in enumerate(hits)]

    def prepare_vectors(self, ctx: Any, svc: Any) -> None:
        # memo's own index: the matrix brought up to this snapshot (the sidecar mapped and
        # checked) and, for a scope that excludes few passages (the int8 scan reads every
        # row), the int8 rows' pages mapped into the process.  Fakes: nothing to do.
        if getattr(svc.index, "cfg", _NO_CFG) is _NO_CFG:
            return
        svc.index.refresh(ctx.conn, ctx.profile.index if ctx.profile is not None else None)
        if scope_stats(ctx.conn, ctx.scope_sql).excluded is not None:
            svc.index.warm()

    def vectors_pending(self, ctx: Any, svc: Any) -> int:
        # memo's own index counts the in-scope rows it holds, with the masks the search
        # just used; the passages in scope are already counted (scope_stats), so nothing
        # reads every passage (a SQL anti-join took 5 s at 1M).  Fakes count in SQL.
        visible = getattr(svc.index, "visible_in_scope", None)
        if visible is None:
            return int(svc.pending_in_scope(ctx.conn, ctx.scope_sql.where, ctx.scope_sql.params))
        stats = scope_stats(ctx.conn, ctx.scope_sql)
        seen = (visible(ctx.conn, None, stats.excluded) if stats.excluded is not None
                else visible(ctx.conn, allowed_pks(ctx, svc)))
        return max(0, stats.in_scope - seen)

    def fact_text_topk(self, ctx: Any, match: str, where: str, params: Sequence[Any]) -> list[tuple[int, float]]:
        rows = ctx.conn.execute(
            "SELECT f.pk, bm25(facts_fts) AS s FROM facts_fts JOIN facts f ON f.pk = facts_fts.rowid"
            " WHERE facts_fts MATCH ? AND " + where + " ORDER BY s, f.pk LIMIT ?",
            (match, *params, ctx.fetch_depth)).fetchall()
        return [(int(r[0]), -float(r[1])) for r in rows]

    def fact_vector_topk(self, ctx: Any, svc: Any, qvec: np.ndarray,
                         allowed: Sequence[int]) -> list[tuple[int, float]]:
        return [(int(pk), float(cos)) for pk, cos in svc.fact_index.search(ctx.conn, qvec, allowed, ctx.fetch_depth)]

    def keyword_scores(self, ctx: Any, match: str, pks: Sequence[int],
                       words: Sequence[str] | None = None) -> dict[int, float]:
        wanted = set(pks)
        if words:
            # A current impact index scores the rows FTS5 would (bm25 of the same phrases,
            # the same doubles) without scoring every row the OR query matches.
            fast = impact.scores_of(ctx.conn, "passages_fts", tuple(words), wanted)
            if fast is None:      # the persistent postings, when no in-process index is current
                fast = kw_search.scores_for(ctx.conn, words, sorted(wanted))
            if fast is not None:
                return fast
        out: dict[int, float] = {}
        for rowid, score in ctx.conn.execute(
                "SELECT rowid, bm25(passages_fts) FROM passages_fts WHERE passages_fts MATCH ?", (match,)):
            if rowid in wanted:
                out[int(rowid)] = -float(score)
        return out

    def passage_cosines(self, conn: Any, model_id: str, qvec: np.ndarray, pks: Sequence[int]) -> dict[int, float]:
        import numpy as np

        keys = sorted({int(pk) for pk in pks})
        if not keys:
            return {}
        rows = conn.execute(f"SELECT passage_pk, vec FROM vectors WHERE model_id = ? AND passage_pk IN "
                            f"({','.join('?' * len(keys))})", (model_id, *keys)).fetchall()
        q = np.asarray(qvec, dtype=np.float32)
        return {int(pk): float(np.frombuffer(vec, dtype="<f4") @ q) for pk, vec in rows if len(vec) == 4 * len(q)}

    def word_df(self, conn: Any, word: str, where: str, params: Sequence[Any]) -> int:
        # The keyword arm's impact index counts a one-token word when it matches the
        # snapshot (through FTS5 the join reads every holder's passage and record: docs/
        # results-log.md "Word counts for routing and keyword evidence").
        scope = ScopeSQL(where or "1", tuple(params))
        fast = impact.scoped_df(conn, scope, word)
        if fast is None:      # the persistent postings, when no in-process index is current
            fast = kw_search.scoped_df(conn, scope, word)
        if fast is None:      # a phrase ("T-cell": two tokens), or no postings
            fast = _listed_scope_df(conn, scope, word)
        if fast is not None:
            return fast
        row = conn.execute(
            "SELECT count(*) FROM passages_fts f JOIN passages p ON p.pk = f.rowid "
            "JOIN records r ON r.id = p.record_id WHERE passages_fts MATCH ? AND " + (where or "1"),
            (_quote(word), *params)).fetchone()
        return int(row[0]) if row else 0

    def term_holders(self, conn: Any, table: str, terms: Sequence[str],
                     rows: Sequence[int]) -> list[tuple[str, int, list[int]]]:
        # With the keyword arm's impact index current for the snapshot the counts and
        # holders come from its postings (the rows FTS5's MATCH '"t"' returns, its own
        # tokens and stems), a binary search per candidate and term; otherwise per term one
        # count(*) (cached until the data changes) and one MATCH ... AND +rowid IN (rows):
        # the + keeps the IN list out of FTS5's rowid lookup, so the posting list is read
        # once and filtered.
        found = impact.term_postings(conn, tuple(terms), table) if table == "passages_fts" else None
        if found is not None:
            return _holders_from_index(found, terms, rows)
        held = kw_search.term_holders(conn, terms, rows) if table == "passages_fts" else None
        if held is not None:         # the persistent postings (any process, from its first search)
            return held
        return _holders_from_fts(conn, table, terms, rows)


def _listed_scope_df(conn: Any, scope: ScopeSQL, word: str) -> int | None:
    """In-scope passages matching ``word`` (a phrase too) when the scope lists what it rules
    out: FTS5's own count of the match, less the listed exclusions among its rows; None when
    the scope lists nothing (then the join counts).  The join read each matching row's passage
    and record: "T-cell" at 1M passages (117k rows) 370 ms, FTS5's count 16 ms."""
    excluded = scope_stats(conn, scope).excluded
    if excluded is None:
        return None
    match = _quote(word)
    n = int(conn.execute("SELECT count(*) FROM passages_fts WHERE passages_fts MATCH ?", (match,)).fetchone()[0])
    if n and excluded:
        n -= int(conn.execute("SELECT count(*) FROM passages_fts WHERE passages_fts MATCH ? AND rowid IN "
                              "(SELECT value FROM json_each(?))", (match, json.dumps(sorted(excluded)))).fetchone()[0])
    return n


def _holders_from_fts(conn: Any, table: str, terms: Sequence[str],
                      rows: Sequence[int]) -> list[tuple[str, int, list[int]]]:
    counts = conn_cache(conn).setdefault(f"term_rows:{table}", {})
    marks = ",".join("?" * len(rows))
    out = []
    for term in terms:
        match = _quote(term)
        n_hit = counts.get(term)
        if n_hit is None:
            if len(counts) > 100_000:
                counts.clear()
            n_hit = counts[term] = conn.execute(
                f"SELECT count(*) FROM {table} WHERE {table} MATCH ?", (match,)).fetchone()[0]
        held = []
        if n_hit and rows:
            held = [int(r[0]) for r in conn.execute(
                f"SELECT rowid FROM {table} WHERE {table} MATCH ? AND +rowid IN ({marks})", (match, *rows))]
        out.append((term, int(n_hit), held))
    return out


def _holders_from_index(found: Any, terms: Sequence[str], rows: Sequence[int]) -> list[tuple[str, int, list[int]]]:
    """The same counts and holders from the impact index's postings (sorted row numbers)."""
    import numpy as np

    index, postings = found
    cand = np.asarray(list(rows), dtype=np.int64)
    at = np.searchsorted(index.pks, cand)
    at_ok = at < len(index.pks)
    present = np.zeros(len(cand), dtype=bool)
    present[at_ok] = index.pks[at[at_ok]] == cand[at_ok]
    out = []
    for term, post in zip(terms, postings, strict=True):
        if len(post) == 0 or len(cand) == 0:
            out.append((term, len(post), []))
            continue
        j = np.searchsorted(post, at)
        inside = j < len(post)
        hit = present & inside
        hit[inside] &= post[j[inside]] == at[inside]
        out.append((term, len(post), cand[hit].tolist()))
    return out


def allowed_pks(ctx: Any, svc: Any) -> np.ndarray | None:
    """Passage pks the scope filter allows (None = no filter at all; portable SQL: a
    unit test's fake index gets them on either engine).  The index caches
    the answer per (data generation, where, params), so a replay of many queries under
    one scope runs the filter query once."""
    scoped = getattr(svc.index, "scope_pks", None)
    if scoped is not None:
        return scoped(ctx.conn, ctx.scope_sql.where, ctx.scope_sql.params)
    sql = ("SELECT p.pk FROM passages p JOIN records r ON r.id = p.record_id WHERE "
           + (ctx.scope_sql.where or "1"))
    rows = ctx.conn.execute(sql, ctx.scope_sql.params).fetchall()
    import numpy as np

    return np.fromiter((row[0] for row in rows), dtype=np.int64, count=len(rows))


SQLITE = SqliteSearch()
