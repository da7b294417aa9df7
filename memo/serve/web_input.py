"""The web UI's input edge: HTTP query strings and JSON bodies -> typed values (pydantic).

Types only: the library checks values (a kind's name, a limit's range, a date's form) and
raises memo's own errors, so the web, the CLI and MCP refuse the same things the same way.
Every failure here is a ``ValidationError`` (400) with one line naming the field, or an
HTTP 413/415 for the body itself.

A JSON body is parsed with limits (issue 9): at most ``MAX_JSON_DEPTH`` (64) levels of
nesting (a 100,000-deep body would overflow the parser's stack), no lone surrogate escape
(``"\\ud800"``: not Unicode text; a pair such as ``"\\ud83d\\ude00"`` is fine), only finite
numbers (``NaN``, ``Infinity``, ``1e309``) and integers of at most 4,300 digits; each of
those is a 400, like invalid JSON.  The rules are the JSONL importer's
(``memo.text.json_value.json_problem``), so a record refused here is refused there too.
"""

from __future__ import annotations

import json
import math
from typing import Annotated, Any

import pydantic
from pydantic import BaseModel, BeforeValidator, ConfigDict, Field
from starlette.exceptions import HTTPException
from starlette.requests import Request

from memo.errors import ValidationError
from memo.text.json_value import MAX_JSON_DEPTH, json_problem
from memo.types import SEARCH_FIELDS, SearchField


def pydantic_message(where: str, exc: pydantic.ValidationError) -> str:
    parts = []
    for e in exc.errors():
        loc = ".".join(str(p) for p in e["loc"] if not isinstance(p, int)) or where
        got = repr(e.get("input"))
        parts.append(f"{loc}: {e['msg']} (got {got[:40]}{'…' if len(got) > 40 else ''})")
    return f"invalid {where}: " + "; ".join(parts)


class _SearchBase(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)


def _web_field(f: SearchField) -> tuple[Any, Any]:
    """A search field as a query parameter (alias = its web name: ``from``, ``kind``...)."""
    if f.multiple:
        return list[f.type], Field([], alias=f.web, description=f.help)  # type: ignore[name-defined]
    return f.type | None, Field(None, alias=f.web, description=f.help)


# The words a yes/no query parameter (explain) takes, any case: pydantic's lax bool, spelled
# out so that the page accepts the same words in its address (GET /api/form sends them).
FLAG_WORDS: dict[bool, tuple[str, ...]] = {True: ("1", "true", "t", "yes", "y", "on"),
                                           False: ("0", "false", "f", "no", "n", "off")}


def parse_flag(value: Any) -> Any:
    if isinstance(value, str):
        for flag, words in FLAG_WORDS.items():
            if value.lower() in words:
                return flag
        raise ValueError(f"must be one of {', '.join(FLAG_WORDS[True] + FLAG_WORDS[False])}")
    return value


Flag = Annotated[bool, BeforeValidator(parse_flag)]

# q, the search fields (memo.types.SEARCH_FIELDS, defined once), then the page's own options.
SearchParams = pydantic.create_model(  # type: ignore[call-overload]
    "SearchParams", __base__=_SearchBase,
    q=(str, ...),
    **{f.name: _web_field(f) for f in SEARCH_FIELDS},
    mode=(str, "auto"), profile=(str | None, None), limit=(int | None, None),
    max_tokens=(int | None, None), explain=(Flag, False))

_LIST_PARAMS = tuple(f.web for f in SEARCH_FIELDS if f.multiple)
SEARCH_KEYS = tuple(f.alias or n for n, f in SearchParams.model_fields.items())
_COMMA_LISTS = ("tags",)   # tag names are words: ?tags=a,b


def search_fields(p: Any) -> dict[str, Any]:
    """The search-field values of parsed parameters, by field name (MemoTools.search)."""
    return {f.name: getattr(p, f.name) for f in SEARCH_FIELDS}


def parse_search_params(request: Request) -> Any:
    raw: dict[str, Any] = {}
    for key in request.query_params.keys():
        values = request.query_params.getlist(key)
        if key not in SEARCH_KEYS:
            raise ValidationError(f"unknown parameter {key!r}; accepted: {', '.join(SEARCH_KEYS)}")
        if key in _LIST_PARAMS:
            # tags also take a comma list (?tags=a,b): tag names are words.
            raw[key] = [p.strip() for v in values for p in (v.split(",") if key in _COMMA_LISTS else [v]) if p.strip()]
        elif len(values) > 1:
            raise ValidationError(f"parameter {key!r} is given {len(values)} times; give it once")
        elif values[0] != "" or key == "q":   # an empty optional field (from a form) = not given
            raw[key] = values[0]
    try:
        return SearchParams.model_validate(raw)
    except pydantic.ValidationError as exc:
        raise ValidationError(pydantic_message("search parameters", exc)) from None


class AddBody(BaseModel):
    # strict: JSON types as sent ("1" is not a number); unknown fields are typos, refused.
    model_config = ConfigDict(extra="forbid", strict=True)
    text: str
    kind: str | None = None
    namespace: str | None = None
    title: str | None = None
    source: str | None = None
    library: str | None = None
    version: str | None = None
    tags: list[str] | None = None
    event_at: str | None = None
    trust: float | None = None
    author: str | None = None
    ext_id: str | None = None
    meta: dict[str, Any] | None = None
    wait: bool = False      # embed before answering (else `memo web`'s background embedder does it)


async def read_json_body(request: Request, max_bytes: int) -> Any:
    ctype = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if ctype != "application/json":
        # Also blocks HTML form posts, which can only send form or text types.
        raise HTTPException(415, f"Content-Type {ctype or 'none'!r} is not application/json")
    chunks, size = [], 0
    async for chunk in request.stream():   # counted as it arrives: chunked bodies have no length
        size += len(chunk)
        if size > max_bytes:
            raise HTTPException(413, f"request body is over {max_bytes} bytes")
        chunks.append(chunk)
    return parse_json(b"".join(chunks))


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"number {text[:40]} is out of range")
    return value


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def parse_json(data: bytes | str) -> Any:
    """A JSON document within memo's limits (depth, surrogates, finite numbers), else a
    ``ValidationError``."""
    try:
        value = json.loads(data, parse_float=_finite, parse_constant=_no_constant)
    except RecursionError:
        raise ValidationError(f"the body is JSON nested too deeply (more than {MAX_JSON_DEPTH} levels)") from None
    except ValueError as exc:      # JSONDecodeError, UnicodeDecodeError, numbers out of range
        reason = str(exc).splitlines()[0][:200] if str(exc) else type(exc).__name__
        raise ValidationError(f"the body is not valid JSON: {reason}") from None
    problem = json_problem(value)
    if problem:
        raise ValidationError(f"the body holds {problem}")
    return value


async def parse_add_body(request: Request, max_bytes: int) -> AddBody:
    try:
        return AddBody.model_validate(await read_json_body(request, max_bytes))
    except pydantic.ValidationError as exc:
        raise ValidationError(pydantic_message("memory", exc)) from None
