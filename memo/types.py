"""The search vocabulary shared by the store, the pipeline and the skins: record kinds, arm
names, modes, the scope and the search fields (frozen dataclasses).  What memo stores
(records, passages, facts and their drafts) is in ``memo.stored``."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

Kind = Literal["note", "conversation", "doc", "code"]
KINDS: tuple[str, ...] = ("note", "conversation", "doc", "code")
# Kinds split into one passage per turn (memo.ingest.split): each passage is an utterance.
# Every other kind's passages are pieces of sections (a long section is cut by length).
TURN_KINDS: tuple[str, ...] = ("conversation",)

# Search vocabulary: the lowest layer owns it, so profiles (memo.profile), the pipeline
# (memo.retrieve) and the skins all read the same names without importing each other.
# ``memo.retrieve.arms.base`` and ``memo.retrieve.types`` re-export them.
ArmName = Literal["keyword", "exact", "semantic", "fact", "entity", "graph"]
ARM_NAMES: tuple[str, ...] = ("semantic", "keyword", "exact", "fact", "entity", "graph")
Mode = Literal["auto", "keyword", "exact", "semantic"]
MODES: tuple[str, ...] = ("auto", "keyword", "exact", "semantic")
# What each mode searches with (the CLI's --mode help and MCP's ``mode`` description).
MODE_HELP = ("auto: every arm the query calls for, fused (the default); keyword: the words (BM25); "
             "exact: identifiers and phrases as written; semantic: the meaning (the embedding model).")


@dataclass(frozen=True, slots=True)
class Scope:
    """Scope filter fields (seed §1).  Empty tuple / None = no constraint on that field.

    ``as_of`` replaces the live filter by "recorded on or before T and not superseded
    before T"; forgotten records never come back.
    """

    namespaces: tuple[str, ...] = ()
    kinds: tuple[str, ...] = ()
    sources: tuple[str, ...] = ()
    library: str | None = None
    version: str | None = None
    tags: tuple[str, ...] = ()          # a record must carry every listed tag
    date_from: str | None = None        # on event_at (else recorded_at), inclusive
    date_to: str | None = None          # inclusive; a bare date covers the whole day
    min_trust: float | None = None
    as_of: str | None = None


# --- search fields: defined once -------------------------------------------------------------
# Every surface derives its search parameters from SEARCH_FIELDS: the CLI options of
# ``memo search`` (memo/cli/search_cmds.py), the ``memory_search`` MCP tool's input schema
# (memo/serve/mcp_server.py), the web API's query parameters (memo/serve/web_input.py) and the keyword
# arguments of ``memo.search`` and ``MemoTools.search``.  A new scope field is one Scope
# attribute plus one entry here.  (mode, profile, limit, max_tokens and explain /
# response_format differ per surface on purpose and are spelled out there.)
@dataclass(frozen=True, slots=True)
class SearchField:
    name: str                       # Scope attribute; memo.search / MemoTools / MCP argument name
    type: type                      # the value's (each item's, when multiple) type: str or float
    help: str                       # one line, shown by every surface
    cli: tuple[str, ...]            # CLI flags, long first ("--namespace", "-n")
    cli_param: str                  # the CLI option's Python name (its JSON error/field name)
    web: str                        # the web API query parameter
    multiple: bool = False          # a list: repeat the CLI flag / web parameter
    scope: bool = True              # a Scope field (False: a request field, e.g. now)
    iso_time: bool = False          # an ISO-8601 date or date-time
    choices: tuple[str, ...] = ()   # allowed values (each item)
    bounds: tuple[float, float] | None = None   # inclusive range of a number


SEARCH_FIELDS: tuple[SearchField, ...] = (
    SearchField("namespaces", str, "Only these namespaces (separate collections); any of.",
                ("--namespace", "-n"), "namespace", "namespace", multiple=True),
    SearchField("kinds", str, "Only these kinds: note, conversation, doc, code; any of.",
                ("--kind", "-k"), "kind", "kind", multiple=True, choices=KINDS),
    SearchField("sources", str, "Only records from these sources; any of.",
                ("--source",), "source", "source", multiple=True),
    SearchField("library", str, "Only this library (docs and code).", ("--library",), "library", "library"),
    SearchField("version", str, "Only this library version.", ("--version",), "version", "version"),
    SearchField("tags", str, "Records carrying every one of these tags.",
                ("--tag", "-t"), "tag", "tags", multiple=True),
    SearchField("date_from", str, "Event date (else recorded date) on or after this ISO-8601 date/time "
                "(a month 2025-11 or a year 2025: from its first day).",
                ("--from",), "date_from", "from", iso_time=True),
    SearchField("date_to", str, "Event date (else recorded date) on or before this; a bare date includes the "
                "day, a month or a year all of it.",
                ("--to",), "date_to", "to", iso_time=True),
    SearchField("min_trust", float, "Only records with trust >= this (0..1).",
                ("--min-trust",), "min_trust", "min_trust", bounds=(0.0, 1.0)),
    SearchField("as_of", str, "Search the knowledge base as it was at this ISO-8601 time.",
                ("--as-of",), "as_of", "as_of", iso_time=True),
    SearchField("now", str, "Pin the current time for recency and ages (ISO-8601; default: the clock), "
                "so every surface gives identical numbers.", ("--now",), "now", "now", scope=False,
                iso_time=True),
)
SCOPE_FIELDS: tuple[SearchField, ...] = tuple(f for f in SEARCH_FIELDS if f.scope)
FIELD_HELP: dict[str, str] = {f.name: f.help for f in SEARCH_FIELDS}   # also ``memo list --from/--to``


def scope_from(values: Mapping[str, object]) -> Scope:
    """A Scope from SEARCH_FIELDS names (``namespaces=...``, ``min_trust=...``); missing or
    None = no constraint; a multiple field takes a list or one string.  Other keys (request
    fields such as ``now``) are ignored; the caller checks unknown names (``check_fields``)."""
    kwargs: dict[str, object] = {}
    for f in SCOPE_FIELDS:
        value = values.get(f.name)
        if value is None:
            continue
        if f.multiple:
            value = (value,) if isinstance(value, str) else tuple(value)  # type: ignore[arg-type]
        kwargs[f.name] = value
    return Scope(**kwargs)  # type: ignore[arg-type]


PROFILE_ENV = "MEMO_PROFILE"


def default_profile() -> str:
    """The default search profile of every surface (CLI, memo.search, memo-mcp, memo web):
    ``$MEMO_PROFILE``, else ``zscore`` (z-score fusion: at or above its best single arm on
    every measured domain, where ``rrf`` falls below it on code and on LoCoMo; docs/eval.md)."""
    return os.environ.get(PROFILE_ENV) or "zscore"


def check_fields(values: Mapping[str, object], where: str) -> None:
    """TypeError for a keyword that is no search field (a typo must not widen a search)."""
    names = [f.name for f in SEARCH_FIELDS]
    unknown = sorted(set(values) - set(names))
    if unknown:
        import difflib

        near = [m for u in unknown for m in difflib.get_close_matches(u, names, n=1)]
        mean = f" (did you mean {', '.join(near)}?)" if near else ""
        raise TypeError(f"{where} got unexpected keyword argument(s) {', '.join(unknown)}{mean}; "
                        f"search fields: {', '.join(names)}")


# Why a search returned nothing (memo.retrieve.empty decides which; SearchResponse.cause holds
# the key; docs/cli-json.md "Empty answers"): cause -> (reason, hint), ``{name}`` fields
# filled from the search.
NOT_FOUND_HINT = "not in the knowledge base: rephrase, widen the scope, or add the information"

# cause -> (reason, hint); ``{name}`` fields are filled from the search (``describe``).
EMPTY_CAUSES: dict[str, tuple[str, str]] = {
    "no_scope": (
        "no passage is in scope",
        "the scope filter leaves nothing to search: widen it (namespace, kind, source, library, version, "
        "tags, dates, min_trust, as_of) or add memories; `memo stats` lists the namespaces and kinds"),
    "model_unavailable": (
        "semantic mode needs the embedding model, which is unavailable: {why}",
        "`memo models check` says what is wrong (`memo models fetch` downloads the model); "
        "meanwhile search with mode auto or keyword"),
    "no_vectors": (
        "semantic mode needs the passages' vectors: {why}",
        "`memo backfill` embeds the stored passages (the model is ready; a server embeds new ones itself); "
        "meanwhile search with mode auto or keyword"),
    "no_searchable_word": (
        "the query has no word or identifier to search for ({why})",
        "search with words or identifiers; punctuation and operators alone match nothing"),
    "no_arm": (
        "no retrieval arm could run",
        "trace.arms says why each arm did not run"),
    "no_match": (
        "no passage matched the query",
        "rephrase with other words (or mode semantic to search by meaning), or widen the scope"),
    "abstained": (
        "all {candidates} candidates were only weakly similar (below semantic_floor {floor})",
        NOT_FOUND_HINT),
    "vectors_pending": (
        "all {candidates} candidates were only weakly similar, but {pending} of {in_scope} in-scope passages "
        "have no vector yet and were not compared by meaning",
        "`memo backfill` embeds them (a server embeds them within moments): search again then; mode keyword "
        "searches every passage now"),
    "budget": (
        "the best result needs {tokens} tokens, more than max_tokens {max_tokens}",
        "raise max_tokens (--max-tokens) to at least {tokens}, or narrow the search"),
    "dropped": (
        "every candidate was dropped",
        "trace.drops says at which stage and why"),
}
