"""The title hop (extra ``graph_titles``, issue 29.3): the second passage of a bridge
question is the article *about* a thing the first passage mentions.

"What language were books being translated into during the era of Haymo of Faversham?":
the keyword and semantic arms find Haymo's article, which names the king of his day; the
answer sits in that king's article, which shares almost no word with the question.  No
language model is needed to make that hop: the king is an entity of Haymo's passage, and
the king's article is the record whose *title* is that entity (``title_name``: a title
shaped like a name is an entity of every passage of its record, ``memo.text.entities``).

``title_hop`` reads the first ``graph.title_hits`` hits of the keyword and semantic arms
(pseudo-relevance feedback: the best hits stand in for the first hop), each weighted by
the reciprocal of its rank in each arm, and returns, for each entity one of those hits
mentions (walk masks applied: never a common entity, nor a word only seen starting a
sentence) that titles an article other than the hit's own, each such article's *lead*: its
first passage.  A Wikipedia paragraph is its article's lead; a document of hundreds of
sections ("Stream" of the Node.js docs) is reached through its introduction, not through
its first hundred sections, which flooded the fused list of every docs question (issue
29.3, 2026-12-05: docs/eval.md).  A passage's score is the sum of the weights of the hits
that point to it; it may be a passage no other arm found (a new candidate, not only a
re-rank).

Leads need no stored data: the graph indexes passages in the order their mentions were
written, a record's together and in its own order, and every passage of a titled record
mentions the title, so the passages an entity titles form one run of consecutive indices
per record and a lead is where a run starts (two records of one title written back to
back read as one; the scope keeps or drops a record whole).
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from memo.graph.cache import MentionGraph, db_key
from memo.graph.csr import CSR
from memo.graph.sidecar import open_titles, subject_path, write_titles
from memo.text.entities import title_key

_CHUNK = 500


@dataclass(frozen=True, slots=True)
class TitleHop:
    """One title-hop candidate: graph passage index, score, and the (entity key, name,
    weight) of each hit's entity that names its record (best first)."""

    index: int
    score: float
    via: tuple[tuple[str, str, float], ...]


@dataclass(frozen=True, slots=True)
class TitleIndex:
    """Which entity each passage's record title is (built once per mention graph state)."""

    of_passage: np.ndarray         # passage index -> entity index of its record's title, -1 = none
    passages: CSR                  # (entities, passages): 1 where the passage's record is titled so
    epoch: int = -1                # the graph state it belongs to
    seq: int = -1
    entities: int = 0              # the graph's entity count then
    # title key -> passage indices whose title names no entity of the graph yet: what a later
    # state may resolve (None: not known, e.g. mapped from the sidecar; then a later state is
    # computed in full once)
    unresolved: dict[str, list[int]] | None = None


@dataclass(frozen=True, slots=True)
class SubjectSpec:
    """What a passage's *subject* is, for an index in ``TitleIndex``'s form: the record's
    title (this module) or the section's own heading (``memo.graph.sections``).  ``keys(conn,
    pks)``: (pk, the subject's entity key) of the passages that have one, among ``pks`` (None:
    every passage)."""

    name: str                      # the sidecar's and the process cache's name
    keys: Callable[[sqlite3.Connection, Sequence[int] | None], list[tuple[int, str]]]


def in_chunks(conn: sqlite3.Connection, sql: str, pks: Sequence[int] | None, params: tuple = ()) -> list[tuple]:
    """``sql``'s rows, ``{pks}`` in it replaced by nothing (``pks`` None) or by ``AND p.pk IN
    (...)`` over ``pks`` a chunk at a time."""
    if pks is None:
        return conn.execute(sql.format(pks=""), params).fetchall()
    rows: list[tuple] = []
    for s in range(0, len(pks), _CHUNK):
        chunk = list(pks[s:s + _CHUNK])
        rows += conn.execute(sql.format(pks=f" AND p.pk IN ({','.join('?' * len(chunk))})"),
                             (*params, *chunk)).fetchall()
    return rows


def _title_keys(conn: sqlite3.Connection, pks: Sequence[int] | None) -> list[tuple[int, str]]:
    rows = in_chunks(conn, "SELECT p.pk, r.title FROM passages p JOIN records r ON r.id = p.record_id "
                           "WHERE r.title IS NOT NULL{pks}", pks)
    return [(pk, key) for pk, title in rows if (key := title_key(title)) is not None]


TITLES = SubjectSpec("titles", _title_keys)


def seed_weights(hit_lists: Sequence[Sequence[int]], n: int) -> dict[int, float]:
    """Passage pk -> sum over the lists of 1/rank for its rank <= ``n`` in each (pure)."""
    out: dict[int, float] = {}
    for pks in hit_lists:
        for rank, pk in enumerate(pks[:n], 1):
            out[pk] = out.get(pk, 0.0) + 1.0 / rank
    return out


# The last title index of each database in this process: a server's next graph state (rows
# appended by a write) updates it with the new passages and entities only (``_updated``)
# instead of reading every titled passage again (3 s at 1M passages after every write).
_LAST: dict[tuple[str, str], TitleIndex] = {}
_LOCK = threading.Lock()


def title_index(conn: sqlite3.Connection, graph: MentionGraph, spec: SubjectSpec = TITLES,
                sidecar_min: int = 0) -> TitleIndex:
    """Every graph passage's title entity (callers cache it with the graph: ``conn_cache``).
    From the last index of this database when the graph only grew since (``_updated``),
    else from the sidecar a graph kept in one has beside it (``memo.graph.sidecar``: a new
    process maps it), else computed: one read of the titled records' passages, one of the
    entities those titles name.  ``spec``: another kind of subject (``SubjectSpec``).  The
    sidecar is kept beside a graph kept in its own, or one of at least ``sidecar_min``
    passages (``index.subject_sidecar_min``; 0: only the former)."""
    key = (spec.name, db_key(conn))
    with _LOCK:
        last = _LAST.get(key)
        if last is not None and (last.epoch, last.seq) == (graph.epoch, graph.seq) \
                and len(last.of_passage) == len(graph.passage_pks):
            return last
        grew = (last is not None and last.unresolved is not None and last.epoch == graph.epoch
                and last.seq < graph.seq and len(last.of_passage) <= len(graph.passage_pks)
                and last.entities <= len(graph.entity_pks))
        if grew:
            index = _updated(conn, graph, last, spec)       # type: ignore[arg-type]
        else:
            index = _computed(conn, graph, spec, sidecar_min)
        if len(_LAST) >= 8:
            _LAST.pop(next(iter(_LAST)))
        _LAST[key] = index
        return index


def forget_title_indexes() -> None:
    """Drop the process's title indexes (tests, benchmarks)."""
    with _LOCK:
        _LAST.clear()


def _computed(conn: sqlite3.Connection, graph: MentionGraph, spec: SubjectSpec = TITLES,
              sidecar_min: int = 0) -> TitleIndex:
    kept = graph.sidecar_edges or 0 < sidecar_min <= len(graph.passage_pks)
    path = subject_path(graph.db_path, spec.name) if graph.db_path and kept else None
    of_passage = open_titles(conn, path, graph.epoch, graph.seq, len(graph.passage_pks)) if path else None
    unresolved = None
    if of_passage is None:
        of_passage, unresolved = _of_passage(conn, graph, np.arange(len(graph.passage_pks)), spec)
        if path:
            try:
                write_titles(conn, path, graph.epoch, graph.seq, graph.edges, of_passage)
            except (OSError, ValueError):
                pass        # a read-only folder: the next process computes it again
    return _index_of(graph, of_passage, unresolved)


def _index_of(graph: MentionGraph, of_passage: np.ndarray, unresolved: dict[str, list[int]] | None) -> TitleIndex:
    q = np.flatnonzero(of_passage >= 0)
    passages = CSR.from_edges(of_passage[q], q, (len(graph.entity_pks), len(graph.passage_pks)))
    return TitleIndex(of_passage, passages, graph.epoch, graph.seq, len(graph.entity_pks), unresolved)


def _updated(conn: sqlite3.Connection, graph: MentionGraph, last: TitleIndex,
             spec: SubjectSpec = TITLES) -> TitleIndex:
    """``last`` brought to ``graph``, which only grew since (same epoch): passage and entity
    indices are kept and new ones appended, an entity is never removed and its key is
    unique, so an old passage's title entity stays, an unresolved one can only be resolved
    by an entity new to the graph, and only the new passages are read.  The result equals
    ``_of_passage`` over the whole graph (tests/unit/entities/test_graph_titles_update.py)."""
    unresolved = last.unresolved
    assert unresolved is not None
    # The map moves on to the new index (updated in place, under _LOCK); the old index keeps
    # serving the searches that hold it, which never read it.
    object.__setattr__(last, "unresolved", None)
    n_old = len(last.of_passage)
    of_passage = np.concatenate([last.of_passage, np.full(len(graph.passage_pks) - n_old, -1, dtype=np.int64)])
    new_entities = graph.entity_pks[last.entities:]
    for s in range(0, len(new_entities), _CHUNK):
        chunk = [int(pk) for pk in new_entities[s:s + _CHUNK]]
        for epk, key in conn.execute(f"SELECT pk, key FROM entities WHERE pk IN ({','.join('?' * len(chunk))})",
                                     chunk):
            waiting = unresolved.pop(key, None)
            if waiting:
                of_passage[waiting] = graph.entity_at(int(epk))
    if len(graph.passage_pks) > n_old:
        fresh, more = _of_passage(conn, graph, np.arange(n_old, len(graph.passage_pks)), spec)
        of_passage[n_old:] = fresh[n_old:]
        for key, qs in more.items():
            unresolved.setdefault(key, []).extend(qs)
    return _index_of(graph, of_passage, unresolved)


def _of_passage(conn: sqlite3.Connection, graph: MentionGraph, indices: np.ndarray,
                spec: SubjectSpec = TITLES) -> tuple[np.ndarray, dict[str, list[int]]]:
    """(passage index -> title entity index, -1 none, for the passages at ``indices``; the
    title keys that name no entity of the graph -> their passage indices)."""
    of_passage = np.full(len(graph.passage_pks), -1, dtype=np.int64)
    every = len(indices) == len(graph.passage_pks)      # every passage: one read of the titled ones
    pairs = spec.keys(conn, None if every else [int(pk) for pk in graph.passage_pks[indices]])
    at = graph.passage_indices(np.fromiter((pk for pk, _ in pairs), dtype=np.int64, count=len(pairs)))
    keys: dict[int, str] = {}
    for i, (_, key) in zip(at.tolist(), pairs, strict=True):
        if i >= 0:
            keys[i] = key
    wanted = sorted(set(keys.values()))
    found: list[tuple[int, str]] = []
    for s in range(0, len(wanted), _CHUNK):
        chunk = wanted[s:s + _CHUNK]
        found += conn.execute(f"SELECT pk, key FROM entities WHERE key IN ({','.join('?' * len(chunk))})",
                              chunk).fetchall()
    # one lookup for all (a numpy search per entity cost more than the SQL at 4k headings)
    at_e = graph.entity_indices(np.fromiter((int(pk) for pk, _ in found), dtype=np.int64, count=len(found)))
    entity_of = {key: e for (_, key), e in zip(found, at_e.tolist(), strict=True) if e >= 0}
    unresolved: dict[str, list[int]] = {}
    for q, key in keys.items():
        e = entity_of.get(key, -1)
        of_passage[q] = e
        if e < 0:
            unresolved.setdefault(key, []).append(q)
    return of_passage, unresolved


def title_hop(conn: sqlite3.Connection, graph: MentionGraph, titles: TitleIndex, seeds: dict[int, float],
              passage_mask: np.ndarray, entity_mask: np.ndarray) -> list[TitleHop]:
    """The passages whose record's title is an entity that a seed passage mentions (see the
    module doc), best first (score, then passage index).  ``seeds``: passage pk -> weight."""
    W, T = graph.W, titles.passages
    score: dict[int, float] = {}
    via: dict[int, dict[int, float]] = {}
    for pk, w in seeds.items():
        i = graph.passage_at(pk)
        if i is None or not passage_mask[i]:
            continue
        own = titles.of_passage[i]
        for e in W.indices[W.indptr[i]:W.indptr[i + 1]].tolist():
            if e == own or not entity_mask[e] or T.indptr[e] == T.indptr[e + 1]:
                continue    # the hit's own article's title, a masked entity, no article titled so
            last = -2
            for q in T.indices[T.indptr[e]:T.indptr[e + 1]].tolist():
                lead, last = q != last + 1, q      # a record's passages hold consecutive indices
                if lead and q != i and passage_mask[q]:
                    score[q] = score.get(q, 0.0) + w
                    v = via.setdefault(q, {})
                    v[e] = v.get(e, 0.0) + w
    if not score:
        return []
    names = _names(conn, sorted({int(graph.entity_pks[e]) for v in via.values() for e in v}))
    out = []
    for q, sc in score.items():
        ranked = sorted(via[q].items(), key=lambda t: (-t[1], t[0]))
        out.append(TitleHop(q, sc, tuple((*names[int(graph.entity_pks[e])], w) for e, w in ranked)))
    out.sort(key=lambda h: (-h.score, h.index))
    return out


def _names(conn: sqlite3.Connection, pks: Sequence[int]) -> dict[int, tuple[str, str]]:
    out: dict[int, tuple[str, str]] = {}
    for s in range(0, len(pks), _CHUNK):
        chunk = list(pks[s:s + _CHUNK])
        out.update((int(pk), (key, name)) for pk, key, name in conn.execute(
            f"SELECT pk, key, name FROM entities WHERE pk IN ({','.join('?' * len(chunk))})", chunk))
    return out
