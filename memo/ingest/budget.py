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
costs 0.1-0.8 ms (it builds offsets, an ``Encoding``...): 27% of an index-only import.
So a text is counted by its whitespace-separated words instead, each word's count read
from a cache (``_WORD_PIECES``) or worked out once: by ``_wordpiece`` for a printable-ASCII
word (BERT's own steps in Python: a tokenizer call per new word was still ~15 us, and an
import meets tens of thousands of new words), by the tokenizer for any other.  The sum is
the tokenizer's count of the whole text exactly: BERT's normaliser works character by
character (it lowers case, strips accents, deletes control characters, turns whitespace
into spaces, puts spaces around CJK ideographs); its pre-tokeniser splits at whitespace
and makes every punctuation character a pre-token of its own; WordPiece reads each
pre-token alone.  Every character ``str.split`` splits at is whitespace to BERT too,
except control characters (\v \f \x1c-\x1f, and \x85 to be safe) the normaliser
deletes instead, which join the words around them: a text holding one of them (or a
lone surrogate) is counted by the tokenizer whole.  tests/unit/ingest/test_budget_fast.py
checks the counts against the tokenizer.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path

from memo.text.folding import has_surrogates, scrub_surrogates

WINDOW = 256          # word pieces all-MiniLM-L6-v2 reads (models.toml max_tokens)
SPECIAL = 2           # [CLS] and [SEP]
TOKENIZER = Path(__file__).resolve().parent.parent / "models" / "all-MiniLM-L6-v2" / "tokenizer.json"
_SPACE = re.compile(r"\s+")
# Whitespace to str.split, deleted by BERT's normaliser (module docstring): such text goes to the tokenizer whole.
_JOINING = re.compile("[\x0b\x0c\x1c-\x1f\x85]")
# Anything but printable ASCII, tab, newline and carriage return: such a word goes to the tokenizer.
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


@lru_cache(maxsize=1)
def _wordpiece_model() -> tuple[frozenset[str], str, int] | None:
    """(vocabulary, continuing-subword prefix, longest word) of a WordPiece tokenizer
    with BERT's normaliser and pre-tokeniser; None for any other (the tokenizer counts)."""
    tok = _tokenizer()
    if tok is None:
        return None
    import json

    spec = json.loads(tok.to_str())
    model, norm, pre = spec.get("model") or {}, spec.get("normalizer") or {}, spec.get("pre_tokenizer") or {}
    if (model.get("type") != "WordPiece" or norm.get("type") != "BertNormalizer" or not norm.get("lowercase")
            or pre.get("type") != "BertPreTokenizer"):
        return None
    return frozenset(model["vocab"]), model["continuing_subword_prefix"], int(model["max_input_chars_per_word"])


_PRE_TOKEN = re.compile(r"[a-z0-9]+|[^a-z0-9]")     # of a lowercased ASCII word: BERT's pre-tokens


def _wordpiece(word: str, model: tuple[frozenset[str], str, int]) -> int:
    """Word pieces of one whitespace-free printable-ASCII word, as the tokenizer counts
    them: lowercased, cut into runs of letters and digits and single other characters
    (BERT's punctuation: every other printable ASCII character), each run cut by
    WordPiece's greedy longest match; a run longer than the limit, or one with a part no
    vocabulary entry matches, is one ``[UNK]``."""
    vocab, prefix, longest = model
    n = 0
    for run in _PRE_TOKEN.findall(word.lower()):
        if len(run) == 1 or run in vocab or len(run) > longest:
            n += 1              # a punctuation mark is in the vocabulary or is [UNK]: one piece either way
            continue
        start, pieces = 0, 0
        while start < len(run):
            end = len(run)
            while end > start and ((prefix + run[start:end]) if start else run[start:end]) not in vocab:
                end -= 1
            if end == start:    # no piece matches: the whole run is [UNK]
                pieces = 1
                break
            pieces += 1
            start = end
        n += pieces
    return n


def clear_caches() -> None:
    """Forget the cached word counts.  A long-running server calls this after a large write
    (memo.serve.mcp_tools): the entries a 4.5 MB note leaves (~50,000 words) are small
    objects spread over the memory the write used, and kept it from going back to the OS
    (memo-mcp stayed ~110 MB larger instead of ~35 MB)."""
    _WORD_PIECES.clear()


def count_pieces(text: str, words: list[str] | None = None) -> int:
    """Word pieces of ``text`` without the special tokens (0 for blank text).  ``words``:
    ``text.split()`` when the caller has it already."""
    if not text or text.isspace():
        return 0
    tok = _tokenizer()
    if tok is None:
        return len(_SPACE.sub("", text))
    if _JOINING.search(text) or has_surrogates(text):
        return len(tok.encode(scrub_surrogates(text), add_special_tokens=False).ids)
    return _word_sum(tok, text.split() if words is None else words)


def _word_sum(tok, words: list[str]) -> int:  # noqa: ANN001 - tokenizers.Tokenizer
    """Word pieces of a text: the sum of its words' (module docstring).  The cached counts
    are read by ``map`` (no Python code per word); only new words are worked out."""
    counts = list(map(_WORD_PIECES.get, words))
    if None in counts:
        model = _wordpiece_model()
        for k, c in enumerate(counts):
            if c is None:
                word = words[k]
                if model and word.isascii() and not _NOT_PLAIN.search(word):
                    c = _wordpiece(word, model)
                else:
                    c = len(tok.encode(word, add_special_tokens=False).ids)
                if len(_WORD_PIECES) >= WORD_CACHE_MAX:
                    _WORD_PIECES.clear()
                _WORD_PIECES[word] = counts[k] = c
    return sum(counts)


def pieces_up_to(text: str, budget: int) -> int:
    """``count_pieces(text)`` when it may be at most ``budget``; ``budget + 1`` when the text
    has more words than that (every word is at least one piece), without tokenizing it: a
    whole 2 MB note is never encoded in one call just to learn that it does not fit."""
    words = text.split(None, budget + 1)
    if len(words) > budget:
        return budget + 1
    return count_pieces(text, words)      # under budget + 2 words: the split was a whole one


def count_many(texts: Sequence[str]) -> list[int]:
    """``count_pieces`` of each text (it was one ``encode_batch`` call; the word cache of
    ``count_pieces`` is cheaper than that now)."""
    return [count_pieces(t) for t in texts]


def passage_pieces(section: str, text: str) -> int:
    """Word pieces the model reads of a passage (``passage_text(section, text)``, with the
    special tokens): at most ``WINDOW`` for a passage the splitters made."""
    return count_pieces(section) + count_pieces(text) + SPECIAL
