"""Tokens for the exact arm: identifiers kept whole.

``net/http``, ``ERR_CONN_RESET``, ``snake_case_name``, ``2.31.0``, ``path/to/file.py``,
``multi-agent``, ``POL-358`` each stay one token.  A token is a run of word characters
(letters, digits, ``_``) joined by connectors (``- . / : @ # +``); a connector at either end is dropped, so a
sentence-final full stop does not glue onto the word.  Tokens are case-folded.

FTS5 cannot be told "split on whitespace only", and unicode61's idea of a letter differs
from Python's; so each token is stored hex-encoded (``x`` + hex of its UTF-8 bytes) in a
table with the ``ascii`` tokenizer.  The query side encodes the same way, so a token is
found by its literal text whatever characters it holds (tobi/qmd #563 failed this).
"""

from __future__ import annotations

import re

_TOKEN = re.compile(r"\w+(?:[\-./:@#+]+\w+)*", re.UNICODE)


def identifier_tokens(text: str) -> list[str]:
    """Case-folded identifier tokens of ``text`` in order (duplicates kept)."""
    return [m.group(0).casefold() for m in _TOKEN.finditer(text)]


def encode_token(token: str) -> str:
    return "x" + token.encode("utf-8", "surrogatepass").hex()


def exact_terms(text: str) -> str:
    """The string stored in ``exact_fts.terms`` for ``text``.

    Speed (ingest runs this on every passage): an ASCII text is case-folded whole before
    tokenising (for ASCII, casefold is lower() and changes no token boundary; other text
    is folded token by token, as ``identifier_tokens`` does), and all tokens are
    hex-encoded in one call: joined by a space, whose byte 0x20 no token holds, encoded
    with a comma between bytes, so ",20," marks exactly the token breaks.  Same string
    as ``" ".join(encode_token(t) for t in identifier_tokens(text))``."""
    tokens = _TOKEN.findall(text.lower()) if text.isascii() else identifier_tokens(text)
    if not tokens:
        return ""
    hexed = " ".join(tokens).encode("utf-8", "surrogatepass").hex(",")
    return "x" + hexed.replace(",20,", " x").replace(",", "")


_INNER_CONNECTOR = re.compile(r"\w[_\-./:@#+]+\w")
_LETTER_DIGIT = re.compile(r"[A-Za-z]\d|\d[A-Za-z]")
_CAMEL = re.compile(r"[a-z]+[A-Z]\w*|[A-Z][a-z]+[A-Z]\w*")


def looks_like_identifier(query: str) -> bool:
    """auto mode routes a query to the exact arm when it holds a token with an inner
    connector, digits mixed with letters, or a CamelCase / UPPER_CASE shape."""
    for raw in query.split():
        tok = raw.strip("\"'`()[]{}<>,;!?")
        if _INNER_CONNECTOR.search(tok):
            return True
        if _LETTER_DIGIT.search(tok) and len(tok) > 2:
            return True
        if _CAMEL.fullmatch(tok):
            return True
    return False


# Code-like shapes natural language almost never has (one token is enough to route a
# question to the exact arm): snake_case / SCREAMING_CASE, C++/Rust paths (a::b), slash
# paths with letters (net/http), dotted names (process.nextTick, os.path.join), calls
# (require(id), setTimeout()), camelCase and PascalCase with an inner word (setImmediate,
# EventEmitter), dunder names (__dirname), command-line flags (--max-old-space-size),
# semantic versions (2.31.0), errno codes (ECONNREFUSED, ENOENT).  Not code-shaped on
# their own: gene and protein names (p53, IL-6, BRCA1, mRNA, mTOR, siRNA, TNF-alpha),
# which only route a query when they make up a third of its words.
_CODE_SHAPE = re.compile(
    r"[A-Za-z]\w*(?:_|::|/(?=[A-Za-z]))\w"                       # snake_case, a::b, net/http
    r"|^_+[A-Za-z]\w*$"                                           # __dirname, _private
    r"|^[A-Za-z_$][\w$]*[a-z][\w$]*(?:\.[A-Za-z_$][\w$]*[a-z][\w$]*)+(?:\(.*)?$"   # fs.readFile, os.path.join
    r"|^[a-z_$][\w.$]*\((?:[a-z_$][\w$]+)?\)$"                     # require(id), setTimeout()
    r"|^[a-z]{2,}[A-Z][a-z]\w*$"                                  # setImmediate, readFile
    r"|^[A-Z][a-z]{2,}(?:[A-Z][a-z]{2,})+\w*$"                    # EventEmitter, TypeError
    r"|^--[a-z][\w-]*"                                            # --watch, --max-old-space-size
    r"|^v?\d+\.\d+\.\d+"                                          # 2.31.0, v1.2.3
    r"|^E[A-Z]{4,}$"                                              # ECONNREFUSED, ENOENT, EACCES
    r"|^[A-Z0-9]+(?:_[A-Z0-9]+)+$")                               # ERR_CONN_RESET


def strip_word(word: str) -> str:
    """A query word without the quotes, brackets and sentence punctuation around it."""
    word = word.strip("\"'`[]{}<>,;!?")
    if word.endswith(".") or word.endswith(":"):
        word = word.rstrip(".:")
    if word.startswith("(") or (word.endswith(")") and "(" not in word):
        word = word.strip("()")
    return word


def code_shaped(word: str) -> bool:
    """One whitespace-separated word of a query has a code-like shape (``_CODE_SHAPE``)."""
    return bool(_CODE_SHAPE.search(strip_word(word)))


def query_looks_like_identifier(query: str, min_share: float = 1 / 3) -> bool:
    """Routing for the exact arm in auto mode: a question that names an identifier
    anywhere ("event loop blocking setImmediate vs process.nextTick", "why do I get
    ERR_HTTP_HEADERS_SENT") runs it.  Either one word has a code-like shape
    (``code_shaped``), or identifier-shaped words (``looks_like_identifier``: digits mixed
    with letters, inner hyphens...) make up at least ``min_share`` of the words ("ADAR1 IL-6";
    the profile's ``exact.min_share``, a third in base.toml).
    Why not every identifier-shaped word: a 15-word scientific claim that mentions "ADAR1"
    or "IL-6" is natural language; routing it to the exact arm double-counts the keyword
    arm's evidence and lowered SciFact's nDCG@10 (docs/results-log.md "Routing counts").
    """
    words = [w for w in query.split() if re.search(r"\w", w)]
    if any(code_shaped(w) for w in words):
        return True
    shaped = [w for w in words if looks_like_identifier(w)]
    return bool(shaped) and len(shaped) >= min_share * len(words) - 1e-9
