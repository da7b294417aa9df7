"""Split a long section into windows of about ``MAX_WORDS`` words that keep its header.

Why ~200 words: MiniLM truncates at 256 word pieces, and a passage much longer than that
would be embedded only in part; BM25 also favours passages of similar length.  Windows
end at sentence boundaries where possible, and a short tail is folded into the previous
window so no window is a stub.
"""

from __future__ import annotations

import re

from memo.stored import PassageDraft

MAX_WORDS = 200
_MIN_TAIL = 40
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


def _sentences(text: str) -> list[str]:
    return [s for s in _SENTENCE_END.split(text.strip()) if s]


def split_words(text: str, max_words: int = MAX_WORDS) -> list[str]:
    """Pack sentences into chunks of at most ``max_words`` words (a longer sentence is cut
    by words).  Whitespace inside a chunk is kept as written, except between sentences."""
    if len(text.split()) <= max_words:
        return [text.strip()] if text.strip() else []
    pieces: list[str] = []
    for sentence in _sentences(text):
        words = sentence.split()
        if len(words) <= max_words:
            pieces.append(sentence)
            continue
        pieces.extend(" ".join(words[i:i + max_words]) for i in range(0, len(words), max_words))
    chunks: list[list[str]] = [[]]
    counts = [0]
    for piece in pieces:
        n = len(piece.split())
        if counts[-1] and counts[-1] + n > max_words:
            chunks.append([])
            counts.append(0)
        chunks[-1].append(piece)
        counts[-1] += n
    if len(chunks) > 1 and counts[-1] < _MIN_TAIL:
        chunks[-2].extend(chunks.pop())
    return [" ".join(c) for c in chunks if c]


def windowed(passage: PassageDraft, max_words: int = MAX_WORDS) -> list[PassageDraft]:
    """``passage`` itself if short enough, else windows that repeat its section header."""
    chunks = split_words(passage.text, max_words)
    if len(chunks) <= 1:
        return [passage] if passage.text.strip() else []
    return [PassageDraft(text=c, section=passage.section, speaker=passage.speaker,
                         event_at=passage.event_at, ext_id=passage.ext_id) for c in chunks]
