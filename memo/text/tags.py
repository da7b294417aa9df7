"""Tags: the form a tag is stored and looked up in, and the tags a note writes in its text.

``tag_form`` is the one definition both sides use: a record's tags are stored in it
(``memo.store.records``), and every filter (``memo search --tag``, ``memo list --tag``,
MCP, web) looks them up in it, so ``--tag '#person'`` finds what ``tags: [person]`` or an
inline ``#person`` stored.  Case is kept: ``Person`` and ``person`` stay two tags.

``inline_tags``: Obsidian's tags in a markdown note's text (``#person``, ``#team/frontend``):
a ``#`` at the start of a line or after a space, then letters, digits, ``_``, ``-`` and
``/``, at least one of them not a digit (``#123`` is an issue number); never inside code
(fenced blocks and inline code spans) and never a heading (``# Title`` has a space).
"""

from __future__ import annotations

import re

from memo.text.limits import MAX_TAGS

_CODE = re.compile(r"^(```|~~~).*?^\1[^\n]*$|`[^`\n]*`", re.MULTILINE | re.DOTALL)
_INLINE_TAG = re.compile(r"(?:^|(?<=\s))#([\w/-]*[^\W\d][\w/-]*)", re.MULTILINE)
MAX_INLINE_TAGS = 50    # of one note: the rest of a text full of "#words" is not read as tags


def tag_form(tag: str) -> str:
    """A tag as stored and looked up: without the spaces around it and a leading ``#``."""
    return tag.strip().lstrip("#").strip()


def inline_tags(markdown: str) -> tuple[str, ...]:
    """The tags a markdown note writes in its text (module docstring), in order, once each."""
    text = _CODE.sub(" ", markdown)
    found = dict.fromkeys(m.group(1).rstrip("/-") for m in _INLINE_TAG.finditer(text))
    return tuple(t for t in found if t)[:MAX_INLINE_TAGS]


def with_inline_tags(tags: tuple[str, ...], markdown: str) -> tuple[str, ...]:
    """``tags``, then the inline tags of ``markdown`` not among them, as many as a record has
    room for (``MAX_TAGS``: the given and the front matter's tags come first).  One rule for
    ``memo add`` (memo.ops.add) and a markdown file's import."""
    room = MAX_TAGS - len(tags)
    found = [t for t in inline_tags(markdown) if t not in tags][:max(0, room)]
    return (*tags, *found) if found else tags
