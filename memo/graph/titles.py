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
the reciprocal of its rank in each arm, and returns the in-scope passages whose record's
title is an entity one of those hits mentions (walk masks applied: never a common entity,
nor a word only seen starting a sentence), never the hit's own article.  A passage's score
is the sum of the weights of the hits that point to it; it may be a passage no other arm
found (a new candidate, not only a re-rank).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from memo.graph.cache import MentionGraph
from memo.graph.csr import CSR
from memo.graph.sidecar import open_titles, titles_path, write_titles
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
    """Which entity each passage's record title is (built once per mention graph)."""

    of_passage: np.ndarray         # passage index -> entity index of its record's title, -1 = none
    passages: CSR                  # (entities, passages): 1 where the passage's record is titled so


def seed_weights(hit_lists: Sequence[Sequence[int]], n: int) -> dict[int, float]:
    """Passage pk -> sum over the lists of 1/rank for its rank <= ``n`` in each (pure)."""
    out: dict[int, float] = {}
    for pks in hit_lists:
        for rank, pk in enumerate(pks[:n], 1):
            out[pk] = out.get(pk, 0.0) + 1.0 / rank
    return out


def title_index(conn: sqlite3.Connection, graph: MentionGraph) -> TitleIndex:
    """Every graph passage's title entity: one read of the titled records' passages, one of
    the entities those titles name (callers cache it with the graph: ``conn_cache``).  A
    graph kept in a sidecar (``memo.graph.sidecar``) keeps its title index beside it: a new
    process maps it (3 s of a cold search at 1M passages when computed)."""
    path = titles_path(graph.db_path) if graph.db_path and graph.sidecar_edges else None
    of_passage = open_titles(conn, path, graph.epoch, graph.seq, len(graph.passage_pks)) if path else None
    if of_passage is None:
        of_passage = _of_passage(conn, graph)
        if path:
            try:
                write_titles(conn, path, graph.epoch, graph.seq, graph.edges, of_passage)
            except (OSError, ValueError):
                pass        # a read-only folder: the next process computes it again
    q = np.flatnonzero(of_passage >= 0)
    passages = CSR.from_edges(of_passage[q], q, (len(graph.entity_pks), len(graph.passage_pks)))
    return TitleIndex(of_passage, passages)


def _of_passage(conn: sqlite3.Connection, graph: MentionGraph) -> np.ndarray:
    rows = conn.execute("SELECT p.pk, r.title FROM passages p JOIN records r ON r.id = p.record_id "
                        "WHERE r.title IS NOT NULL").fetchall()
    at = graph.passage_indices(np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows)))
    keys: dict[int, str] = {}
    for i, (_, title) in zip(at.tolist(), rows, strict=True):
        if i >= 0:
            key = title_key(title)
            if key is not None:
                keys[i] = key
    wanted = sorted(set(keys.values()))
    entity_of: dict[str, int] = {}
    for s in range(0, len(wanted), _CHUNK):
        chunk = wanted[s:s + _CHUNK]
        for epk, key in conn.execute(f"SELECT pk, key FROM entities WHERE key IN ({','.join('?' * len(chunk))})",
                                     chunk):
            e = graph.entity_at(int(epk))
            if e is not None:
                entity_of[key] = e
    of_passage = np.full(len(graph.passage_pks), -1, dtype=np.int64)
    for q, key in keys.items():
        of_passage[q] = entity_of.get(key, -1)
    return of_passage


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
            for q in T.indices[T.indptr[e]:T.indptr[e + 1]].tolist():
                if q != i and passage_mask[q]:
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
