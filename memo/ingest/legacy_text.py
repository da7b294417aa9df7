"""Which legacy encoding a file that is not UTF-8 was written in (``memo.ingest.files``).

charset-normalizer guesses from byte patterns and a language model of the most frequent
letters; on a short note it guesses wrong often enough to matter, and a wrong guess
silently rewrites the text: a German note in Windows-1252 ("Grüße aus München") came
back as mac-iceland ("Gr¸þe aus M¸nchen"), a Spanish one as cp775 ("ni±o", "jam¾n"), a
French one starting "À faire" as cp1250 ("Ŕ faire", "système" -> "systčme"), and a
Hungarian cp1250 note as cp1252 ("ellenőrizze" -> "ellenõrizze").  Search then misses
every word that held an accent.

Almost every legacy file in a Latin script is in one of the Windows code pages (cp1252
Western, cp1250 Central European, cp1254 Turkish, cp1257 Baltic), and they differ in the
accented letters only.  So each of them reads the bytes, and a reading counts when it is
text a person wrote in one language:

* every character beyond ASCII is a Latin letter or common typography (quotes, dashes,
  the euro sign...), and no such symbol sits inside a word ("za¿ó³æ" is Polish read as
  cp1252);
* the accented letters are few among the letters (at most ``MAX_ACCENTED_SHARE``):
  Cyrillic, Greek or CJK bytes read as Latin give words made of accented letters only; in a
  text of fewer than ``SHORT_LETTERS`` letters (a name alone: "Łódź") the share says nothing,
  and one alphabet must hold every accented letter instead;
* no accented capital follows a small letter inside a word ("cafŽ" is Mac Roman read as
  cp1252);
* one language's alphabet (``ALPHABETS``) holds its accented letters: the share of them
  it holds, for the language that holds most, is the reading's score.

The reading with the best score wins if that score is at least ``MIN_COVERAGE``, the
Western code page first among equals (the most common: what browsers read "latin-1" as);
otherwise (a non-Latin script, or no reading a language accounts for) charset-normalizer's
guess stands.
"""

from __future__ import annotations

import codecs
import re
import unicodedata
from collections import Counter
from collections.abc import Iterable

# The Windows code pages for Latin scripts, the most common first (ties go to the first).
LATIN_CODE_PAGES = ("cp1252", "cp1250", "cp1254", "cp1257")

# The letters beyond ASCII each language writes (lower case).  Facts of the languages'
# alphabets, not tuned: a reading's accented letters must all be letters of one of them.
ALPHABETS: dict[str, str] = {
    "catalan": "àçèéíïòóúü",
    "croatian": "čćđšž",
    "czech": "áčďéěíňóřšťúůýž",
    "danish": "æøåéó",
    "dutch": "áäéëèêíïóöúüĳ",
    "estonian": "äöõüšž",
    "finnish": "äöåšž",
    "french": "àâæçéèêëîïôœùûüÿ",
    "german": "äöüß",
    "hungarian": "áéíóöőúüű",
    "icelandic": "áðéíóúýþæö",
    "italian": "àèéìíîòóùú",
    "latvian": "āčēģīķļņšūž",
    "lithuanian": "ąčęėįšųūž",
    "norwegian": "æøåéóòâô",
    "polish": "ąćęłńóśźż",
    "portuguese": "áâãàçéêíóôõú",
    "romanian": "ăâîșțşţ",
    "slovak": "áäčďéíĺľňóôŕšťúýž",
    "slovene": "čšž",
    "spanish": "áéíñóúü",
    "swedish": "åäöé",
    "turkish": "çğıöşüâîû",
}

# Typography a legacy Western file holds beyond ASCII: not letters, but not signs of a misreading
# either (unless inside a word).
TYPOGRAPHY = frozenset("\u00a0¡¢£¤¥¦§¨©ª«¬\u00ad®¯°±²³´µ¶·¸¹º»¼½¾¿×÷€‚„…†‡ˆ‰‹‘’“”•–—˜™›")

# Typography that does sit inside words: apostrophes, the Catalan middle dot (l·l), a soft
# hyphen, dashes written without spaces.
WORD_JOINERS = frozenset("’‘·\u00ad–—")
# A word holding a character beyond ASCII (letters and such characters around it): only
# these differ between the code pages, so each distinct one is read once per code page.
_WORDS = re.compile(rb"[A-Za-z\x80-\xff]*[\x80-\xff][A-Za-z\x80-\xff]*")
_TEXT_WORDS = re.compile(r"[A-Za-z\u0080-\U0010ffff]*[^\x00-\x7f][A-Za-z\u0080-\U0010ffff]*")
_ASCII_LETTERS = re.compile(r"[A-Za-z]")
_ASCII_LETTER_BYTES = bytes(range(65, 91)) + bytes(range(97, 123))

MAX_ACCENTED_SHARE = 0.5    # of a reading's letters: the Latin languages above stay under ~0.1 (a word alone, "été", may not); a non-Latin script read as Latin nears 1
MIN_COVERAGE = 0.95         # of a reading's accented letters, held by one language's alphabet
SHORT_LETTERS = 12          # a text of fewer letters ("Łódź", "Zażółć") is judged by its alphabet alone


def latin_reading(data: bytes) -> str | None:
    """The Windows code page whose reading of ``data`` is text in one Latin-script language
    (module docstring), the first in ``LATIN_CODE_PAGES`` among the best; None when none
    scores ``MIN_COVERAGE``.

    Among equals the Western code page wins, not charset-normalizer's pick: a one-line note
    whose only accent is "è" reads as French in cp1252 and as Slovene ("č") in cp1250 alike,
    and deferring to charset-normalizer there got fewer of such lines right over 28
    languages' translated messages (docs/results-log.md "Legacy encodings")."""
    words = Counter(_WORDS.findall(data))
    ascii_letters = len(data) - len(data.translate(None, _ASCII_LETTER_BYTES))
    best, best_score = None, 0.0
    for name in LATIN_CODE_PAGES:
        try:
            read = [(word.decode(name), n) for word, n in words.items()]
        except UnicodeDecodeError:
            continue
        score = _score(read, ascii_letters)
        if score is not None and score > best_score:
            best, best_score = name, score
    return best if best_score >= MIN_COVERAGE else None


def coverage(text: str) -> float | None:
    """The share of ``text``'s accented letters that the alphabet holding most of them holds
    (1.0 when it holds no accented letter), or None when ``text`` is not Latin-script
    writing: a character beyond ASCII that is neither a Latin letter nor typography, a
    symbol inside a word, too many accented letters, an accented capital after a small
    letter."""
    return _score(Counter(_TEXT_WORDS.findall(text)).items(), len(_ASCII_LETTERS.findall(text)))


def _score(words: Iterable[tuple[str, int]], ascii_letters: int) -> float | None:
    """``coverage`` of a text given as its words holding a character beyond ASCII (each with
    how many times it occurs) and its count of ASCII letters."""
    counts: dict[str, int] = {}
    for word, n in words:
        for i, ch in enumerate(word):
            if ch.isascii():
                continue
            before = word[i - 1] if i else ""
            if ch in TYPOGRAPHY:
                if ch not in WORD_JOINERS and before.isalpha() and word[i + 1:i + 2].isalpha():
                    return None             # "za¿ó³æ": a symbol between two letters
                continue
            if not ch.isalpha() or not unicodedata.name(ch, "").startswith("LATIN "):
                return None
            if ch.isupper() and before.isalpha() and before.islower():
                return None                 # "cafŽ"
            low = ch.lower()
            counts[low] = counts.get(low, 0) + n
    accented = sum(counts.values())
    if not accented:
        return 1.0
    held = max(sum(n for c, n in counts.items() if c in alphabet) for alphabet in ALPHABETS.values())
    if accented + ascii_letters < SHORT_LETTERS:
        # A word or two: their share of accented letters says nothing ("Łódź" is 3 of 4), so one
        # alphabet must hold every one of them; Cyrillic read as Latin ("Ìîñêâà") fits none.
        return 1.0 if held == accented else None
    if accented > MAX_ACCENTED_SHARE * (accented + ascii_letters):
        return None
    return held / accented


def detect_encoding(data: bytes) -> str | None:
    """The encoding ``data`` (not UTF-8) was most likely written in: a Latin code page whose
    reading one language accounts for (``latin_reading``), else charset-normalizer's best
    guess, else None."""
    latin = latin_reading(data)
    if latin is not None:
        return latin
    from charset_normalizer import from_bytes
    # UTF-16/32 without NUL bytes (a NUL rejects the file as binary before this) is a
    # misreading of a few high bytes as CJK: 'caf\xe9' came back as utf_16_be.
    matches = [m for m in from_bytes(data) if m.encoding and not m.encoding.startswith(("utf_16", "utf_32"))]
    if not matches:
        return None
    best = matches[0]
    for m in matches:      # among guesses it ranks equal, the most common legacy encoding
        if (m.chaos, m.coherence) == (best.chaos, best.coherence) and "cp1252" in (m.encoding, *m.could_be_from_charset):
            return "cp1252"
    return codecs.lookup(best.encoding).name
