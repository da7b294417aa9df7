"""Query entities and the seed's routing rule for the entity and graph arms.

Seed: entity and graph run when "the query names 2+ known entities, or 1 with relational
phrasing".

1. **Query words**: whitespace-separated pieces of the query, NFKC + case-folded, with
   surrounding punctuation, a possessive ``'s`` and a leading ``@`` / ``#`` stripped
   (``memo.text.entities.entity_key``), at most ``MAX_TERMS`` (64) words.
2. **Query entities**: the longest matches of the words' n-grams (n <= ``entities.max_words``)
   against known aliases (``entity_aliases``), left to right, non-overlapping, keeping only
   entities that at least one *in-scope* passage mentions.  A single word that is a common
   English word (``memo.text.entities.COMMON_WORDS``) never matches.
3. **Common entities**: mentioned in more than ``entities.common_share`` of the in-scope
   passages, in a scope of at least ``entities.common_min_passages`` (a conversation's two
   speakers, when the search is scoped to its namespace).
   They are recognised and listed in the trace, but they name nothing in particular:
   they do not count for routing and never seed a walk.
4. **Rule** (``decide``, pure): 2+ distinctive entities -> fired ("2+ entities"); exactly 1
   and a relational cue (``entities.relational_cues``, whole words or phrases) -> fired
   ("1 entity + relational cue"); otherwise not, with the reason.

The decision is computed once per search (``ArmContext.memo["route"]``) and both arms
quote it as their trace reason.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from memo.store.mentions import entities_by_alias, scoped_df
from memo.text.entities import COMMON_WORDS, entity_key
from memo.text.fts_query import MAX_TERMS


@dataclass(frozen=True, slots=True)
class QueryEntity:
    pk: int
    key: str
    name: str
    span: str          # the query words it matched
    df: int            # in-scope passages that mention it
    common: bool       # df > common_share * in_scope

    def to_dict(self) -> dict[str, Any]:
        return {"key": self.key, "name": self.name, "span": self.span, "passages": self.df, "common": self.common}


@dataclass(frozen=True, slots=True)
class Route:
    fired: bool
    rule: str | None                    # "2+ entities" | "1 entity + relational cue" | None
    reason: str                         # the trace's words for it
    entities: tuple[QueryEntity, ...]   # every recognised entity, query order
    cue: str | None = None

    @property
    def distinctive(self) -> tuple[QueryEntity, ...]:
        return tuple(e for e in self.entities if not e.common)


def query_words(query: str) -> list[str]:
    out = []
    for raw in query.split():
        w = raw.strip(" \t.,;:!?\"'`()[]{}<>’‘“”")
        for suffix in ("'s", "’s"):
            if w.casefold().endswith(suffix):
                w = w[: -len(suffix)]
        w = entity_key(w.lstrip("@#"))
        if w:
            out.append(w)
        if len(out) >= MAX_TERMS:
            break
    return out


def ngrams(words: Sequence[str], max_words: int) -> list[str]:
    return [" ".join(words[i:i + n]) for i in range(len(words)) for n in range(1, max_words + 1)
            if i + n <= len(words)]


def longest_matches(words: Sequence[str], known: dict[str, list[tuple[int, str, str]]],
                    max_words: int) -> list[tuple[str, list[tuple[int, str, str]]]]:
    """Left to right, the longest n-gram with a known alias at each position (pure)."""
    out = []
    i = 0
    while i < len(words):
        for n in range(min(max_words, len(words) - i), 0, -1):
            gram = " ".join(words[i:i + n])
            if n == 1 and gram in COMMON_WORDS:
                continue
            if gram in known:
                out.append((gram, known[gram]))
                i += n
                break
        else:
            i += 1
    return out


def find_cue(words: Sequence[str], cues: Sequence[str]) -> str | None:
    joined = " " + " ".join(words) + " "
    for cue in cues:
        if f" {cue} " in joined:
            return cue
    return None


def is_common(df: Any, in_scope: int, common_share: float, common_min_passages: int) -> Any:
    """Mentioned in more than ``common_share`` of the in-scope passages, in a scope of at
    least ``common_min_passages`` (the one definition; the graph arm applies it to an array
    of counts)."""
    return (in_scope >= common_min_passages) & (df > common_share * in_scope)


def decide(entities: Sequence[QueryEntity], cue: str | None) -> Route:
    """The seed's rule over the recognised entities (pure)."""
    ents = tuple(entities)
    distinct = [e for e in ents if not e.common]
    names = ", ".join(f"{e.key}{' (common)' if e.common else ''}" for e in ents)
    if len(distinct) >= 2:
        return Route(True, "2+ entities", f"routed: 2+ entities ({names})", ents, cue)
    if len(distinct) == 1 and cue is not None:
        return Route(True, "1 entity + relational cue",
                     f"routed: 1 entity + relational cue {cue!r} ({names})", ents, cue)
    if len(distinct) == 1:
        return Route(False, None, f"not routed: 1 entity ({names}), no relational cue", ents, None)
    if ents:
        return Route(False, None, f"not routed: only common entities ({names})", ents, cue)
    return Route(False, None, "not routed: the query names no known entity", ents, cue)


def route(conn: sqlite3.Connection, query: str, scope_where: str, scope_params: Sequence[object],
          in_scope: int, *, max_words: int, common_share: float, common_min_passages: int,
          cues: Sequence[str]) -> Route:
    words = query_words(query)
    if not words:
        return decide((), None)
    known = entities_by_alias(conn, ngrams(words, max_words))
    pks = sorted({pk for hits in known.values() for pk, _, _ in hits})
    df = scoped_df(conn, pks, scope_where, scope_params)
    known = {a: [h for h in hits if df.get(h[0], 0) > 0] for a, hits in known.items()}
    known = {a: hits for a, hits in known.items() if hits}
    seen: set[int] = set()
    found: list[QueryEntity] = []
    for span, hits in longest_matches(words, known, max_words):
        for pk, key, name in hits:
            if pk in seen:
                continue
            seen.add(pk)
            found.append(QueryEntity(pk, key, name, span, df[pk], bool(is_common(df[pk], in_scope, common_share,
                                                                                 common_min_passages))))
    return decide(found, find_cue(words, cues))
