"""Request checks against the profile (before any SQL runs)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING, NamedTuple

from memo.errors import QuerySyntaxError, ValidationError
from memo.retrieve.scope import parse_when
from memo.retrieve.types import FORMATS, MODES, SearchRequest

if TYPE_CHECKING:
    from memo.profile import Profile


class Checked(NamedTuple):
    mode: str
    limit: int
    max_tokens: int
    explain: bool
    now: datetime


def check_request(request: SearchRequest, profile: Profile) -> Checked:
    if not isinstance(request.query, str) or not request.query.strip():
        raise QuerySyntaxError("the query is empty")
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
    return Checked(request.mode, limit, max_tokens, request.response_format == "explain", now)
