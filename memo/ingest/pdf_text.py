"""A PDF document as the markdown memo splits and indexes: its text, its outline's headings,
without the furniture every page repeats.

Papers, manuals, reports and specifications are PDFs; ``memo import`` ignored every one.
The text layer is read with pypdf (pure Python, no system libraries), page by page:

* **Headings from the outline** (the bookmarks a reader's side panel shows, which TeX,
  Word and most generators write): each entry becomes a markdown heading at the line of its
  page that holds its title (with or without a section number before it, wrapped over two
  lines or not), else at the top of its page; nested entries nest.  A passage's section is
  then its heading path, as for a markdown file.  A PDF without an outline has no sections.
* **Running headers and footers dropped**: a line that starts or ends three pages or more
  (digits read as one: "Chapter 2: Naming 17" and "... 18" are one line), and a bare
  page number there ("7", "- 7 -", "Page 7 of 40", "vii").
* **Tables of contents and indexes dropped**: lines ending in dot leaders and a page number
  ("Naming . . . . . . 5") would put every heading's words in one passage (and on the
  contents' pages their title and numbered entries without leaders).
* **Lines joined into paragraphs**: a word hyphenated over a line end ("man-" / "agement")
  is one word again, a compound keeps its hyphen ("comma-" / "separated" when the document
  prints "comma-separated" or both words elsewhere, "--show-leak-" / "kinds"); a paragraph ends at a short line closing a sentence, and a bullet
  ("•") starts a list item; a sentence cut by a page break goes on over it.
* Ligatures ("ﬁ"), soft hyphens and NUL characters are written as the letters they stand
  for, or dropped; markdown's own characters in the text are escaped, so a "# define" or
  "<stdio.h>" stays text.

The title is the document's own (``/Title`` in its information, when it says more than a
generator's default), else none (the file's name, as for other files).  An encrypted PDF
is read when it opens with the empty password (many are, to set permissions only); one
that needs a password, and one without any text (scanned pages: no text layer), is refused
with a reason that says what to do.
"""

from __future__ import annotations

import io
import logging
import re
from collections import Counter
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from memo.ingest.converted import Converted, Unread, escape_markdown

PDF_EXTENSIONS = frozenset({".pdf"})

# A line at the top or bottom of this many pages (or more) is the page's furniture.
RUNNING_MIN_PAGES = 3

_LIGATURES = str.maketrans({"\ufb00": "ff", "\ufb01": "fi", "\ufb02": "fl", "\ufb03": "ffi", "\ufb04": "ffl",
                            "\ufb05": "st", "\ufb06": "st", "\u00ad": None, "\x00": None})
_BULLETS = "•◦▪▫●○■□‣⁃∙·–"
_PAGE_NUMBER = re.compile(r"^(?:page\s+)?[-–—(\[]?\s*(?:\d{1,4}|[ivx]{1,6})\s*[-–—)\]]?"
                          r"(?:\s+(?:of|/)\s+\d{1,4})?$", re.I)
_NUMBERED_ENTRY = re.compile(r"^(\d{1,3}(?:\.\d{1,3})*\.?\s+\S.*?)\s+\d{1,4}$")   # "1 Introduction 2"
_CONTENTS_TITLES = frozenset({"contents", "table of contents", "short contents"})
_ENTRY_NUMBER = re.compile(r"^(\d{1,3}(?:\.\d{1,3})*\.?)\s")
_LEADERS = re.compile(r"(?:\.\s?){4,}\s*(?:\d{1,4}|[ivx]{1,6})\s*$", re.I)
# A section number as _norm leaves it ("2.1." -> "2 1"), with a word before it or not.
_SECTION_NUMBER = re.compile(r"(?:(?:chapter|section|part|appendix) )?(?:[a-z]|\d{1,3})(?: \d{1,3})*")
_NOT_WORD = re.compile(r"\W+")
_SQUASH = re.compile(r"[\W_]+")
_DIGITS = re.compile(r"\d+")
_HYPHENATED = re.compile(r"[A-Za-z]{2}-$")
_WORD = re.compile(r"[a-z]+(?:-[a-z]+)*")
_SENTENCE_END = (".", ":", "!", "?", ";", ")", '"', "”", "’")
_DEFAULT_TITLES = ("untitled", "microsoft word", "document", "slide 1", "powerpoint presentation")


@dataclass(slots=True)
class _Heading:
    level: int
    title: str
    page: int | None        # None: an entry of the printed contents, placed where its title is printed


def pdf_to_markdown(data: bytes) -> Converted | Unread:
    """The document's text as markdown (module docstring), or why there is none."""
    # Load-time deferral (not a cycle): pypdf's import is ~90 ms that only a PDF needs.
    from pypdf import PdfReader
    from pypdf.errors import DependencyError, FileNotDecryptedError, PyPdfError

    if not data.strip():
        return Unread("empty file (no text to import)", empty=True)
    if b"%PDF-" not in data[:1024]:
        return Unread("not a PDF (it does not start with %PDF-): rename it to its real type, "
                      "or re-save it as PDF")
    with _quiet():
        try:
            reader = PdfReader(io.BytesIO(data), strict=False)
            if reader.is_encrypted:
                try:
                    opened = reader.decrypt("")
                except DependencyError:
                    return Unread("encrypted PDF whose cipher needs the 'cryptography' package: "
                                  "pip install cryptography, or save an unencrypted copy")
                if not opened:
                    return Unread("encrypted PDF that needs a password: save an unencrypted copy "
                                  "(e.g. qpdf --password=... --decrypt in.pdf out.pdf) and import that")
            count = len(reader.pages)
        except (FileNotDecryptedError, PyPdfError, ValueError, KeyError, TypeError, AttributeError,
                IndexError, RecursionError, OSError) as exc:
            return Unread(f"not a readable PDF ({_short(exc)})")
        pages: list[list[str]] = []
        unread: list[int] = []
        for n in range(count):
            try:
                text = reader.pages[n].extract_text() or ""
            except Exception:  # noqa: BLE001 - a damaged page is left out and named, the rest is read
                unread.append(n + 1)
                text = ""
            pages.append([_line(ln) for ln in text.splitlines()])
        contents = _contents_pages(pages)
        headings = list(_outline(reader)) or _printed_contents(pages, contents)
        title = _title(reader)
    if count and len(unread) == count:
        return Unread(f"not a readable PDF (none of its {count} pages could be read)")
    if not any(ln for page in pages for ln in page):
        return Unread("PDF without a text layer (scanned pages or images of text): "
                      "run OCR on it first (e.g. ocrmypdf in.pdf out.pdf) and import the result", empty=True)
    pages = _without_furniture(pages, contents)
    markdown = _markdown(pages, headings)
    notices = (f"{len(unread)} of {count} pages could not be read and were left out "
               f"(pages {_ranges(unread)})",) if unread else ()
    return Converted(title, markdown, {"converted_from": "pdf", "pages": count}, notices)


def _line(text: str) -> str:
    """A line as its letters: ligatures spelled out, soft hyphens and NULs dropped, spaces one."""
    return " ".join(text.translate(_LIGATURES).split())


@contextmanager
def _quiet() -> Iterator[None]:
    """pypdf logs each oddity of a damaged file as a warning; Python prints those on stderr
    when nothing configured logging, a line per object.  The import's report says what
    matters (a page left out, a file refused)."""
    log = logging.getLogger("pypdf")
    level, log.level = log.level, logging.ERROR + 10
    try:
        yield
    finally:
        log.setLevel(level)


def _short(exc: BaseException) -> str:
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text if len(text) <= 120 else text[:117] + "..."


def _ranges(numbers: list[int]) -> str:
    out: list[str] = []
    for n in numbers:
        if out and out[-1].split("-")[-1] == str(n - 1):
            out[-1] = f"{out[-1].split('-')[0]}-{n}"
        else:
            out.append(str(n))
    return ", ".join(out)


def _title(reader: object) -> str | None:
    try:
        meta = reader.metadata  # type: ignore[attr-defined]
        title = " ".join(str(meta.title or "").split()) if meta is not None else ""
    except Exception:  # noqa: BLE001 - a damaged information dictionary: no title, the text is read
        return None
    if not title or title.lower().startswith(_DEFAULT_TITLES) or "\ufffd" in title:
        return None
    return title


def _outline(reader: object) -> Iterator[_Heading]:
    """The outline's entries in document order with their depth (1 = top) and page index;
    an entry pointing nowhere (an external link, a damaged destination) is left out."""
    try:
        outline = reader.outline  # type: ignore[attr-defined]
    except Exception:  # noqa: BLE001 - a damaged outline: the text without headings
        return

    def walk(items: list[object], level: int) -> Iterator[_Heading]:
        for item in items:
            if isinstance(item, list):
                yield from walk(item, level + 1)
                continue
            try:
                page = reader.get_destination_page_number(item)  # type: ignore[attr-defined]
                title = _line(str(item.title))  # type: ignore[attr-defined]
            except Exception:  # noqa: BLE001 - see the docstring
                continue
            if page is not None and page >= 0 and title:
                yield _Heading(level, title, page)

    yield from walk(outline if isinstance(outline, list) else [], 1)


def _key(line: str) -> str:
    return _DIGITS.sub("#", _NOT_WORD.sub(" ", line.lower())).strip()


def _without_furniture(pages: list[list[str]], contents: frozenset[int] = frozenset()) -> list[list[str]]:
    """Each page without its running header and footer lines and bare page numbers, and
    without table-of-contents and index lines (module docstring).  At each edge at most two
    lines go, from the edge inwards: the outermost when it repeats on ``RUNNING_MIN_PAGES``
    pages with its digits read as one ("Chapter 2: Naming 17"), the next only when it
    repeats as written (a body line that differs by a number stays)."""
    pages = [[ln for ln in page if ln] for page in pages]
    seen: Counter[tuple[str, int, str]] = Counter()
    for page in pages:
        for edge in ("top", "bottom"):
            ends = page[:2] if edge == "top" else page[::-1][:2]
            seen.update({(edge, k, _key(ln) if k == 0 else ln) for k, ln in enumerate(ends)})
    out: list[list[str]] = []
    for n, page in enumerate(pages):
        kept = list(page)
        for edge in ("top", "bottom"):
            for k in range(2):
                if not kept:
                    break
                ln = kept[0] if edge == "top" else kept[-1]
                repeated = seen[(edge, k, _key(ln) if k == 0 else ln)] >= RUNNING_MIN_PAGES and _key(ln)
                if not (_PAGE_NUMBER.match(ln) or repeated):
                    break
                kept.pop(0 if edge == "top" else -1)
        on_contents = n in contents
        out.append([ln for ln in kept if not (_LEADERS.search(ln) or (on_contents and (
            _NUMBERED_ENTRY.match(ln) or ln.lower().strip(" :") in _CONTENTS_TITLES)))])
    return out


def _norm(text: str) -> str:
    return _NOT_WORD.sub(" ", text.lower()).strip()


def _matches(got: str, want: str) -> bool:
    """A line (``_norm``-ed) is a heading's title as a page prints it: alone, or after its
    section number ("2.1 Naming", "Chapter 3. Naming", "A.2 Naming" for the entry "Naming")."""
    if got == want or _SQUASH.sub("", got) == _SQUASH.sub("", want):   # "ignore_missing" / "ignoremissing"
        return True
    return got.endswith(" " + want) and bool(_SECTION_NUMBER.fullmatch(got[: -len(want)].strip()))


def _contents_pages(pages: list[list[str]]) -> frozenset[int]:
    """The pages of the table of contents a PDF prints: the first run of pages holding three
    lines or more that end in dot leaders and a page number (an index at the end, or a
    chapter's own contents after its first page, is not it)."""
    out: list[int] = []
    for n, page in enumerate(pages):
        if sum(1 for ln in page if _LEADERS.search(ln)) >= 3:
            if out and out[-1] != n - 1:
                break
            out.append(n)
        elif out:
            break
    return frozenset(out)


def _printed_contents(pages: list[list[str]], contents: frozenset[int]) -> list[_Heading]:
    """A PDF without an outline: the entries of the table of contents it prints (``contents``:
    lines ending in dot leaders and a page number, and numbered ones ending in a page number),
    in order, each nested by its number's depth ("3.1.2" is a third level); fewer than three
    entries are none."""
    out: list[_Heading] = []
    for n in sorted(contents):
        for ln in pages[n]:
            m = _LEADERS.search(ln)
            title = ln[: m.start()].strip(" .") if m else ""
            if not m and (e := _NUMBERED_ENTRY.match(ln)) is not None:
                title = e.group(1)
            if title:
                number = _ENTRY_NUMBER.match(title)
                level = len(number.group(1).strip(".").split(".")) if number else 1
                out.append(_Heading(min(level, 6), title, None))
    return out if len(out) >= 3 else []


def _place(lines: list[tuple[int, str]], headings: list[_Heading]) -> dict[int, list[tuple[_Heading, int]]]:
    """Where each heading goes: {line index: [(heading, lines it replaces)]}, 0 = inserted
    before that line.  An outline entry is looked for on its page and the next, and opens its
    page when its title is not printed there; an entry of the printed contents (no page) is
    looked for in the rest of the document and left out when it is not found."""
    first_of: dict[int, int] = {}
    for i, (page, _) in enumerate(lines):
        first_of.setdefault(page, i)
    norms: list[str | None] = [None] * len(lines)

    def norm(i: int) -> str:
        got = norms[i]
        if got is None:
            got = norms[i] = _norm(lines[i][1])
        return got

    at: dict[int, list[tuple[_Heading, int]]] = {}
    cursor = 0
    for h in headings:
        want = _norm(h.title)
        if not want:
            continue
        if h.page is None:
            start, end = cursor, len(lines)
        else:
            start = end = max(cursor, first_of.get(h.page, cursor))
            while end < len(lines) and lines[end][0] <= h.page + 1:
                end += 1
        found = None
        for i in range(start, end):
            got = norm(i)
            if _matches(got, want):
                found = (i, 1)
                break
            # a title wrapped over two lines; the contents' titles (numbered) start as the line does
            if (got and i + 1 < end and (h.page is not None or want.startswith(got))
                    and _matches(f"{got} {norm(i + 1)}", want)):
                found = (i, 2)
                break
        if found is not None:
            at.setdefault(found[0], []).append((h, found[1]))
            cursor = found[0] + found[1]
        elif h.page is not None:
            i = start if start < len(lines) else len(lines)
            at.setdefault(i, []).append((h, 0))
            cursor = i
    return at


def _vocabulary(lines: Iterable[str]) -> tuple[set[str], set[str]]:
    """The document's words and hyphenated compounds as printed inside lines (lowercase; the
    pieces of a word broken over a line end are not words)."""
    words: set[str] = set()
    compounds: set[str] = set()
    broken = False
    for ln in lines:
        found = _WORD.findall(ln.lower())
        if broken and found:
            found = found[1:]
        broken = bool(_HYPHENATED.search(ln))
        if broken and found:
            found = found[:-1]
        for w in found:
            (compounds if "-" in w else words).add(w)
    return words, compounds


def _keeps_hyphen(head: str, tail: str, words: set[str], compounds: set[str]) -> bool:
    """A word broken at a line-end hyphen ("head-" / "tail") keeps its hyphen when it is a
    compound: one already ("day-to-" / "day"), one the document prints whole elsewhere
    ("comma-separated"), or two words of its own ("tweaked" / "codebook") that it never
    prints joined; else the hyphen is the typesetter's ("man-" / "agement", "re-" / "turn")."""
    head, tail = head.lower(), _WORD.match(tail.lower())
    if tail is None:
        return False
    last = head.rsplit("-", 1)[-1]
    tail_word = tail.group(0)
    if "-" in head or "-" in tail_word:         # "day-to-" / "day", "per-" / "function-call"
        return True
    if f"{last}{tail_word}" in words:
        return False
    return f"{last}-{tail_word}" in compounds or (len(last) >= 3 and last in words and tail_word in words)


def _markdown(pages: list[list[str]], headings: list[_Heading]) -> str:
    lines = [(n, ln) for n, page in enumerate(pages) for ln in page]
    at = _place(lines, headings)
    lengths = sorted(len(ln) for _, ln in lines if len(ln) >= 10) or [80]
    full = lengths[int(len(lengths) * 0.75)]         # a full line's length in this document
    blocks: list[str] = []
    para: list[str] = []

    def flush() -> None:
        if para:
            blocks.append(" ".join(para))
            para.clear()

    words, compounds = _vocabulary(ln for _, ln in lines)

    def add(text: str) -> None:
        if para and _HYPHENATED.search(para[-1]) and text[:1].islower():
            first, rest = (text.split(" ", 1) + [""])[:2]
            head = para[-1].rsplit(" ", 1)[-1][:-1]
            para[-1] = (para[-1] if _keeps_hyphen(head, first, words, compounds) else para[-1][:-1]) \
                + escape_markdown(first)
            if rest:
                para.append(escape_markdown(rest))
            return
        para.append(escape_markdown(text))

    skip = 0
    for i, (_, line) in enumerate(lines + [(-1, "")]):
        for h, used in at.get(i, ()):
            flush()
            blocks.append("#" * min(h.level, 6) + " " + escape_markdown(h.title))
            skip = max(skip, used)
        if i == len(lines):
            break
        if skip:
            skip -= 1
            continue
        if line[:1] in _BULLETS and (len(line) == 1 or line[1] == " "):
            flush()
            para.append("-")
            line = line[1:].strip()
            if not line:
                continue
        add(line)
        if len(line) < 0.8 * full and line.endswith(_SENTENCE_END):
            flush()
    flush()
    return "\n\n".join(b for b in blocks if b.strip(" -"))
