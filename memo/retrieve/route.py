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
3. **Entities that do not count** (recognised and listed in the trace with the rule that
   set them aside, but they name nothing in particular: they do not count for routing,
   score nothing in the entity arm and never seed a walk):

   * *common*: mentioned in more than ``entities.common_share`` of the in-scope passages,
     in a scope of at least ``entities.common_min_passages`` (a conversation's two
     speakers, when the search is scoped to its namespace);
   * *common word*: a name (kind ``name``: a capitalised word or phrase) that the corpus
     also writes as ordinary words: fewer than ``entities.name_share`` of the in-scope
     passages that hold the word or phrase (keyword index: any case, Porter stem) mention
     it as a name.  "Dicer", "Caroline", "New York" are names there; "Shipping" or
     "Embryonic Stem Cells" in a title are not (their lowercase forms are words of the
     corpus);
   * *frequent identifier*: an identifier (kind ``identifier``), or a name shaped like a
     technical term (``term_shaped``: an acronym in capitals, "DNA", or a word holding a
     digit or an inner hyphen, "E4", "N-cadherin"), mentioned in more than
     ``entities.identifier_share`` of the in-scope passages.  Identifiers always count for
     the exact arm; for routing only when rare;
   * *sentence-initial only*: a capitalised word the store has only ever seen starting a
     sentence (kind ``initial``, ``memo.text.entities``: "Unrelated note ..."): never
     written as a name, so it names nothing.

   Speakers, ``@handles``, ``#tags``, ``[[wiki]]`` links, explicit entities, fact
   subjects / objects and multi-word capitalised phrases are only subject to *common*.
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

from memo.retrieve.backend import backend_of
from memo.retrieve.scope import ScopeSQL, scope_stats
from memo.store.mentions import df_outside, entities_by_alias, scoped_df
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
    kind: str = "name"            # entities.kind (memo.text.entities.KINDS)
    ignored: str | None = None    # why it does not count although not common: "common word" | "frequent identifier"

    @property
    def counts(self) -> bool:
        """Counts for routing, scores in the entity arm, seeds a walk."""
        return not self.common and self.ignored is None

    def to_dict(self) -> dict[str, Any]:
        return {"key": self.key, "name": self.name, "span": self.span, "passages": self.df, "common": self.common,
                "kind": self.kind, "ignored": self.ignored}


@dataclass(frozen=True, slots=True)
class Route:
    fired: bool
    rule: str | None                    # "2+ entities" | "1 entity + relational cue" | None
    reason: str                         # the trace's words for it
    entities: tuple[QueryEntity, ...]   # every recognised entity, query order
    cue: str | None = None

    @property
    def distinctive(self) -> tuple[QueryEntity, ...]:
        return tuple(e for e in self.entities if e.counts)


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


def entity_kinds(conn: sqlite3.Connection, entity_pks: Sequence[int]) -> dict[int, str]:
    """entity pk -> kind (``entities.kind``: the kind it was first seen as)."""
    if not entity_pks:
        return {}
    marks = ",".join("?" * len(entity_pks))
    return {int(r[0]): str(r[1]) for r in conn.execute(
        f"SELECT pk, kind FROM entities WHERE pk IN ({marks})", list(entity_pks))}


def scoped_word_df(conn: sqlite3.Connection, word: str, scope_where: str, scope_params: Sequence[object]) -> int:
    """In-scope passages whose text or section holds ``word`` (a word or a phrase) in any
    case (the keyword index: unicode61 case folding, Porter stem): the corpus's use of the
    words, set against the passages that mention them as a name.  The keyword arm's impact
    index counts a one-token word when it matches the snapshot (through FTS5 the join reads
    every holder's passage and record: docs/results-log.md "Word counts for routing and
    keyword evidence")."""
    return backend_of(conn).word_df(conn, word, scope_where, scope_params)


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


def _label(e: QueryEntity) -> str:
    if e.common:
        return f"{e.key} (common)"
    if e.ignored:
        return f"{e.key} ({e.ignored})"
    return e.key


def coverage(words: Sequence[str], entities: Sequence[QueryEntity]) -> float:
    """Share of the query's content words (not ``COMMON_WORDS``) inside the spans of the
    entities that count (pure)."""
    content = [w for w in words if w not in COMMON_WORDS]
    if not content:
        return 0.0
    covered = sum(len(e.span.split()) for e in entities if e.counts)
    return min(1.0, covered / len(content))


def decide(entities: Sequence[QueryEntity], cue: str | None, share: float = 1.0, min_share: float = 0.0) -> Route:
    """The seed's rule over the recognised entities (pure); ``share`` = ``coverage``."""
    ents = tuple(entities)
    distinct = [e for e in ents if e.counts]
    names = ", ".join(_label(e) for e in ents)
    if distinct and share < min_share:
        return Route(False, None, f"not routed: the entities ({names}) are {share:.0%} of the query's words, "
                                  f"under {min_share:.0%}", ents, cue)
    if len(distinct) >= 2:
        return Route(True, "2+ entities", f"routed: 2+ entities ({names})", ents, cue)
    if len(distinct) == 1 and cue is not None:
        return Route(True, "1 entity + relational cue",
                     f"routed: 1 entity + relational cue {cue!r} ({names})", ents, cue)
    if len(distinct) == 1:
        return Route(False, None, f"not routed: 1 entity ({names}), no relational cue", ents, None)
    if ents:
        return Route(False, None, f"not routed: no entity counts ({names})", ents, cue)
    return Route(False, None, "not routed: the query names no known entity", ents, cue)


def ignored_because(kind: str, name: str, df: int, in_scope: int, word_df: int | None, *, name_share: float,
                    identifier_share: float) -> str | None:
    """Why a recognised, not common entity does not count (None: it counts; pure).
    ``word_df``: in-scope passages holding the word in any case (single-word names only)."""
    if kind == "initial":
        return "sentence-initial only"
    if kind == "name" and word_df is not None and df < name_share * word_df:
        return "common word"
    if (kind == "identifier" or (kind == "name" and term_shaped(name))) and df > identifier_share * in_scope:
        return "frequent identifier"
    return None


def term_shaped(name: str) -> bool:
    """A name shaped like a technical term rather than a proper name: an acronym in capitals
    ("DNA", "UK"), or a word holding a digit or an inner hyphen ("E4", "N-cadherin").
    Routing treats it as an identifier (it counts only when rare)."""
    letters = [ch for ch in name if ch.isalpha()]
    if any(ch.isdigit() for ch in name) or "-" in name.strip("-"):
        return True
    return len(letters) >= 2 and all(ch.isupper() for ch in letters)


def entity_df(conn: sqlite3.Connection, pks: Sequence[int], scope_where: str,
              scope_params: Sequence[object]) -> dict[int, int]:
    """entity pk -> in-scope passages mentioning it.  A scope that excludes few passages
    (``scope_stats``: the usual live filter) is counted from the mentions index minus
    the excluded ones; else by joining each mention with its passage and record."""
    stats = scope_stats(conn, ScopeSQL(scope_where or "1", tuple(scope_params)))
    if stats.excluded is not None:
        return df_outside(conn, pks, stats.excluded)
    return scoped_df(conn, pks, scope_where, scope_params)


def route(conn: sqlite3.Connection, query: str, scope_where: str, scope_params: Sequence[object],
          in_scope: int, *, max_words: int, common_share: float, common_min_passages: int,
          cues: Sequence[str], name_share: float = 1.0, identifier_share: float = 1.0,
          min_query_share: float = 0.0) -> Route:
    words = query_words(query)
    if not words:
        return decide((), None)
    known = entities_by_alias(conn, ngrams(words, max_words))
    pks = sorted({pk for hits in known.values() for pk, _, _ in hits})
    df = entity_df(conn, pks, scope_where, scope_params)
    known = {a: [h for h in hits if df.get(h[0], 0) > 0] for a, hits in known.items()}
    known = {a: hits for a, hits in known.items() if hits}
    matched = longest_matches(words, known, max_words)
    kinds = entity_kinds(conn, sorted({pk for _, hits in matched for pk, _, _ in hits}))
    seen: set[int] = set()
    found: list[QueryEntity] = []
    for span, hits in matched:
        for pk, key, name in hits:
            if pk in seen:
                continue
            seen.add(pk)
            kind = kinds.get(pk, "name")
            common = bool(is_common(df[pk], in_scope, common_share, common_min_passages))
            ignored = None
            if not common:
                word_df = None
                if kind == "name" and df[pk] < name_share * in_scope:
                    word_df = scoped_word_df(conn, key, scope_where, scope_params)
                ignored = ignored_because(kind, name, df[pk], in_scope, word_df, name_share=name_share,
                                          identifier_share=identifier_share)
            found.append(QueryEntity(pk, key, name, span, df[pk], common, kind, ignored))
    return decide(found, find_cue(words, cues), coverage(words, found), min_query_share)
