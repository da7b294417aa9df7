"""Entities named in text: pure, deterministic and cheap (no model, a few regexes).

``extract(text, speaker=..., explicit=...)`` returns the entities a passage mentions, each
with a case-folded key (its identity), a display name, a kind and a count:

* ``name``: proper names and multi-word capitalised phrases: runs of capitalised words,
  joined by at most two inner ``of`` / ``the`` / ``de`` / ``van`` / ``von`` / ``da`` ...
  ("New York", "Lord of the Rings"; "and" ends a run: "Bank of America and Wells Fargo"
  is two).  A run's leading function words are dropped ("The Beatles" -> "Beatles"), and
  so is a final possessive ("John Smith's" -> "John Smith").  A *single* capitalised word
  at the start of a sentence is kept only when it is not a common English word
  (``COMMON_WORDS``: the stop list of ``memo.text.fts_query`` plus greetings,
  interjections and sentence adverbs), so "What", "Yesterday", "Thanks" never become
  entities; "I" never does.  Month and weekday names are dates, not entities.
* ``identifier``: identifier-shaped tokens as the exact arm keeps them
  (``memo.text.identifiers``: ``ERR_CONN_RESET``, ``net/http``, ``POL-358``), with at
  least one letter and three characters, dotted names included (``stream.Readable``,
  ``os.path.join``); hyphenated plain words ("well-being"), abbreviations ("e.g") and
  run-on sentences ("airport.The") are not.
* ``handle`` (``@alice`` -> ``alice``), ``tag`` (``#python`` -> ``python``), ``wiki``
  (``[[Project X|the project]]`` -> ``project x``).
* ``speaker`` (a conversation turn's speaker), ``explicit`` (named by the caller:
  ``memo add --entity``, the JSONL ``entities`` field, MCP) and ``fact`` (a fact's
  subject and object; names in a fact's text are ``name``).

Each span counts once: wiki links, handles, tags and identifiers are blanked out before
the name pass reads the rest.

Keys: NFKC, case-folded, inner whitespace collapsed, surrounding punctuation stripped.
``aliases(key)`` lists the case-folded forms a query may use for the entity (the key,
and for hyphenated keys the spaced form).  Query-side matching lives in
``memo.retrieve.route``.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Container, Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import cache, lru_cache

from memo.text.fts_query import STOP_WORDS
from memo.text.identifiers import looks_like_identifier

HEADING_SEP = " > "          # memo.ingest.markdown_parse.HEADING_SEP (a heading path)
KINDS: tuple[str, ...] = ("name", "initial", "identifier", "handle", "tag", "wiki", "speaker", "explicit", "fact")
MAX_KEY_CHARS = 120         # longer "names" are sentences in title case, not entities
_KEY_STRIP = " \t.,;:!?\"'`()[]{}<>’‘“”"     # what entity_key strips around a name

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
_ASCII_WORD = re.compile(r"[a-z][a-z0-9_'\-]*")         # _WORD in lowercase ASCII text
_SENTENCE_END = re.compile(r"[.!?:;\n\"“”(\[]\s*$")
_INITIAL_GAP = re.compile(r"[.!?:;\n]")              # a gap that starts a sentence
_BROKEN_GAP = re.compile(r"[.!?:;,\n()\[\]\"“”]")    # a gap that ends a run
_HANDLE = re.compile(r"(?<![\w@])@([^\W_][\w.\-]*[^\W_]|[^\W_])", re.UNICODE)
_TAG = re.compile(r"(?<![\w&#])#([^\W\d_][\w\-]*)", re.UNICODE)
_WIKI = re.compile(r"\[\[([^\]\|#\n]{1,200})(?:[|#][^\]\n]*)?\]\]")
# Hyphenated plain words ("well-being", "Self-care") and abbreviations ("e.g", "U.S") are
# words, not identifiers.  Dotted lowercase words are names of code and of the web
# (stream.Readable, os.path.join, core.autocrlf, clinicaltrials.gov): identifiers, unless
# the part after a single dot is a common word written capitalised, a sentence whose space
# after the full stop went missing ("airport.The").
_PLAIN_COMPOUND = re.compile(r"[A-Za-z][a-z]*(?:['\-][A-Za-z][a-z]*)+|(?:[A-Za-z]\.){1,3}[A-Za-z]?")
_RUN_ON = re.compile(r"[A-Za-z][a-z]*\.([A-Z][a-z]*)")


def _run_on(tok: str) -> bool:
    m = _RUN_ON.fullmatch(tok)
    return m is not None and m.group(1).casefold() in COMMON_WORDS


_IDENT = re.compile(r"\w+(?:[\-./:@#+]+\w+)*", re.UNICODE)
# The scans of ``_names`` and ``_identifiers`` (issues 31.3, 29.5): each match of these starts
# where the previous one ended, on a word or token boundary, so the words and tokens they read
# are exactly those of ``_WORD`` / ``_IDENT`` read from the start of the text.  Group 1 is the
# gap before the word (token) of group 2; group 2 is None at the end of the text.
#   _NEXT_CAP: skips whole words that start with an ASCII lowercase letter (they cannot open
#   a run) and stops at the next other word (capitalised, or starting with a non-ASCII letter:
#   the caller checks isupper()).  A letter is [^\W\d_]; [\W\d_] is everything else.
#   _NEXT_WORD: the next word, whatever it is.
#   _NEXT_IDENT: skips whole tokens ``_identifiers`` would drop whatever their context and
#   stops at the next other token.  A token is skipped when it ends where the alternative
#   ends (``_TOKEN_END``: no word character, no connector run before one) and is (issue
#   29.5: 23 -> 7 tokens per SciFact abstract reach Python):
#     - ASCII letters with no capital after the first ("word", "Word", "A"): isalpha and
#       tok[1:].islower(), or shorter than three;
#     - ASCII letters with two leading capitals ("MRI", "DCs", "ABcD"): looks_like_identifier
#       is False (no connector, no digit, and _CAMEL needs [a-z]+[A-Z] or [A-Z][a-z]+[A-Z]
#       from the first letter);
#     - digits and underscores only, joined by connectors ("95", "0.99-1.15", "1_000"): no
#       letter;
#     - hyphenated plain words ("well-being", "Self-care"): _PLAIN_COMPOUND fullmatches them
#       (each part [A-Za-z][a-z]*, one "-" between).  Dotted ones reach Python: they are
#       identifiers unless abbreviations or run-on sentences.
#   Group 3 of _NEXT_CAP and _NEXT_WORD (issue 29.5) is "" (not None) when a run holding the
#   word surely ends before the next word, whatever the word is: the next gap breaks a run
#   (any of _BROKEN_GAP's characters, a superset of those that start a sentence), the text
#   ends, or the next word is plain lowercase ASCII and not a joiner (it closes any run).  A
#   capitalised word so followed is then a run alone, or the run's last word, without
#   reading the next word in Python (most capitalised words of prose: "MRI was", "Paris.").
#
# ASCII stretches (issue 29.5).  Unicode classes (\w, [\W\d_]) cost the regex engine a
# character-type lookup per character and the skip loops an iteration per word; a class of
# ASCII characters is one bitmap test.  So each skip loop first tries one greedy stretch of
# characters that hold no capital, no non-ASCII character (and for tokens no digit, "_" or
# connector), backed off to the end of the last word in it that surely ends there (a
# lowercase letter, then no word character: ``_WORD_END`` / ``_TOKEN_END``).  Such a stretch
# starts on a boundary (where the previous match, word or token ended), and every word or
# token in it starts with a lowercase ASCII letter and ends inside it, so it skips exactly
# the words (tokens) the per-word alternative would skip one by one; what it cannot take
# ("mRNA", "naïve", "IL-6", a capitalised word) is left to the per-word alternatives.
_WORD_END = r"(?![\w'’\-])"
_TOKEN_END = r"(?!\w|[\-./:@#+]++\w)"
_LOWER_WORDS = r"[^A-Z\x80-\U0010ffff]*[a-z]" + _WORD_END
_LOWER_TOKENS = r"[^A-Z0-9_\-./:@#+\x80-\U0010ffff]*[a-z]" + _TOKEN_END
_RUN_ENDS = (r"(?:(?=[\W\d_]*?[.!?:;,\n()\[\]\"“”]|[\W\d_]*+\Z"
             r"|[\W\d_]*+(?!(?:of|the|de|van|von|da|del|la|le|du)" + _WORD_END + r")[a-z]++" + _WORD_END + r")())?")
_NEXT_CAP = (r"(?:" + _LOWER_WORDS + r"|[\W\d_]*+[a-z][\w'’\-]*+)*+([\W\d_]*+)([^\W\d_][\w'’\-]*+)?"
             + _RUN_ENDS)
_NEXT_WORD = r"([\W\d_]*+)([^\W\d_][\w'’\-]*+)?" + _RUN_ENDS
_NEXT_IDENT = (
    r"(?:" + _LOWER_TOKENS + r"|\W*+(?:[A-Za-z][a-z]*+(?:-[A-Za-z][a-z]*+)*+|[A-Z][A-Z][A-Za-z]*+"
    r"|[\d_]++(?:[\-./:@#+]++[\d_]++)*+)" + _TOKEN_END + r")*+(\W*+)(\w++(?:[\-./:@#+]++\w++)*+)?")


@cache
def _scanners() -> tuple[re.Pattern[str], re.Pattern[str], re.Pattern[str]]:
    """_NEXT_CAP, _NEXT_WORD and _NEXT_IDENT compiled, at the first extraction: ~7 ms that a
    process which only searches never needs (a cold ``memo search`` imports this module
    through routing and the mention store, issue 31.2)."""
    return re.compile(_NEXT_CAP), re.compile(_NEXT_WORD), re.compile(_NEXT_IDENT)


@dataclass(frozen=True, slots=True)
class EntityMention:
    key: str        # case-folded identity
    name: str       # display form (first seen)
    kind: str       # one of KINDS (the first kind it was seen as)
    count: int      # occurrences in the text (speaker / explicit / fact count once)


_new_mention = object.__new__
_set_key, _set_name, _set_kind, _set_count = (EntityMention.key.__set__, EntityMention.name.__set__,
                                              EntityMention.kind.__set__, EntityMention.count.__set__)


def _mention(key: str, name: str, kind: str, count: int) -> EntityMention:
    """``EntityMention(key, name, kind, count)`` through the slots' own setters (see ``result``)."""
    m = _new_mention(EntityMention)
    _set_key(m, key)
    _set_name(m, name)
    _set_kind(m, kind)
    _set_count(m, count)
    return m


# Pickled by this call (an import's workers send ~10 a passage: memo.dc_pickle says why).
EntityMention.__reduce__ = lambda self: (_mention, (self.key, self.name, self.kind, self.count))  # type: ignore[method-assign,assignment]


def entity_key(name: str) -> str:
    """The one normal form of an entity name (the identity in ``entities.key``)."""
    text = str(name)
    # NFKC leaves ASCII as it is, and casefold is lower() there.
    text = text.lower() if text.isascii() else unicodedata.normalize("NFKC", text).casefold()
    return " ".join(text.split()).strip(_KEY_STRIP)


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
        name = name.strip(_KEY_STRIP)
        if name.isascii():      # entity_key, inline
            self.add_ascii(" ".join(name.lower().split()).strip(_KEY_STRIP), name, kind, count)
            return
        key = entity_key(name)
        if not key or len(key) > MAX_KEY_CHARS or not any(ch.isalpha() for ch in key):
            return
        self._count(key, name, kind, count)

    def add_ascii(self, key: str, name: str, kind: str, count: int = 1) -> None:
        """``add`` of an ASCII ``name`` (stripped of _KEY_STRIP) whose entity_key the caller
        already has (``_decide`` works it out for a word anyway)."""
        # a lower-case ASCII key has a letter iff upper() changes it
        if not key or len(key) > MAX_KEY_CHARS or key.upper() == key:
            return
        self._count(key, name, kind, count)

    def _count(self, key: str, name: str, kind: str, count: int) -> None:
        item = self.items.get(key)
        if item is None:
            self.items[key] = [name, kind, count]
        else:
            item[2] += count

    def result(self) -> list[EntityMention]:
        # EntityMention(k, *v) without the frozen dataclass's __init__ (an object.__setattr__
        # per field): the slots' own setters (``_mention``), ~0.7x the time (issue 29.5; ~10 per passage).
        return [_mention(key, name, kind, count) for key, (name, kind, count) in self.items.items()]


Run = tuple[tuple[str, ...], bool]      # (the words of a run of capitalised words, starts a sentence)


def _names(text: str) -> list[Run]:
    """Runs of capitalised words (see the module docstring), leading function words dropped,
    in order; each with whether its first word starts a sentence.  Which runs name
    something is ``_decide``'s business (it needs the record's context).

    Speed (issues 16.4, 31.3): while no run is open, a word that does not start with a
    capital changes nothing, so one regex match (``_NEXT_CAP``, in C) jumps from one
    capitalised word to the next with the gap before it; while a run is open each next word
    is read (``_NEXT_WORD``).  No list of every word and gap is built.  Issue 29.5: the same
    match says whether a run would surely end after the word (group 3), so a capitalised
    word followed by a plain lowercase word, a break or the end (most of them) is a run
    alone at once; the commonest gaps' flags come from a fixed table.  The answers are those
    of the word-by-word loop (tests/unit/entities/test_extract_differential.py compares them
    with the frozen copy of 05fec91, test_extract_fast.py with entities_v1.py)."""
    run: list[tuple[str, bool]] = []     # (word, sentence-initial)
    pending: list[str] = []              # joiners waiting for the next capitalised word
    out: list[Run] = []

    def flush() -> None:
        while run and run[0][0].casefold() in _LEADING:
            run.pop(0)
        if run:
            out.append((tuple(w for w, _ in run), run[0][1]))
        run.clear()

    pos = 0
    cap_scan, word_scan, _ = _scanners()
    next_cap, next_word, gap_flags = cap_scan.match, word_scan.match, _GAP_FLAGS.get
    while True:
        if not run:
            # No run open: only a capitalised word matters, and no gap can break anything.
            m = next_cap(text, pos)
            gap, word, ends = m.groups()
            if word is None:
                break
            pos = m.end()
            if not word[0].isupper():
                continue                 # a non-ASCII lowercase word: nothing to open
            word = word.strip("-'’")     # never empty: a word starts with a letter
            low = word.casefold()
            if low in _MONTHS_DAYS:
                continue                 # not capital: opens nothing (and pending is empty)
            flags = gap_flags(gap)
            # Only the first match can start at 0: the text's first word starts a sentence.
            initial = flags[0] if flags is not None else _starts_sentence(gap)
            if not initial and m.start(1) == 0:
                initial = True
            if ends is not None:         # the run ends after this word: flush() of the one word
                if low not in _LEADING:
                    out.append(((word,), initial))
                continue
            run.append((word, initial))
            continue
        m = next_word(text, pos)
        gap, word, ends = m.groups()
        if word is None:
            break
        pos = m.end()
        word = word.strip("-'’")
        # A run is open: this is not the text's first word.
        initial, broken = gap_flags(gap) or (_starts_sentence(gap), bool(_BROKEN_GAP.search(gap)))
        low = word.casefold()
        capital = word[0].isupper() and low not in _MONTHS_DAYS
        if broken or initial:
            flush()
            pending.clear()
        if capital:
            if run and pending:
                run.extend((p, False) for p in pending)
            pending.clear()
            run.append((word, initial))
            if ends is not None:         # the next word (or the end) would flush it
                flush()
        elif run and low in _JOINERS and len(pending) < 2 and not broken:
            pending.append(word)
        else:
            if run:
                flush()
            pending.clear()
    if run:
        flush()
    return out


def _starts_sentence(gap: str) -> bool:
    """Whether a word after ``gap`` (not the text's first) starts a sentence.  The three
    characters before the word: any in the previous word are word characters, which
    _SENTENCE_END (punctuation, then only spaces) cannot end on."""
    return bool(_SENTENCE_END.search(gap[-3:])) or bool(_INITIAL_GAP.search(gap))


# (starts a sentence, breaks a run) of the commonest gaps before a word (95% of those of
# SciFact, LoCoMo and docstrings; "  ;  " is a blanked identifier), worked out once: a fixed
# table, so no cache grows with the text read.
_GAP_FLAGS: dict[str, tuple[bool, bool]] = {
    g: (_starts_sentence(g), bool(_BROKEN_GAP.search(g)))
    for g in (" ", ", ", ". ", "", "  ;  ", " (", ") ", "! ", "\n", ".\n\n", "  ; , ", ".", "; ", "), ", "). ",
              "  ; . ", " - ", "(", ": ", ".  ", " ( ; ) ", ",  ;  ", ".  ;  ", "? ", " '", ' "', '" ', ".\n",
              "\n\n", " [", "] ", " “", "” ", " ‘", "’ ", " — ", " – ", "—", "–", "/", " / ", "-", " -")}


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
            # A word holds no whitespace: an ASCII one's entity_key is w.lower().strip(_KEY_STRIP).
            if len(words) == 1:
                if not initial:
                    w = _single(words[0])
                    caps.add(w.lower().strip(_KEY_STRIP) if w.isascii() else entity_key(w))
                continue
            for w in words:
                if w[:1].isupper():
                    caps.add(w.lower().strip(_KEY_STRIP) if w.isascii() else entity_key(w))
            name = _multi(words, initial)
            if 2 <= len(name) <= 3 and all(w[:1].isupper() for w in name):
                w = name[-1]
                last = w.lower().strip(_KEY_STRIP) if w.isascii() else entity_key(w)
                if len(last) >= 3 and not name[-1].isupper() and last not in COMMON_WORDS:
                    display = " ".join(name)
                    full.setdefault(last, {}).setdefault(entity_key(display), display)
    for name in (title, *speakers):
        if name:
            if name.isascii() and "'" not in name:
                # entity_key of each word, in bulk: ASCII lower() changes no character's class,
                # so the words of name.lower() are those of name lowered (_WORD's classes on
                # lowercase ASCII: _ASCII_WORD's, bitmaps); a word holds no whitespace
                # (entity_key's NFKC, casefold and split change nothing) and starts with a
                # letter, so without a quote _KEY_STRIP has nothing to strip from it.
                caps.update(_ASCII_WORD.findall(name.lower()))
            else:
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
    surnames = ctx.surnames if ctx is not None else {}
    for words, initial in runs:
        if len(words) == 1:
            w = _single(words[0])
            ascii_word = w.isascii()
            low = w.lower() if ascii_word else w.casefold()       # casefold is lower() for ASCII
            # (COMMON_WORDS holds STOP_WORDS: a sentence-initial stop word is dropped here too.)
            if low in COMMON_WORDS or low == "i" or low.startswith(("i'", "i’")):
                continue
            key = low.strip(_KEY_STRIP) if ascii_word else entity_key(w)     # a word: no whitespace
            full = surnames.get(key)
            if full is not None:
                bag.add(full, "name")
                continue
            # Not confirmed by the record: kind "initial", a name only once the store sees it
            # written as one (memo.store.mentions upgrades the entity's kind).
            kind = "initial" if initial and ctx is not None and key not in ctx.capitalised else "name"
            if ascii_word:
                # for a whitespace-free ASCII word, add()'s key is ``key`` (lower() makes no
                # _KEY_STRIP character): not worked out twice
                bag.add_ascii(key, w.strip(_KEY_STRIP), kind)
            else:
                bag.add(w, kind)
        else:
            name = _multi(words, initial and ctx is not None)
            if len(name) == 1:
                _decide([((name[0],), False)], bag, ctx)
            else:
                bag.add(" ".join(name), "name")


def _identifiers(text: str, bag: _Bag) -> str:
    """Add identifier tokens; return the text with them blanked out (for ``_names``).

    A letters-only token with no capital after its first letter (most words of prose) has
    no digit, connector or inner capital, so looks_like_identifier is False for it: one
    regex match (``_NEXT_IDENT``, in C) skips the ASCII ones (and, issue 29.5, the other
    tokens dropped whatever their context: see _NEXT_IDENT) and stops at the next other
    token, which is checked here as before."""
    pos = 0
    cuts: list[tuple[int, int]] = []
    match = _scanners()[2].match
    while True:
        m = match(text, pos)
        tok = m.group(2)
        if tok is None:
            break
        pos = m.end()
        if tok.isalpha() and tok[1:].islower():
            continue
        if len(tok) < 3 or not (tok[0].isalpha() or any(ch.isalpha() for ch in tok)):
            continue
        if not looks_like_identifier(tok) or _PLAIN_COMPOUND.fullmatch(tok) or _run_on(tok):
            continue
        bag.add(tok, "identifier")
        cuts.append((m.start(2), pos))
    if not cuts:
        return text
    parts, last = [], 0
    for start, end in cuts:
        parts.append(text[last:start])
        parts.append(" ; ")
        last = end
    parts.append(text[last:])
    return "".join(parts)


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
_JOINERS_LEADING = _JOINERS | _LEADING
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
    # _DISAMBIGUATION ends with ")" and only whitespace after it: a title that does not is
    # left as it is without running the regex (it tries every position).
    text = " ".join((_DISAMBIGUATION.sub("", title) if title.rstrip().endswith(")") else title).split())
    words = text.split()
    if not words or len(words) > MAX_TITLE_WORDS or any(ch in text for ch in ".:;?!\n") and not _dotted(text):
        return None
    for w in words:
        core = w.strip("\"'“”‘’(),&")
        if not core or core[0].isupper() or core[0].isdigit() or core.casefold() in _JOINERS_LEADING \
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
