"""The embedding model's window, and how much of it a passage fills (in its word pieces).

A passage is embedded as ``section + "\\n\\n" + text`` (``memo.embed.model.passage_text``)
and all-MiniLM-L6-v2, the default model, reads at most ``WINDOW`` word pieces of it,
``[CLS]`` and ``[SEP]`` included: what lies past that is not embedded.  The splitters
(``memo.ingest.split_markdown``, ``split_text``) cut passages so that none is longer, and
count with the model's own WordPiece tokenizer (``memo/models/all-MiniLM-L6-v2``, shipped
in the package, so the split needs no model loaded and is the same everywhere).  BERT
tokenizers split words at whitespace first, so the pieces of two texts joined by
whitespace are the sum of each text's pieces: a passage's count is its section's plus its
text's plus ``SPECIAL``.

Without the ``tokenizers`` library the count falls back to a safe upper bound: the
non-space characters (every word piece covers at least one character).

Speed (issue 31.3): an import counts every paragraph, and one ``Tokenizer.encode`` call
costs ~0.3 ms (it builds offsets, an ``Encoding``...): 27% of an index-only import.  Text
made of printable ASCII, tab and newlines only is counted word by word instead, each
whitespace-separated word's count read from a cache (``_WORD_PIECES``) and encoded once.
That sum is the whole text's count exactly: for such text BERT's normaliser only lowers
case (character by character), its pre-tokeniser first splits at the same whitespace as
``str.split`` (the other ASCII whitespace, \v \f \x1c-\x1f, are control characters the
normaliser deletes, so they send a text down the tokenizer path), and WordPiece reads each
pre-token alone.  tests/unit/ingest/test_budget_fast.py checks it against the tokenizer.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path

from memo.text.folding import scrub_surrogates

WINDOW = 256          # word pieces all-MiniLM-L6-v2 reads (models.toml max_tokens)
SPECIAL = 2           # [CLS] and [SEP]
TOKENIZER = Path(__file__).resolve().parent.parent / "models" / "all-MiniLM-L6-v2" / "tokenizer.json"
_SPACE = re.compile(r"\s+")
# Anything but printable ASCII, tab, newline and carriage return: such text goes to the tokenizer whole.
_NOT_PLAIN = re.compile(r"[^\x20-\x7e\t\n\r]")
# Words cached at most: ~100 bytes each, so ~20 MB at the cap; a full cache starts afresh
# (an import of a million passages sees far more distinct words than it reuses).
WORD_CACHE_MAX = 200_000
_WORD_PIECES: dict[str, int] = {}


@lru_cache(maxsize=1)
def _tokenizer():  # -> tokenizers.Tokenizer | None
    try:
        from tokenizers import Tokenizer

        tok = Tokenizer.from_file(str(TOKENIZER))
    except Exception:           # no library or no file: the character bound below
        return None
    tok.no_truncation()
    tok.no_padding()
    return tok


def count_pieces(text: str) -> int:
    """Word pieces of ``text`` without the special tokens (0 for blank text)."""
    if not text or text.isspace():
        return 0
    tok = _tokenizer()
    if tok is None:
        return len(_SPACE.sub("", text))
    if text.isascii() and not _NOT_PLAIN.search(text):
        return _plain_pieces(tok, text)
    return len(tok.encode(scrub_surrogates(text), add_special_tokens=False).ids)


def _plain_pieces(tok, text: str) -> int:  # noqa: ANN001 - tokenizers.Tokenizer
    """Word pieces of printable-ASCII text: the sum of its words' (module docstring)."""
    cache = _WORD_PIECES
    n = 0
    for word in text.split():
        c = cache.get(word)
        if c is None:
            c = len(tok.encode(word, add_special_tokens=False).ids)
            if len(cache) >= WORD_CACHE_MAX:
                cache.clear()
            cache[word] = c
        n += c
    return n


def pieces_up_to(text: str, budget: int) -> int:
    """``count_pieces(text)`` when it may be at most ``budget``; ``budget + 1`` when the text
    has more words than that (every word is at least one piece), without tokenizing it: a
    whole 2 MB note is never encoded in one call just to learn that it does not fit."""
    if len(text.split(None, budget + 1)) > budget:
        return budget + 1
    return count_pieces(text)


def count_many(texts: Sequence[str]) -> list[int]:
    """``count_pieces`` of each text, in one call to the tokenizer."""
    tok = _tokenizer()
    if tok is None or len(texts) < 2 or all(t.isascii() and not _NOT_PLAIN.search(t) for t in texts):
        return [count_pieces(t) for t in texts]
    encs = tok.encode_batch([scrub_surrogates(t) for t in texts], add_special_tokens=False)
    return [0 if not t or t.isspace() else len(e.ids) for t, e in zip(texts, encs, strict=True)]


def passage_pieces(section: str, text: str) -> int:
    """Word pieces the model reads of a passage (``passage_text(section, text)``, with the
    special tokens): at most ``WINDOW`` for a passage the splitters made."""
    return count_pieces(section) + count_pieces(text) + SPECIAL
