"""Stage 4d, headings: a passage whose own heading names an identifier the query names
scores ``x (1 + boost)``.

Why: a user who types ``fs.readFile``, ``keepAliveTimeout`` or ``ERR_HTTP_HEADERS_SENT``
wants the section *about* it, yet in API docs the name is repeated in every section that
uses it (examples, cross-references, "see also" lines), and the defining section is often
short: bm25 and the embedding rank a neighbour that mentions the name three times above
the section headed by it.  A section path already says what each passage is about (a
markdown heading, a code symbol's qualified name), so a factor after fusion carries it,
like the speaker of a conversation turn (stage 4b).

Rules (all in this file, pure):

* the query's identifiers are its code-shaped words (``memo.text.identifiers.code_shaped``:
  dotted names, calls, camelCase, snake_case, SCREAMING_CASE, flags, errno codes), the
  same shapes that route a question to the exact arm, and only when they are at least
  ``heading.min_share`` of the query's words: a lookup ("fs.createReadStream options
  highWaterMark"), not a sentence that names a function in passing ("Like unquote(), but
  also replace plus signs", which asks for another function).  A one-word query is a
  lookup whatever its shape ("punycode", "scrypt").  Plain words and gene names in a
  sentence never count, so natural-language questions and scientific claims are untouched;
* a passage's heading is the last part of its section path (``a > b > c`` -> ``c``); its
  *name* is the identifier it starts with, after a label such as ``Class:``,
  ``Static method:``, ``Event:`` or ``new`` (``fs.readFile(path[, options], callback)`` ->
  ``fs.readFile``, ``UV_THREADPOOL_SIZE=size`` -> ``UV_THREADPOOL_SIZE``); case-folded;
* a heading names a query identifier when its name equals it or ends with ``.`` + it
  (``server.keepAliveTimeout`` for ``keepAliveTimeout``).  (Two finer rules, "a heading
  that goes on in words names nothing" and "an exact heading wins over dotted suffixes",
  were written after reading test misses; on the train splits of every documentation and
  code domain they change no figure, so they are gone: scripts/choose_heading_rules.py,
  docs/eval.md "The suite and the rule for the default");
* such a passage gets ``factor = 1 + boost``; others keep 1.0.  Only the heading's own
  passages: a sub-section ("fs.readFile > File descriptors") is about something else.
* ``boost`` 0, or a query naming no identifier, returns the list untouched.

``why.factors`` carries the factor with the heading's name as its label.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from memo.retrieve.rescore import NOTHING, Rescored, RescoreInput
from memo.retrieve.types import Candidate, Factor
from memo.text.identifiers import code_shaped, strip_word

SECTION_SEPARATOR = " > "
# A heading's label before its name ("Class: http.Server", "Static method: Buffer.from(x)",
# "new URL(input)"): one or two words and a colon, or "new ".
_LABEL = re.compile(r"^(?:[A-Za-z]+(?: [a-z]+)?: +|new +)")
_WORDISH = re.compile(r"\w")
_NAME = re.compile(r"-{0,2}[\w$][\w$.:/@#\-]*")


def name_of(heading: str) -> str:
    """The identifier a heading starts with, case-folded ("" when it starts with none):
    ``fs.readFile(path)`` -> ``fs.readfile``, ``--max-old-space-size=SIZE`` ->
    ``--max-old-space-size``."""
    text = _LABEL.sub("", heading.replace("`", "").strip(), count=1).strip("'\"")
    m = _NAME.match(text)
    return _folded(m) if m else ""


def _folded(m: re.Match[str]) -> str:
    """A matched name without trailing connectors, case-folded (headings and query words alike)."""
    return m.group(0).rstrip(".:-/").casefold()


def query_identifiers(query: str, min_share: float = 0.0) -> frozenset[str]:
    """The names of the query's code-shaped words, case-folded (``require(id)`` ->
    ``require``, ``[ERR_INVALID_ARG_TYPE]:`` -> ``err_invalid_arg_type``); none unless
    they are at least ``min_share`` of the query's words (a lookup, not a sentence that
    mentions a name in passing).  The word of a one-word query is a name whatever its shape."""
    words = [w for w in query.split() if _WORDISH.search(w)]
    shaped = words if len(words) == 1 else [w for w in words if code_shaped(w)]
    if not shaped or len(shaped) < min_share * len(words):
        return frozenset()
    return frozenset(_folded(m) for w in shaped if (m := _NAME.search(strip_word(w))))


def heading_name(section: str) -> str:
    """The name of a section path's own (last) heading; "" if it has none."""
    return name_of(section.rsplit(SECTION_SEPARATOR, 1)[-1]) if section else ""


def named_headings(headings: set[str], names: frozenset[str]) -> dict[str, str]:
    """heading name -> the query identifier it names: the heading is the identifier, or ends
    with ``.`` + it (``server.keepalivetimeout`` for ``keepalivetimeout``)."""
    out = {}
    for h in headings:
        if h in names:
            out[h] = h
            continue
        n = next((n for n in sorted(names) if h.endswith("." + n)), None)
        if n is not None:
            out[h] = n
    return out


class Heading:
    """Stage 4d: ``heading.boost``, ``heading.min_share``."""

    name = "heading"

    def rescore(self, cands: Sequence[Candidate], inp: RescoreInput) -> Rescored:
        cfg = inp.profile.heading
        if cfg.boost <= 0.0:
            return NOTHING
        names = query_identifiers(inp.query, cfg.min_share)
        if not names:
            return NOTHING
        heads = {pk: heading_name(m.section) for c in cands if (m := inp.meta.get(pk := c.pk)) is not None}
        named = named_headings({h for h in heads.values() if h}, names)
        if not named:
            return Rescored({}, tuple(sorted(names)))
        value = 1.0 + cfg.boost
        factors = {h: Factor(self.name, value, h) for h in named}
        given = {pk: factors[h] for pk, h in heads.items() if h in named}
        return Rescored(given, tuple(sorted(names)))


RESCORER = Heading()
