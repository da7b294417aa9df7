"""Frozen copy of memo.text.entities as of 8f2b410 (before the ingest speed-up of issue
16.4): the oracle the differential test compares the fast extractor with.  Not imported
by memo; do not edit (a change in the extractor's answers must be a deliberate one,
made in memo/text/entities.py and in this oracle together)."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass

from memo.text.fts_query import STOP_WORDS

KINDS: tuple[str, ...] = ("name", "identifier", "handle", "tag", "wiki", "speaker", "explicit", "fact")
MAX_KEY_CHARS = 120         # longer "names" are sentences in title case, not entities

_MONTHS_DAYS = frozenset("""
january february march april may june july august september october november december
monday tuesday wednesday thursday friday saturday sunday
""".split())
# Words that start sentences without naming anything.
COMMON_WORDS: frozenset[str] = STOP_WORDS | _MONTHS_DAYS | frozenset("""
yes no yeah yep nope ok okay oh ah hey hi hello wow thanks thank sorry please well also
yesterday today tomorrow tonight sure great good nice cool awesome totally really actually
anyway maybe perhaps just so still even though although however then now there here
let lets let's i'm i've i'll i'd it's that's what's how's congrats congratulations haha lol
absolutely definitely exactly right true glad love amazing wonderful sounds speaking look
one two three first last next another every many much some any these those this that
""".split())
_JOINERS = frozenset({"of", "the", "de", "van", "von", "da", "del", "la", "le", "du"})
_LEADING = frozenset({"the", "a", "an", "my", "our", "your", "his", "her", "their", "its", "this", "that"})

_WORD = re.compile(r"[^\W\d_][\w'’\-]*", re.UNICODE)
_SENTENCE_END = re.compile(r"[.!?:;\n\"“”(\[]\s*$")
_HANDLE = re.compile(r"(?<![\w@])@([^\W_][\w.\-]*[^\W_]|[^\W_])", re.UNICODE)
_TAG = re.compile(r"(?<![\w&#])#([^\W\d_][\w\-]*)", re.UNICODE)
_WIKI = re.compile(r"\[\[([^\]\|#\n]{1,200})(?:[|#][^\]\n]*)?\]\]")
# Hyphenated plain words ("well-being", "Self-care") and abbreviations ("e.g") are words, not identifiers.
_PLAIN_COMPOUND = re.compile(r"[A-Za-z][a-z]*(?:['\-][A-Za-z][a-z]*)+|(?:[A-Za-z]\.){1,3}[A-Za-z]?")
# Dotted words are identifiers unless a run-on sentence ("airport.The"): as memo.text.entities.
_RUN_ON = re.compile(r"[A-Za-z][a-z]*\.([A-Z][a-z]*)")


def _run_on(tok: str) -> bool:
    m = _RUN_ON.fullmatch(tok)
    return m is not None and m.group(1).casefold() in COMMON_WORDS


_IDENT = re.compile(r"\w+(?:[\-./:@#+]+\w+)*", re.UNICODE)


def looks_like_identifier(query: str) -> bool:
    """memo.text.identifiers.looks_like_identifier as of 8f2b410."""
    for raw in query.split():
        tok = raw.strip("\"'`()[]{}<>,;!?")
        if re.search(r"\w[_\-./:@#+]+\w", tok):
            return True
        if re.search(r"[A-Za-z]\d|\d[A-Za-z]", tok) and len(tok) > 2:
            return True
        if re.fullmatch(r"[a-z]+[A-Z]\w*|[A-Z][a-z]+[A-Z]\w*", tok):
            return True
    return False


@dataclass(frozen=True, slots=True)
class EntityMention:
    key: str        # case-folded identity
    name: str       # display form (first seen)
    kind: str       # one of KINDS (the first kind it was seen as)
    count: int      # occurrences in the text (speaker / explicit / fact count once)


def entity_key(name: str) -> str:
    """The one normal form of an entity name (the identity in ``entities.key``)."""
    text = unicodedata.normalize("NFKC", str(name)).casefold()
    text = " ".join(text.split())
    return text.strip(" \t.,;:!?\"'`()[]{}<>’‘“”")


def aliases(key: str) -> tuple[str, ...]:
    """Case-folded forms a query may name the entity by."""
    out = [key]
    if "-" in key:
        out.append(" ".join(key.replace("-", " ").split()))
    return tuple(dict.fromkeys(a for a in out if a))


class _Bag:
    __slots__ = ("items",)

    def __init__(self) -> None:
        self.items: dict[str, list] = {}

    def add(self, name: str, kind: str, count: int = 1) -> None:
        name = name.strip(" \t.,;:!?\"'`()[]{}<>’‘“”")
        key = entity_key(name)
        if not key or len(key) > MAX_KEY_CHARS or not any(ch.isalpha() for ch in key):
            return
        item = self.items.get(key)
        if item is None:
            self.items[key] = [name, kind, count]
        else:
            item[2] += count

    def result(self) -> list[EntityMention]:
        return [EntityMention(k, v[0], v[1], v[2]) for k, v in self.items.items()]


def _names(text: str, bag: _Bag) -> None:
    """Runs of capitalised words (see the module docstring)."""
    run: list[tuple[str, bool]] = []     # (word, sentence-initial)
    pending: list[str] = []              # joiners waiting for the next capitalised word
    prev_end = 0

    def flush() -> None:
        words = [w for w, _ in run]
        while words and words[0].casefold() in _LEADING:
            words.pop(0)
            run.pop(0)
        if not words:
            run.clear()
            return
        if len(words) == 1:
            w = words[0].rstrip("'’").removesuffix("'s").removesuffix("’s")
            low = w.casefold()
            if low in COMMON_WORDS or low == "i" or low.startswith("i'") or low.startswith("i’"):
                run.clear()
                return
            if run[0][1] and low in STOP_WORDS:
                run.clear()
                return
            bag.add(w, "name")
        else:
            last = words[-1]
            words[-1] = last.removesuffix("'s").removesuffix("’s")
            bag.add(" ".join(words), "name")
        run.clear()

    for m in _WORD.finditer(text):
        word = m.group(0).strip("-'’")
        if not word:
            continue
        gap = text[prev_end:m.start()]
        initial = prev_end == 0 or bool(_SENTENCE_END.search(text[max(0, m.start() - 3):m.start()])) \
            or bool(re.search(r"[.!?:;\n]", gap))
        prev_end = m.end()
        low = word.casefold()
        capital = word[0].isupper() and low not in _MONTHS_DAYS
        broken = bool(re.search(r"[.!?:;,\n()\[\]\"“”]", gap))
        if run and (broken or initial):
            flush()
            pending.clear()
        if capital:
            if run and pending:
                run.extend((p, False) for p in pending)
            pending.clear()
            run.append((word, initial))
        elif run and low in _JOINERS and len(pending) < 2 and not broken:
            pending.append(word)
        else:
            if run:
                flush()
            pending.clear()
    if run:
        flush()


def _identifiers(text: str, bag: _Bag) -> str:
    """Add identifier tokens; return the text with them blanked out (for ``_names``)."""
    out, last = [], 0
    for m in _IDENT.finditer(text):
        tok = m.group(0)
        if len(tok) < 3 or not any(ch.isalpha() for ch in tok):
            continue
        if not looks_like_identifier(tok) or _PLAIN_COMPOUND.fullmatch(tok) or _run_on(tok):
            continue
        bag.add(tok, "identifier")
        out.append(text[last:m.start()] + " ; ")
        last = m.end()
    return "".join(out) + text[last:] if out else text


def _blank(pattern: re.Pattern[str], text: str, bag: _Bag, kind: str) -> str:
    """Add every match of ``pattern`` (group 1) as ``kind``; blank the matches out so
    the later extractors do not count them again."""
    def sub(m: re.Match[str]) -> str:
        bag.add(m.group(1), kind)
        return " ; "
    return pattern.sub(sub, text)


def extract(text: str, *, speaker: str | None = None, explicit: Iterable[str] = (),
            fact_terms: Iterable[str] = ()) -> list[EntityMention]:
    """Entities ``text`` mentions (order of first appearance; speaker, explicit and fact
    terms first)."""
    bag = _Bag()
    if speaker and speaker.strip():
        bag.add(speaker, "speaker")
    for name in explicit:
        if isinstance(name, str) and name.strip():
            bag.add(name, "explicit")
    for name in fact_terms:
        if isinstance(name, str) and name.strip():
            bag.add(name, "fact")
    body = text or ""
    body = _blank(_WIKI, body, bag, "wiki")
    body = _blank(_HANDLE, body, bag, "handle")
    body = _blank(_TAG, body, bag, "tag")
    body = _identifiers(body, bag)
    _names(body, bag)
    return bag.result()
