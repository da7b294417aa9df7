"""Compile any user text into a safe FTS5 MATCH expression.

FTS5's MATCH argument is a query language (``AND OR NOT NEAR``, ``"phrases"``, ``*``,
``col:``, ``^``, ``-``); binding it as a parameter stops SQL injection but not FTS syntax
errors (``fts5: syntax error near "/"``, ``no such column: agent`` for ``multi-agent``:
spences10/ccrecall #23, smithersai/smithers #712).  So user text never reaches MATCH raw:

* keyword arm (``keyword_match``): the query's terms are the tokens ``passages_fts``'s
  own tokenizer makes of it (``memo.text.folding.unicode61_tokens``: SQLite tokenises the
  text, so ``multi-agent`` -> ``multi``, ``agent``; ``Straße`` -> ``straße``; ``ﬁnance``
  stays ``ﬁnance``; NFD ``café`` -> ``cafe``, exactly as the index folded the passage).
  A non-ASCII query also adds the tokens of its NFC, NFD, NFKC and NFKD forms (usually
  the same; they differ where unicode61 folds canonical equivalents differently, e.g.
  Greek ``ί`` vs ``ι`` + U+0301, or for compatibility characters), each after the
  literal token of the same position, so a word is found whichever of those forms the
  passage holds it in.  English stop words and what the tokenizer leaves of a
  contraction (``s`` of ``what's``, ``t`` of ``doesn't``) are dropped (fall back to all words if only
  stop words remain; kept inside an identifier the query writes, where ``once`` of
  ``emitter.once`` or ``from`` of ``Buffer.from`` is a name), each term is double-quoted (a quoted string is a phrase, never an
  operator) and the terms are OR'ed.
  OR, not AND: bm25 ranks documents with more (and rarer) terms first, and a long natural
  question rarely has every word in one passage.  Dropping stop words leaves the ranking
  as good and makes the query cheaper (fewer postings to score; docs/results-log.md
  "Keyword and exact query words").
* exact arm (``exact_match``): identifier tokens (``memo.text.identifiers``) of the
  query's identifier-shaped pieces (``exact_terms_of``), hex-encoded exactly as
  ``exact_fts`` stores them, quoted, OR'ed.

Length cap: queries longer than ``MAX_QUERY_CHARS`` (10,000; ``memo.text.limits``, the one
definition) characters are truncated to that length (at the last space before it, so no
word is cut in half) before compiling (no error: a pasted page still searches; the search
pipeline clips once before any arm and notes it in the trace), and at most ``MAX_TERMS``
(64) distinct terms are kept, in order of first appearance, so one query cannot make
FTS5 score hundreds of posting lists.  A query with no word at all (punctuation, symbols,
emoji only) raises ``QuerySyntaxError`` and never reaches SQLite.
"""

from __future__ import annotations

import re
import unicodedata
from itertools import zip_longest

from memo.errors import QuerySyntaxError
from memo.text.cjk import query_form
from memo.text.folding import scrub_surrogates, unicode61_tokens
from memo.text.identifiers import encode_token, identifier_tokens, looks_like_identifier
from memo.text.limits import MAX_QUERY_CHARS, clip_query

__all__ = ["CONTRACTION_PARTS", "MAX_QUERY_CHARS", "MAX_TERMS", "STOP_WORDS", "exact_match", "exact_terms_of",
           "keyword_match", "query_words"]

MAX_TERMS = 64
_FORMS = ("NFC", "NFD", "NFKC", "NFKD")

# A short English stop list (the SMART / Lucene intersection plus question words): words
# that carry no topic.  Kept small on purpose; a query of only stop words keeps them all.
STOP_WORDS: frozenset[str] = frozenset("""
a about above after again against all am an and any are as at be because been before being
below between both but by can could did do does doing down during each few for from further
had has have having he her here hers herself him himself his how i if in into is it its
itself just me more most my myself no nor not now of off on once only or other our ours
ourselves out over own same she should so some such than that the their theirs them
themselves then there these they this those through to too under until up very was we were
what when where which while who whom why will with would you your yours yourself yourselves
""".split())


# What the tokenizer leaves of an English contraction or possessive ("what's" -> what, s;
# "doesn't" -> doesn, t; "we'll" -> we, ll): not words of the topic.  "s" alone matched
# every possessive, so "what's the wifi password" found ten passages where "what is the
# wifi password" rightly found none.  Kept apart from STOP_WORDS, which entity extraction
# also reads (memo.text.entities): there "S" or "M" may be a name's part ("Model S").
CONTRACTION_PARTS: frozenset[str] = frozenset("""
s t d ll m re ve doesn didn isn wasn aren weren hasn haven hadn couldn wouldn shouldn
""".split())
_DROPPED = STOP_WORDS | CONTRACTION_PARTS


def _clip(query: str) -> str:
    if not isinstance(query, str):
        raise QuerySyntaxError("the query must be text")
    return clip_query(query)


def _terms(text: str) -> list[str]:
    """unicode61 tokens of ``text`` and (non-ASCII text only) of its four normal forms,
    each form's CJK runs as bigrams (``query_form``), interleaved by position so a word's
    variants follow it; duplicates removed.  Normalised before the bigrams, not after: a
    Hangul syllable typed decomposed (NFD: three jamo) is one character again in NFC,
    as the index holds it; bigrams of the jamo first would never compose back."""
    text = scrub_surrogates(text)
    forms = [text]
    if not text.isascii():
        forms += [unicodedata.normalize(f, text) for f in _FORMS]
    lists = [unicode61_tokens(query_form(f)) for f in dict.fromkeys(forms)]
    if len(lists) == 1:
        return list(dict.fromkeys(lists[0]))
    return list(dict.fromkeys(t for group in zip_longest(*lists) for t in group if t is not None))


def query_words(query: str) -> list[str]:
    """Distinct terms of ``query`` folded as ``passages_fts`` folds them (stop words
    dropped unless that empties it or they belong to an identifier), at most ``MAX_TERMS``."""
    # CJK runs as character bigrams, as passages_fts indexes them (memo.text.cjk).
    text = _clip(query)
    words = _terms(text)
    named = _identifier_words(text)
    kept = [w for w in words if w not in _DROPPED or w in named]
    return (kept or words)[:MAX_TERMS]


# Code's connectors (``a.b``, ``a_b``, ``f(``, ``a::b``, ``a#b``) or a command-line flag
# (``--no-verify``).  Not ``-`` or ``/`` inside words: ``out-of-date``, ``and/or``, ``I/O``
# are prose, and keeping their stop words only adds common terms.
_CODE_SHAPED = re.compile(r"^--?\w|\w[._:#(]\w|_")


def _identifier_words(text: str) -> frozenset[str]:
    """Words that are part of an identifier the query writes (``emitter.once``,
    ``Buffer.from()``, ``process.on('exit')``, ``ERR_MODULE_NOT_FOUND``, ``--no-verify``):
    there a stop word is an API's name, and dropping it left ``emitter`` alone to rank
    every emitter passage alike."""
    named: set[str] = set()
    for piece in text.split():
        if _CODE_SHAPED.search(piece):
            terms = _terms(piece)
            if any(len(t) > 2 for t in terms):   # not "i.e.", "e.g."
                named.update(terms)
    return frozenset(named)


def _quote(term: str) -> str:
    # Inside an FTS5 string a double quote is escaped by doubling it.  unicode61 tokens
    # hold none, but quoting stays correct for any input.
    return '"' + term.replace('"', '""') + '"'


def keyword_match(query: str) -> str:
    """MATCH expression for ``passages_fts``: quoted words OR'ed."""
    words = query_words(query)
    if not words:
        raise QuerySyntaxError("the query has no words to search for",
                               hint="type at least one word or number (punctuation, symbols and "
                                    "emoji are not indexed)")
    return " OR ".join(_quote(w) for w in words)


def exact_terms_of(query: str) -> list[str]:
    """The identifier tokens the exact arm looks up.

    Only the tokens of identifier-shaped pieces (``looks_like_identifier``: inner
    connectors, digits mixed with letters, CamelCase) when the query has any: in "why does
    net/http return ERR_CONN_RESET" the arm should look up ``net/http`` and
    ``err_conn_reset``, not "why" and "does" (every plain word would make the exact arm a
    second, unstemmed keyword arm, and OR'ing common words is slow: docs/results-log.md
    "Keyword and exact query words").
    Otherwise (mode exact on plain words) every token, stop words dropped unless that
    empties it.
    """
    text = _clip(query)
    shaped = [t for piece in text.split() if looks_like_identifier(piece) for t in identifier_tokens(piece)]
    tokens = shaped or identifier_tokens(text)
    if not shaped:
        tokens = [t for t in tokens if t not in STOP_WORDS] or tokens
    return list(dict.fromkeys(tokens))[:MAX_TERMS]


def exact_match(query: str) -> str:
    """MATCH expression for ``exact_fts``: hex-encoded identifier tokens OR'ed."""
    tokens = exact_terms_of(query)
    if not tokens:
        raise QuerySyntaxError("the query holds no identifier to look up",
                               hint="exact mode looks up identifiers such as net/http or ERR_CONN_RESET")
    return " OR ".join(_quote(encode_token(t)) for t in tokens)
