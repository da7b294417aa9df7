"""Request checks against the profile (before any SQL runs).

The query is made safe here, once, for every arm: cut to ``MAX_QUERY_CHARS``
(``memo.text.limits``; the cut is noted in ``trace.notes``) and lone surrogates replaced by
U+FFFD (``memo.text.folding.scrub_surrogates``: neither SQLite nor the embedding
tokenizer accepts them).  Every other bad field raises a ``MemoError`` subclass
(``ValidationError``, ``QuerySyntaxError``), never a bare Python exception.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import NamedTuple

from memo.errors import QuerySyntaxError, ValidationError
from memo.profile import Profile
from memo.retrieve.scope import parse_when
from memo.retrieve.types import FORMATS, MODES, SearchRequest
from memo.text.cjk import has_cjk, query_form
from memo.text.folding import has_surrogates, scrub_surrogates
from memo.text.limits import MAX_QUERY_CHARS, clip_query


class Checked(NamedTuple):
    mode: str
    limit: int
    max_tokens: int
    explain: bool
    now: datetime
    query: str = ""                 # what the arms search: clipped, surrogates replaced
    notes: tuple[str, ...] = ()     # for trace.notes


def check_query(query: object) -> tuple[str, tuple[str, ...]]:
    """(the query the arms search, notes on what was changed)."""
    if not isinstance(query, str):
        raise QuerySyntaxError("the query must be text")
    notes: list[str] = []
    clipped = clip_query(query)
    if len(clipped) < len(query):
        notes.append(f"query cut from {len(query):,} to {len(clipped):,} characters "
                     f"(the cap is {MAX_QUERY_CHARS:,}); only the first part was searched")
    if has_surrogates(clipped):
        clipped = scrub_surrogates(clipped)
        notes.append("lone surrogate code points in the query were replaced by U+FFFD")
    if not clipped.strip():
        raise QuerySyntaxError("the query is empty", hint="give what to look for: a question or a few words")
    if has_cjk(clipped):
        # Say what the keyword arm looks up: a CJK run is not one word to it (memo.text.cjk).
        grams = [w for w in query_form(clipped).split() if has_cjk(w)]
        shown = " ".join(dict.fromkeys(grams[:16])) + (" …" if len(grams) > 16 else "")
        notes.append(f"Chinese/Japanese/Korean text is searched by keyword as character bigrams: {shown}")
    return clipped, tuple(notes)


def check_request(request: SearchRequest, profile: Profile) -> Checked:
    query, notes = check_query(request.query)
    if request.mode not in MODES:
        raise ValidationError(f"mode {request.mode!r} is not one of {', '.join(MODES)}")
    if request.response_format not in FORMATS:
        raise ValidationError(f"response_format {request.response_format!r} is not one of {', '.join(FORMATS)}")
    limit = profile.limit.default if request.limit is None else request.limit
    if isinstance(limit, bool) or not isinstance(limit, int) or not (1 <= limit <= profile.limit.max):
        raise ValidationError(f"limit {request.limit!r} must be an integer from 1 to {profile.limit.max}")
    max_tokens = profile.budget.max_tokens if request.max_tokens is None else request.max_tokens
    if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 1:
        raise ValidationError(f"max_tokens {request.max_tokens!r} must be a positive integer")
    now = parse_when(request.now, field="now") if request.now else datetime.now(UTC)
    return Checked(request.mode, limit, max_tokens, request.response_format == "explain", now,
                   query, notes)
