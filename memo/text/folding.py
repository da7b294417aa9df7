"""Fold query text exactly as the keyword index does, and make any Python ``str`` safe
to hand to SQLite or a tokenizer.

Why ask SQLite instead of reimplementing the rules
--------------------------------------------------
``passages_fts`` is ``tokenize='porter unicode61 remove_diacritics 2'``.  The keyword arm
finds a word only if the query yields the *same token* the index stored for that word.
Python's own text functions disagree with unicode61 in several ways, measured against
the FTS5 of this Python's ``sqlite3`` (3.40.1):

=====================  ======================  ==========================================
input                  unicode61 (the index)   Python
=====================  ======================  ==========================================
``Straße``             ``straße``              ``casefold()`` -> ``strasse`` (no match)
``ﬁnance`` (U+FB01)    ``ﬁnance``              ``casefold()``/NFKC -> ``finance``
``e`` + U+0301 (NFD)   ``e`` (mark dropped,    ``\\w`` does not match U+0301: the word
                       the word stays whole)   split in two (``caf``+``é``... -> 2 terms)
``Ⓐ`` (So), emoji     separator               separator (agree)
``x²``, ``①``          one token (``No``)      ``\\w`` matches (agree by luck)
``ǅ`` (titlecase)      ``ǆ``                   ``casefold()`` -> ``ǆ`` (agree)
=====================  ======================  ==========================================

unicode61 has its own tables (Unicode 6.1 categories ``L* N* Co`` are token characters;
combining marks are dropped inside a token when ``remove_diacritics`` is set; its own
case-fold and diacritic tables, no NFKC), while Python's ``unicodedata`` is a much newer
Unicode version.  Reproducing those tables in Python would drift on every character the
two versions classify differently.  So the query's terms come from SQLite itself: the
text is inserted into a private in-memory FTS5 table with the same tokenizer options
(minus ``porter``: MATCH stems the quoted term itself, and stemming twice is not
idempotent) and read back through ``fts5vocab`` in token order, inside a transaction that
is rolled back.  Cost: small next to the search itself (docs/results-log.md "Query
folding, date periods, the query cap"); one connection per thread (and per process, so a
forked eval worker never uses its parent's), results cached for repeated queries (eval replay).

Agreement is by construction: the same SQLite library tokenizes the passage at index time
and the query here.  ``tests/property/test_folding.py`` checks it for every Unicode form
(NFC, NFD, NFKC, NFKD) of words taken from passages.

Lone surrogates
---------------
A Python ``str`` may hold lone surrogates (U+D800..U+DFFF, e.g. from
``surrogateescape``-decoded bytes or a JSON ``"\\ud800"`` escape); SQLite bindings and the
``tokenizers`` library refuse them (``UnicodeEncodeError``, ``TypeError``).
``scrub_surrogates`` joins valid high/low pairs into the character they encode and
replaces every lone one with U+FFFD, which every tokenizer treats as a separator.
"""

from __future__ import annotations

import functools
import os
import re
import sqlite3
import threading

TOKENIZER = "unicode61 remove_diacritics 2"   # passages_fts minus porter (see above)
_SURROGATE = re.compile("[\ud800-\udfff]")


def has_surrogates(text: str) -> bool:
    return _SURROGATE.search(text) is not None


def scrub_surrogates(text: str) -> str:
    """``text`` with surrogate pairs joined and lone surrogates replaced by U+FFFD
    (returned unchanged, without copying, when it holds none)."""
    if not has_surrogates(text):
        return text
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")


class _Tokenizer(threading.local):
    conn: sqlite3.Connection | None = None
    pid: int = 0

    def get(self) -> sqlite3.Connection:
        if self.conn is None or self.pid != os.getpid():
            conn = sqlite3.connect(":memory:", isolation_level=None)
            # FTS5 cuts a token longer than its 32,768-byte limit at a byte, which can split
            # a character: such a term is not UTF-8.  Drop the broken tail (the index cuts
            # the same token the same way) instead of failing the search.
            conn.text_factory = lambda raw: raw.decode("utf-8", "ignore")
            conn.execute(f"CREATE VIRTUAL TABLE t USING fts5(x, tokenize='{TOKENIZER}')")
            conn.execute("CREATE VIRTUAL TABLE v USING fts5vocab(t, 'instance')")
            self.conn, self.pid = conn, os.getpid()
        return self.conn


_local = _Tokenizer()


@functools.lru_cache(maxsize=512)
def _tokens(text: str) -> tuple[str, ...]:
    conn = _local.get()
    conn.execute("BEGIN")
    try:
        conn.execute("INSERT INTO t(rowid, x) VALUES (1, ?)", (text,))
        return tuple(row[0] for row in conn.execute("SELECT term FROM v ORDER BY offset"))
    finally:
        conn.execute("ROLLBACK")


def unicode61_tokens(text: str) -> list[str]:
    """The tokens ``unicode61 remove_diacritics 2`` makes of ``text``, in order (duplicates
    kept): split, case-folded and diacritics removed exactly as ``passages_fts`` does
    before stemming."""
    if not text:
        return []
    return list(_tokens(scrub_surrogates(text)))
