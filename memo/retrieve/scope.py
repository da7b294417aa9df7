"""Stage 1, scope filter: ``Scope`` -> ``ScopeSQL``, a WHERE fragment every arm puts
*inside* its own query, before its top-k (seed section 1), so a filtered search never loses
a result to a candidate that was filtered out later (tobi/qmd #775: per-collection top-k
starvation).

SQL safety: the fragment is built only from constant text; column names come from this
file, never from the caller; every value is a ``?`` parameter.

Live filter: not superseded, not forgotten.  Under ``as_of`` T: recorded at or before T,
not superseded at or before T, and never forgotten (forgetting is not time travel: a
forgotten record stays hidden).  Dates (``date_from``/``date_to``) apply to the
passage's ``event_at``, else the record's ``event_at``, else ``recorded_at``.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from typing import Any

from memo.errors import ValidationError
from memo.retrieve.conn_cache import conn_cache
from memo.store import kw_postings
from memo.store.dialect import is_postgres
from memo.text.folding import has_surrogates
from memo.text.tags import tag_form
from memo.text.when import date_only, period, stamp
from memo.types import KINDS, Scope


@dataclass(frozen=True, slots=True)
class ScopeSQL:
    """A WHERE fragment over ``passages p JOIN records r`` and its parameters (re-exported
    by ``memo.retrieve.arms.base``)."""

    where: str
    params: tuple[Any, ...]

# The timestamp format memo stores (memo.store.records.utc_now, "%Y-%m-%dT%H:%M:%S.%fZ");
# as_of is normalised to it (``memo.text.when.stamp``) so the string comparison with
# recorded_at/superseded_at is a time comparison.
_WHEN = "COALESCE(p.event_at, r.event_at, r.recorded_at)"


def parse_when(text: str, *, end_of_day: bool = False, field: str = "date") -> datetime:
    """ISO date or datetime -> aware UTC datetime.  A bare date means its first moment, or
    its last with ``end_of_day`` (so ``--to 2024-05-01`` includes that whole day).

    A moment beyond what ``datetime`` holds once converted to UTC (``0001-01-01T00:00+05:00``,
    ``9999-12-31T23:59-05:00``) is clamped to the first / last representable UTC moment:
    before / after every stored time either way, so the comparison keeps its meaning."""
    s = str(text).strip()
    try:
        d = _day_of(s, end_of_day)
        if d is not None:
            moment = datetime(d.year, d.month, d.day, tzinfo=UTC)
            return moment + timedelta(days=1, microseconds=-1) if end_of_day else moment
        moment = datetime.fromisoformat(s)
    except ValueError:
        raise ValidationError(f"{field} {text!r} is not an ISO-8601 date or time",
                              hint="use YYYY-MM-DD, YYYY-MM (a month), YYYY (a year) or "
                                   "YYYY-MM-DDTHH:MM:SSZ") from None
    if moment.tzinfo is None:
        return moment.replace(tzinfo=UTC)
    try:
        return moment.astimezone(UTC)
    except OverflowError:
        return FIRST_MOMENT if moment.year == 1 else LAST_MOMENT


FIRST_MOMENT = datetime.min.replace(tzinfo=UTC)
LAST_MOMENT = datetime.max.replace(tzinfo=UTC)


def date_range(date_from: str | None, date_to: str | None) -> tuple[list[str], list[str]]:
    """The SQL conditions and parameters of ``--from`` / ``--to`` on a passage's event date
    (else its record's, else when it was recorded): aliases ``p`` (passages) and ``r``
    (records).  One reading for search scopes and ``memo list``; an empty range is an error."""
    where: list[str] = []
    params: list[str] = []
    if date_from:
        where.append(f"{_WHEN} >= ?")
        params.append(_date_bound(date_from, end=False, field="from"))
    if date_to:
        where.append(f"{_WHEN} <= ?")
        params.append(_date_bound(date_to, end=True, field="to"))
    if date_from and date_to and params[0] > params[1]:
        raise ValidationError(f"date range is empty: from {date_from} is after to {date_to}")
    return where, params


def _date_bound(text: str, *, end: bool, field: str) -> str:
    """A bound comparable with stored event_at strings (a date, or a UTC moment in
    ``memo.text.when``'s shape; older databases may hold other ISO shapes): compare on
    the ISO prefix.  ``from`` keeps its own text
    (normalised); ``to`` of a bare date becomes '<date>T23:59:59.999999Z' so 2024-05-01
    and 2024-05-01T10:00 both sort inside."""
    moment = parse_when(text, end_of_day=end, field=field)
    if _day_of(str(text).strip(), end) is not None:
        return moment.date().isoformat() if not end else stamp(moment)
    return stamp(moment)


def _day_of(text: str, end: bool) -> date | None:
    """The day a date-only bound names: the date itself, or a month's or year's first day
    (``from``) or last (``to``: ``--to 2025-11`` takes in the 30th), else None."""
    d = date_only(text)
    if d is not None:
        return d
    span = period(text)
    return None if span is None else span[1] if end else span[0]


def _texts(field: str, values: object) -> tuple[str, ...]:
    """Scope values as distinct strings SQLite can bind: each must be text without lone
    surrogates (no stored value can hold one, and binding it raises UnicodeEncodeError)."""
    if isinstance(values, str):
        values = (values,)
    try:
        items = tuple(values)  # type: ignore[arg-type]
    except TypeError:
        raise ValidationError(f"{field} must be a list of text values, not {type(values).__name__}") from None
    for v in items:
        _check_text(field, v)
    return tuple(dict.fromkeys(items))


def _check_text(field: str, value: object) -> str:
    if not isinstance(value, str):
        raise ValidationError(f"{field} value {value!r} is not text")
    if has_surrogates(value):
        raise ValidationError(f"{field} value {value!r} is not valid Unicode text (lone surrogate)")
    return value


def live_filter(alias: str, as_of: str | None) -> tuple[str, list[object]]:
    """The live rule over a table with recorded_at / superseded_at / forgotten_at (records
    ``r``, facts ``f``): not superseded and not forgotten, or under ``as_of`` T: recorded at
    or before T, not superseded at or before T, never forgotten.  ``alias`` is a constant."""
    if as_of:
        t = stamp(parse_when(as_of, end_of_day=True, field="as_of"))
        return (f"{alias}.recorded_at <= ? AND ({alias}.superseded_at IS NULL OR {alias}.superseded_at > ?)"
                f" AND {alias}.forgotten_at IS NULL"), [t, t]
    return f"{alias}.superseded_at IS NULL AND {alias}.forgotten_at IS NULL", []


def build_scope_sql(scope: Scope) -> ScopeSQL:
    """The WHERE fragment over ``passages p JOIN records r ON r.id = p.record_id``."""
    live, params = live_filter("r", scope.as_of)
    where: list[str] = [live]
    for column, field, values in (("r.namespace", "namespace", scope.namespaces),
                                  ("r.kind", "kind", scope.kinds), ("r.source", "source", scope.sources)):
        values = _texts(field, values)
        if values:
            where.append(f"{column} IN ({','.join('?' * len(values))})")
            params += values
    for bad in set(scope.kinds) - set(KINDS):
        raise ValidationError(f"kind {bad!r} is not one of {', '.join(KINDS)}")
    if scope.library is not None:
        where.append("r.library = ?")
        params.append(_check_text("library", scope.library))
    if scope.version is not None:
        where.append("r.version = ?")
        params.append(_check_text("version", scope.version))
    tags = tuple(dict.fromkeys(tag_form(t) for t in _texts("tag", scope.tags)))
    if tags:
        # Every listed tag: count the record's tags among them.
        where.append(f"(SELECT COUNT(*) FROM record_tags t WHERE t.record_id = r.id"
                     f" AND t.tag IN ({','.join('?' * len(tags))})) = ?")
        params += [*tags, len(tags)]
    dates, bounds = date_range(scope.date_from, scope.date_to)
    where += dates
    params += bounds
    if scope.min_trust is not None:
        try:
            trust = float(scope.min_trust)
        except (TypeError, ValueError, OverflowError):
            raise ValidationError(f"min_trust {scope.min_trust!r} is not a number") from None
        if not (0.0 <= trust <= 1.0):
            raise ValidationError(f"min_trust {trust} is outside 0..1")
        where.append("r.trust >= ?")
        params.append(trust)
    return ScopeSQL(where=" AND ".join(where), params=tuple(params))


# ---------------------------------------------------------------------------------------
# Scope statistics, cached per connection until the data changes (PRAGMA data_version moves
# on another connection's commit, total_changes on this one's): an eval replay of 300
# queries under one scope computes them once.
#
# * counts for the trace: passages in scope vs total (two COUNTs);
# * ``excluded``: the pks the scope rules out, when there are few (<= EXCLUDED_MAX).  Then
#   an FTS arm can run its query *without* joining passages/records (the join costs time
#   per matching row, most of a SciFact query: docs/results-log.md "Scope plan for the FTS
#   arms") and drop those pks itself after asking
#   for fetch_depth + len(excluded) rows, which is exact: at most len(excluded) rows of
#   that longer list can fall out.  With many exclusions the arm joins (scope in SQL).
# ---------------------------------------------------------------------------------------
EXCLUDED_MAX = 500
_FALSE = {False: "0", True: "false"}   # SQLite's and PostgreSQL's false


@dataclass(frozen=True, slots=True)
class ScopeStats:
    in_scope: int
    total: int
    excluded: frozenset[int] | None   # None = too many to list: filter in SQL


def scope_stats(conn: sqlite3.Connection, scope_sql: ScopeSQL) -> ScopeStats:
    cache = conn_cache(conn).setdefault("scope_stats", {})
    key = (scope_sql.where, scope_sql.params)
    hit = cache.get(key)
    if hit is not None:
        return hit
    stats = None if is_postgres(conn) else _live_scope_stats(conn, scope_sql)
    if stats is not None:
        if len(cache) > 64:
            cache.clear()
        cache[key] = stats
        return stats
    total = conn.execute("SELECT COUNT(*) FROM passages").fetchone()[0]
    in_scope = conn.execute(
        "SELECT COUNT(*) FROM passages p JOIN records r ON r.id = p.record_id WHERE "
        + scope_sql.where, scope_sql.params).fetchone()[0]
    excluded = None
    if total - in_scope <= EXCLUDED_MAX:
        # COALESCE: a condition that is NULL (e.g. source IN (...) on a NULL source) is
        # "not in scope" for WHERE, so it must count as excluded here too.
        excluded = frozenset(row[0] for row in conn.execute(
            "SELECT p.pk FROM passages p JOIN records r ON r.id = p.record_id WHERE NOT COALESCE(("
            + scope_sql.where + f"), {_FALSE[is_postgres(conn)]})", scope_sql.params))
    if len(cache) > 64:
        cache.clear()
    stats = cache[key] = ScopeStats(int(in_scope), int(total), excluded)
    return stats


# The default scope (live records, nothing else): its counts come without counting the
# passages (issue 31.2).  The total is the passage count the keyword postings keep with
# every write (memo.store.kw_postings: FTS5 holds one row per passage); the excluded
# passages are those of records that are not live, read through the partial index
# ``records_not_live`` (schema v6): cost in proportion to them, not to the database.
_LIVE_ONLY = live_filter("r", None)[0]
_NOT_LIVE = ("FROM records r JOIN passages p ON p.record_id = r.id"
             " WHERE r.superseded_at IS NOT NULL OR r.forgotten_at IS NOT NULL")


def _live_scope_stats(conn: sqlite3.Connection, scope_sql: ScopeSQL) -> ScopeStats | None:
    if scope_sql.where != _LIVE_ONLY or scope_sql.params:
        return None
    meta = kw_postings.read_meta(conn)
    if meta is None or not meta.built:
        return None
    gone = [int(r[0]) for r in conn.execute(f"SELECT p.pk {_NOT_LIVE} LIMIT ?", (EXCLUDED_MAX + 1,))]
    if len(gone) <= EXCLUDED_MAX:
        return ScopeStats(meta.rows - len(gone), meta.rows, frozenset(gone))
    n_gone = int(conn.execute(f"SELECT count(*) {_NOT_LIVE}").fetchone()[0])
    return ScopeStats(meta.rows - n_gone, meta.rows, None)


def scope_counts(conn: sqlite3.Connection, scope_sql: ScopeSQL) -> tuple[int, int]:
    """(passages in scope, passages in total)."""
    stats = scope_stats(conn, scope_sql)
    return stats.in_scope, stats.total


def unknown_namespaces(conn: sqlite3.Connection, scope: Scope, shown: int = 12) -> tuple[list[str], list[str]]:
    """(requested namespaces that hold no live record, the namespaces that do: at most
    ``shown``, most records first) -- for the reason of an empty scope.  Only run when a
    search had nothing in scope."""
    if not scope.namespaces:
        return [], []
    live, params = live_filter("r", None)
    rows = conn.execute(f"SELECT r.namespace, count(*) AS n FROM records r WHERE {live} GROUP BY r.namespace "
                        "ORDER BY n DESC, r.namespace", params).fetchall()
    have = [str(row[0]) for row in rows]
    missing = [ns for ns in scope.namespaces if ns not in set(have)]
    return missing, have[:shown]
