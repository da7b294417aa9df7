"""Which ``<name>`` in a markdown document is HTML markup and which is the author's text.

CommonMark reads any ``<word>`` as raw HTML, so prose such as ``returns Promise<Buffer>``,
``List<T>`` or ``the <my-widget> element`` lost its ``<...>`` part in the passages memo
indexed: the text could not be found by the words the author wrote.  A tag is markup only
when it names an element of HTML (the WHATWG list, plus the obsolete presentational ones
still seen in READMEs), in any case but a lone capital letter (a type parameter); anything
else (a type parameter, a component, a custom element, a placeholder such as
``<path>``) stays in the text as written.  Comments, declarations and processing
instructions are markup; CDATA sections are text.
"""

from __future__ import annotations

import re

__all__ = ["HTML_ELEMENTS", "is_markup"]

HTML_ELEMENTS: frozenset[str] = frozenset("""
a abbr address area article aside audio b base bdi bdo blockquote body br button canvas
caption cite code col colgroup data datalist dd del details dfn dialog div dl dt em embed
fieldset figcaption figure footer form h1 h2 h3 h4 h5 h6 head header hgroup hr html i iframe
img input ins kbd label legend li link main map mark menu meta meter nav noscript object ol
optgroup option output p param picture pre progress q rp rt ruby s samp script search section
select slot small source span strong style sub summary sup table tbody td template textarea
tfoot th thead time title tr track u ul var video wbr
big center font nobr strike tt svg math
""".split())

_TAG = re.compile(r"</?([A-Za-z][A-Za-z0-9-]*)")


def _is_element(name: str) -> bool:
    # HTML's names are case-insensitive (``<Summary>``, ``<BR>``), but one capital letter
    # is a type parameter far more often than an old-style tag (``Foo<T>``, ``Box<B>``).
    return not (len(name) == 1 and name.isupper()) and name.lower() in HTML_ELEMENTS


def is_markup(raw: str) -> bool:
    """Whether a raw inline HTML piece (as the parser cut it: a tag, a comment, ...) is
    markup to drop rather than text to keep."""
    if raw.startswith("<![CDATA["):
        return False                     # character data is text
    if raw.startswith(("<!", "<?")):
        return True                      # comment, declaration, processing instruction
    m = _TAG.match(raw)
    return m is not None and _is_element(m.group(1))
