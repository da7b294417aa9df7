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
    return len(tok.encode(scrub_surrogates(text), add_special_tokens=False).ids)


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
    if tok is None or len(texts) < 2:
        return [count_pieces(t) for t in texts]
    encs = tok.encode_batch([scrub_surrogates(t) for t in texts], add_special_tokens=False)
    return [0 if not t or t.isspace() else len(e.ids) for t, e in zip(texts, encs, strict=True)]


def passage_pieces(section: str, text: str) -> int:
    """Word pieces the model reads of a passage (``passage_text(section, text)``, with the
    special tokens): at most ``WINDOW`` for a passage the splitters made."""
    return count_pieces(section) + count_pieces(text) + SPECIAL
