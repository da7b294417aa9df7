"""Frozen copy of memo.text.entities as of 05fec91 (with the two helpers it imports,
``STOP_WORDS`` of memo.text.fts_query and ``looks_like_identifier`` of
memo.text.identifiers, copied in), made before the extraction speed-up of issues 29.5 and
31.3.  It exists only to hold that rewrite to the old behaviour: the differential test
(test_extract_differential.py) asserts the fast extractor returns exactly what this one
returns (entities, names, kinds, counts, order; record context, aliases, title keys).
Not imported by memo; do not edit (a change in the extractor's answers must be a
deliberate one, made in memo/text/entities.py and here together, or by dropping this
oracle)."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Container, Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache

# memo.text.fts_query.STOP_WORDS as of 05fec91
STOP_WORDS: frozenset[str] = frozenset("""
a about above after again against all am an and any are as at be because been before being
below between both but by can could did do does doing down during each few for from further
had has have having he her here hers herself him himself his how i if in into is it its
itself just me more most my myself no nor not now of off on once only or other our ours
ourselves out over own same she should so some such than that the their theirs them
themselves then there these they this those through to too under until up very was we were
what when where which while who whom why will with would you your yours yourself yourselves
""".split())

# memo.text.identifiers.looks_like_identifier as of 05fec91
_INNER_CONNECTOR = re.compile(r"\w[_\-./:@#+]+\w")
_LETTER_DIGIT = re.compile(r"[A-Za-z]\d|\d[A-Za-z]")
_CAMEL = re.compile(r"[a-z]+[A-Z]\w*|[A-Z][a-z]+[A-Z]\w*")


def looks_like_identifier(query: str) -> bool:
    for raw in query.split():
        tok = raw.strip("\"'`()[]{}<>,;!?")
        if _INNER_CONNECTOR.search(tok):
            return True
        if _LETTER_DIGIT.search(tok) and len(tok) > 2:
            return True
        if _CAMEL.fullmatch(tok):
            return True
    return False


HEADING_SEP = " > "          # memo.ingest.markdown_parse.HEADING_SEP (a heading path)
KINDS: tuple[str, ...] = ("name", "initial", "identifier", "handle", "tag", "wiki", "speaker", "explicit", "fact")
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
_INITIAL_GAP = re.compile(r"[.!?:;\n]")              # a gap that starts a sentence
_BROKEN_GAP = re.compile(r"[.!?:;,\n()\[\]\"“”]")    # a gap that ends a run
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
_IDENT_SPLIT = re.compile(f"({_IDENT.pattern})", re.UNICODE)    # re.split keeps the tokens
_WORD_SPLIT = re.compile(f"({_WORD.pattern})", re.UNICODE)     # re.split keeps the words


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


Run = tuple[tuple[str, ...], bool]      # (the words of a run of capitalised words, starts a sentence)


def _names(text: str) -> list[Run]:
    """Runs of capitalised words (see the module docstring), leading function words dropped,
    in order; each with whether its first word starts a sentence.  Which runs name
    something is ``_decide``'s business (it needs the record's context).

    Speed (issue 16.4, ingest): the text is cut into words and the gaps before them in one
    ``re.split``; while no run is open, a word that does not start with a capital changes
    nothing, so the loop jumps from one capitalised word to the next and only looks at the
    words that can open, extend or close a run.  The answers are those of the word-by-word
    loop (tests/unit/entities/test_extract_fast.py compares them with the frozen copy,
    entities_v1.py)."""
    parts = _WORD_SPLIT.split(text)
    words = parts[1::2]                  # every _WORD match, in order
    gaps = parts[0::2]                   # gaps[i]: the text between word i - 1 and word i
    caps = [i for i, w in enumerate(words) if w[0].isupper()]
    run: list[tuple[str, bool]] = []     # (word, sentence-initial)
    pending: list[str] = []              # joiners waiting for the next capitalised word
    out: list[Run] = []

    def flush() -> None:
        while run and run[0][0].casefold() in _LEADING:
            run.pop(0)
        if run:
            out.append((tuple(w for w, _ in run), run[0][1]))
        run.clear()

    n, k, i = len(words), 0, 0
    while i < n:
        if not run:                      # no run, so skip to the next capitalised word
            while k < len(caps) and caps[k] < i:
                k += 1
            if k == len(caps):
                break
            i = caps[k]
        word = words[i].strip("-'’")     # never empty: _WORD starts with a letter
        gap = gaps[i]
        # The three characters before the word: any in the previous word are word
        # characters, which _SENTENCE_END (punctuation, then only spaces) cannot end on.
        initial = i == 0 or bool(_SENTENCE_END.search(gap[-3:])) or bool(_INITIAL_GAP.search(gap))
        low = word.casefold()
        capital = word[0].isupper() and low not in _MONTHS_DAYS
        broken = bool(_BROKEN_GAP.search(gap))
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
        i += 1
    if run:
        flush()
    return out


def _single(word: str) -> str:
    return word.rstrip("'’").removesuffix("'s").removesuffix("’s")


@dataclass(frozen=True, slots=True)
class Context:
    """What a record says about its own names (``record_context``): the words it writes
    capitalised where no sentence starts (or as its title, speakers, multi-word names), and
    the surnames that stand for one multi-word name of the record."""

    capitalised: Container[str]          # case-folded single words
    surnames: Mapping[str, str]          # case-folded last word -> the one full name (display) it stands for


def record_context(runs: Iterable[list[Run]], *, title: str | None = None, speakers: Iterable[str] = ()) -> Context:
    """The context of a record from the runs of its passages (``_names``).

    * ``capitalised``: a word written capitalised inside a sentence, inside a multi-word
      name, in the title or a speaker's name.  A sentence-initial capitalised word alone
      names something only if the record also writes it that way ("Unrelated note ..."
      never does; "Paris is ..." does when "in Paris" is written too).
    * ``surnames``: the last word of a multi-word name of two or three capitalised words
      ("Alice Moreau" -> "moreau"), when exactly one such name of the record ends with it:
      "Moreau" alone then mentions "Alice Moreau" (an alias resolved in the record)."""
    caps: set[str] = set()
    full: dict[str, set[str]] = {}
    for text_runs in runs:
        for words, initial in text_runs:
            if len(words) == 1:
                if not initial:
                    caps.add(entity_key(_single(words[0])))
                continue
            for w in words:
                if w[:1].isupper():
                    caps.add(entity_key(w))
            name = _multi(words, initial)
            if 2 <= len(name) <= 3 and all(w[:1].isupper() for w in name):
                last = entity_key(name[-1])
                if len(last) >= 3 and not name[-1].isupper() and last not in COMMON_WORDS:
                    display = " ".join(name)
                    full.setdefault(last, {}).setdefault(entity_key(display), display)
    for name in (title, *speakers):
        if name:
            caps.update(entity_key(w) for w in _WORD.findall(name))
    surnames = {last: next(iter(names.values())) for last, names in full.items() if len(names) == 1}
    return Context(frozenset(caps), surnames)


def _multi(words: tuple[str, ...], initial: bool) -> list[str]:
    """A multi-word run as a name: a sentence-initial common word is not part of it ("When
    Alice Moreau ..." -> "Alice Moreau"); a final possessive goes."""
    out = list(words)
    if initial:
        while len(out) > 1 and _single(out[0]).casefold() in COMMON_WORDS:
            out.pop(0)
    out[-1] = out[-1].removesuffix("'s").removesuffix("’s")
    return out


def _decide(runs: list[Run], bag: _Bag, ctx: Context | None) -> None:
    """Add the runs that name something (module docstring), with ``ctx`` the record's
    context (None: every sentence-initial word that is not a common word counts, as the
    seed's extractor did)."""
    for words, initial in runs:
        if len(words) == 1:
            w = _single(words[0])
            low = w.casefold()
            if low in COMMON_WORDS or low == "i" or low.startswith("i'") or low.startswith("i’"):
                continue
            if initial and low in STOP_WORDS:
                continue
            key = entity_key(w)
            if ctx is not None and key in ctx.surnames:
                bag.add(ctx.surnames[key], "name")
                continue
            # Not confirmed by the record: kind "initial", a name only once the store sees it
            # written as one (memo.store.mentions upgrades the entity's kind).
            bag.add(w, "initial" if initial and ctx is not None and key not in ctx.capitalised else "name")
        else:
            name = _multi(words, initial and ctx is not None)
            if len(name) == 1:
                _decide([((name[0],), False)], bag, ctx)
            else:
                bag.add(" ".join(name), "name")


def _identifiers(text: str, bag: _Bag) -> str:
    """Add identifier tokens; return the text with them blanked out (for ``_names``).

    The text is cut into tokens in one ``re.split``; a letters-only token with no capital
    after its first letter (most words of prose) has no digit, connector or inner capital,
    so looks_like_identifier is False for it and only the others are looked at."""
    parts = _IDENT_SPLIT.split(text)     # gap, token, gap, token, ..., gap
    hits = False
    for i in [i for i in range(1, len(parts), 2) if not (parts[i].isalpha() and parts[i][1:].islower())]:
        tok = parts[i]
        if len(tok) < 3 or not any(ch.isalpha() for ch in tok):
            continue
        if not looks_like_identifier(tok) or _PLAIN_COMPOUND.fullmatch(tok) or _run_on(tok):
            continue
        bag.add(tok, "identifier")
        parts[i] = " ; "
        hits = True
    return "".join(parts) if hits else text


def _blank(pattern: re.Pattern[str], text: str, bag: _Bag, kind: str) -> str:
    """Add every match of ``pattern`` (group 1) as ``kind``; blank the matches out so
    the later extractors do not count them again."""
    def sub(m: re.Match[str]) -> str:
        bag.add(m.group(1), kind)
        return " ; "
    return pattern.sub(sub, text)


def _scan(text: str, bag: _Bag) -> list[Run]:
    """Wiki links, handles, tags and identifiers into ``bag``; the runs of capitalised
    words of what is left."""
    body = text or ""
    # Each pattern needs its literal mark ("[[", "@", "#"): text without it is left as is.
    if "[[" in body:
        body = _blank(_WIKI, body, bag, "wiki")
    if "@" in body:
        body = _blank(_HANDLE, body, bag, "handle")
    if "#" in body:
        body = _blank(_TAG, body, bag, "tag")
    body = _identifiers(body, bag)
    return _names(body)


def _given(bag: _Bag, speaker: str | None, explicit: Iterable[str], fact_terms: Iterable[str]) -> None:
    if speaker and speaker.strip():
        bag.add(speaker, "speaker")
    for name in explicit:
        if isinstance(name, str) and name.strip():
            bag.add(name, "explicit")
    for name in fact_terms:
        if isinstance(name, str) and name.strip():
            bag.add(name, "fact")


def extract(text: str, *, speaker: str | None = None, explicit: Iterable[str] = (),
            fact_terms: Iterable[str] = (), context: Context | None = None) -> list[EntityMention]:
    """Entities ``text`` mentions (order of first appearance; speaker, explicit and fact
    terms first).  ``context``: the record's (``record_context``); by default the text's
    own (the text is its record), so a sentence-initial word alone counts only if the text
    also writes it capitalised inside a sentence."""
    bag = _Bag()
    _given(bag, speaker, explicit, fact_terms)
    runs = _scan(text, bag)
    if context is None:
        context = record_context([runs], speakers=[speaker] if speaker else ())
    _decide(runs, bag, context)
    return bag.result()


def extract_seed(text: str, *, speaker: str | None = None, explicit: Iterable[str] = (),
                 fact_terms: Iterable[str] = ()) -> list[EntityMention]:
    """The seed's extractor (every sentence-initial capitalised word that is not a common
    word is a name; no record context): kept for the comparison of tests/unit/entities and
    eval/entity_sample (precision and recall before and after)."""
    bag = _Bag()
    _given(bag, speaker, explicit, fact_terms)
    _decide(_scan(text, bag), bag, None)
    return bag.result()


_DISAMBIGUATION = re.compile(r"\s*\([^()]*\)\s*$")     # "Carry On (franchise)" -> "Carry On"
MAX_TITLE_WORDS = 8


def title_name(title: str | None) -> str | None:
    """A record's title as an entity, when it is shaped like a name: a Wikipedia article's
    subject ("Benton Fraser", "Carry On (franchise)" -> "Carry On", "Ælfgar, Earl of
    Mercia"), a document's name.  Not a sentence: at most ``MAX_TITLE_WORDS`` words, no
    sentence punctuation, every word capitalised (or a number, a joiner, a leading article).
    A paper's title ("Extracellular vesicles for drug delivery.") or a file stem
    ("memo-operations") is not a name."""
    if not title:
        return None
    text = " ".join(_DISAMBIGUATION.sub("", title).split())
    words = text.split()
    if not words or len(words) > MAX_TITLE_WORDS or any(ch in text for ch in ".:;?!\n") and not _dotted(text):
        return None
    for w in words:
        core = w.strip("\"'“”‘’(),&")
        if not core or core[0].isupper() or core[0].isdigit() or core.casefold() in _JOINERS | _LEADING \
                or not core[0].isalpha():
            continue
        return None
    while len(words) > 1 and words[0].casefold() in _LEADING:    # "The Flower of Hawaii", as the text names it
        words = words[1:]
    return " ".join(words) if any(w[:1].isupper() for w in words) else None


@lru_cache(maxsize=65536)
def title_key(title: str | None) -> str | None:
    """The entity key of a record's title when the title is shaped like a name."""
    name = title_name(title)
    return entity_key(name) if name else None


def _dotted(text: str) -> bool:
    """Dots only inside abbreviations ("SV St. Georg", "B.Z."), no sentence end."""
    return not any(ch in text for ch in ":;?!\n") and not text.endswith(".") or bool(re.search(r"\b\w\.$", text))


def extract_record(texts: Sequence[str], *, speakers: Sequence[str | None] | None = None,
                   title: str | None = None, headings: Sequence[str] | None = None,
                   explicit: Iterable[str] = ()) -> list[list[EntityMention]]:
    """The entities each passage of one record mentions, the record read as a whole:

    * its context (``record_context`` over every passage, the title, the speakers) decides
      which sentence-initial words are names and which surnames stand for a full name;
    * its ``title`` (a Wikipedia article's subject, a note's or document's title) is an
      entity every passage mentions (kind ``name``);
    * ``headings[i]``, passage i's heading path ("Install > Linux", a document's sections),
      is read as text of that passage: the names and identifiers it holds are mentions.

    Each passage's list is in order of first appearance: speaker, explicit, title, then
    the heading's and the text's entities."""
    n = len(texts)
    speakers = list(speakers) if speakers is not None else [None] * n
    heads = list(headings) if headings is not None else [""] * n
    explicit = tuple(explicit)
    subject = title_name(title)
    bags, runs = [], []
    for text, speaker, head in zip(texts, speakers, heads, strict=True):
        bag = _Bag()
        _given(bag, speaker, explicit, ())
        if subject:
            bag.add(subject, "name")
        r: list[Run] = []
        for part in (head or "").split(HEADING_SEP):
            if part.strip():
                r.extend(_scan(part.strip() + ".", bag))
        r.extend(_scan(text, bag))
        bags.append(bag)
        runs.append(r)
    ctx = record_context(runs, title=title, speakers=[s for s in speakers if s])
    out = []
    for bag, r in zip(bags, runs, strict=True):
        _decide(r, bag, ctx)
        out.append(bag.result())
    return out
