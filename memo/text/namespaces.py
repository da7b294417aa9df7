"""What a namespace may be: the one rule every write checks (``check_namespace``).

A namespace is a name people type (``--namespace``, MCP's and the web's ``namespace``) and
read back (``memo stats``, list lines, a search's "the namespaces are ..." reason).  So it
must be text that prints as itself and can be typed again:

* not empty, and no whitespace at either end (``"work "`` and ``"work"`` would be two
  collections that print the same);
* no control character (Unicode category Cc: ESC, BEL, tab, newline, NUL, C1 controls):
  printed, ``a\\x1bb`` drives the terminal, and no shell line types it back;
* no bidi control (U+061C, U+200E/F, U+202A-202E, U+2066-2069; the error names them as
  such): ``x\\u202ey`` prints reversed, so the name seen is not the name stored;
* no other invisible format character (category Cf: zero-width space, word joiner, BOM,
  soft hyphen, the tag characters U+E0000-E007F that hide text from people but not from
  a model reading it), except ZERO WIDTH NON-JOINER and ZERO WIDTH JOINER (U+200C/D),
  which spelling needs (Persian, Indic scripts, emoji sequences) and which reorder nothing;
* no line or paragraph separator (U+2028/9: a line break inside one name);
* at most ``MAX_NAMESPACE_CHARS`` (200) characters (``memo.text.limits``).

Spaces inside, letters of any script, digits and punctuation stay allowed: existing
namespaces like ``"team notes"`` or ``"locomo/conv-26"`` are fine.

Only writes check (``memo.store.records.validate_draft``, ``memo.store.facts.validate_fact``,
``memo.ops.importer.import_path`` for ``--namespace`` before any file is read): a database
that already holds such a namespace is read, searched and listed as before (a filter naming
it matches it exactly), it only takes no new record or fact under that name (a new version
by ``memo supersede`` included, which keeps its record's namespace: add the text under a
clean name instead, and forget the old record if it should go).
"""

from __future__ import annotations

import unicodedata

from memo.errors import ValidationError
from memo.text.limits import MAX_NAMESPACE_CHARS

_BIDI = frozenset("\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")
_JOINERS = frozenset("\u200c\u200d")
_HINT = ("use a name that prints as itself and can be typed again: letters, digits, spaces between "
         "words, '-', '_', '.', '/'")
# A namespace is quoted in its error; a long one is cut there (the offending character is
# named with its position, so nothing is lost).
_SHOWN = 80


def _what(ch: str) -> str | None:
    """What is wrong with ``ch`` inside a namespace (None: nothing)."""
    if ch in _BIDI:
        return "a bidi control"
    cat = unicodedata.category(ch)
    if cat == "Cc":
        return "a control character"
    if cat == "Cf" and ch not in _JOINERS:
        return "an invisible format character"
    if cat in ("Zl", "Zp"):
        return "a line break"
    return None


def _shown(namespace: str) -> str:
    """The namespace as its error quotes it: Python's escapes for what does not print
    (``'a\\x1bb'``, ``'x\\u202ey'``), so the message itself carries no control character."""
    if len(namespace) <= _SHOWN:
        return repr(namespace)
    cut = repr(namespace[:_SHOWN])
    return cut[:-1] + "..." + cut[-1]


def namespace_problem(namespace: object) -> str | None:
    """None if ``namespace`` may be written, else the one-line reason (``check_namespace``'s
    message)."""
    if not isinstance(namespace, str):
        return f"namespace must be text, not {type(namespace).__name__}"
    if not namespace:
        return "namespace is empty"
    if len(namespace) > MAX_NAMESPACE_CHARS:
        return f"namespace {_shown(namespace)} is {len(namespace):,} characters long, over {MAX_NAMESPACE_CHARS}"
    # Every character refused is one str.isprintable() rejects (Cc, Cf, Zl, Zp): the
    # character walk runs only for the rare namespace that is not (an import checks one
    # per record).
    for at, ch in enumerate(() if namespace.isprintable() else namespace):
        what = _what(ch)
        if what is not None:
            name = unicodedata.name(ch, "")
            return (f"namespace {_shown(namespace)} holds {what} U+{ord(ch):04X}"
                    f"{f' ({name})' if name else ''} at character {at}")
    if not namespace.strip():
        return "namespace is empty"
    if namespace != namespace.strip():
        end = "starts" if namespace[0].isspace() else "ends"
        return f"namespace {_shown(namespace)} {end} with whitespace"
    return None


def check_namespace(namespace: object) -> None:
    """Refuse a namespace no one could read back or type again (module docstring):
    ``ValidationError`` (exit 2, HTTP 400, MCP error) naming the character as an escape."""
    problem = namespace_problem(namespace)
    if problem is not None:
        raise ValidationError(problem, hint=_HINT)
