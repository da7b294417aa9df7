"""Walk an import root and turn its files into record drafts, refusing what is unsafe.

Security (reliability.md R13, CWE-22): every file is resolved and must stay inside the
resolved root; a symlink that leaves the root is rejected, never followed.  A file
larger than ``max_bytes`` is rejected with a reason; the rest of the import goes on.
Text is UTF-8, else the encoding given (``--encoding``), else UTF-16 or UTF-32 named by a
byte-order mark, else the one detected (``memo.ingest.legacy_text``: a Windows code page whose
reading is one Latin-script language's text, else charset-normalizer's guess; recorded in the
record's meta: ``decode_text``); a file nothing decodes is
rejected.  Files of other types, and empty (or whitespace-only) files, are ignored, each
with its reason (``why_ignored``).  A file imported with part of it left out (a front
matter ``date`` memo cannot read) carries a notice saying so (``notices``).

Hostile trees (issue 9.3): one item never stops or hangs the walk.

* The walk is iterative (no recursion limit) and stops ``MAX_FOLDER_DEPTH`` folders below
  the root: a deeper folder is reported, not walked.
* A FIFO, socket or device is rejected from its ``stat`` mode and never opened (opening a
  FIFO blocks until a writer comes); files are opened with ``O_NONBLOCK`` and checked
  again with ``fstat`` in case one was swapped in between.
* A symlink loop is rejected ("symlink loop"), not resolved forever.
* A file or folder name that is not valid UTF-8 (Python hands it over with surrogate
  escapes, which SQLite and JSON output cannot hold) is rejected and shown with ``\\xNN``
  escapes (``safe_name``).
"""

from __future__ import annotations

import codecs
import errno
import fnmatch
import os
import re
import stat
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import BinaryIO

from memo.errors import ValidationError
from memo.ingest.converted import DOCUMENT_BYTES_PER_TEXT_BYTE, Unread
from memo.ingest.documents import CONVERTERS, DOCUMENT_EXTENSIONS
from memo.ingest.front_matter import with_front_matter
from memo.ingest.html_text import HTML_EXTENSIONS, html_to_markdown
from memo.ingest.legacy_text import detect_encoding
from memo.ingest.markdown_parse import first_heading, front_matter
from memo.ingest.split import MARKDOWN_EXTENSIONS
from memo.ingest.split_code import CODE_EXTENSIONS
from memo.ingest.split_markdown import looks_like_markdown
from memo.stored import RecordDraft
from memo.text.tags import with_inline_tags
from memo.text.when import event_date
from memo.types import TURN_KINDS

DEFAULT_MAX_BYTES = 5 * 1024 * 1024
MAX_FOLDER_DEPTH = 64             # folders below the import root that are walked
TEXT_EXTENSIONS = {".md", ".markdown", ".mdx", ".txt", ".text", ".rst", ".org", ""}
_SKIP_DIRS = {".git", ".hg", ".svn", "node_modules", "__pycache__", ".venv", "venv", ".tox", ".mypy_cache"}
_BAD_NAME = "name is not valid UTF-8 (shown with \\x escapes); rename it to import it"


@dataclass(frozen=True, slots=True)
class FileItem:
    """One file found under the root: a draft, or a rejection reason, or ignored."""

    rel: str
    draft: RecordDraft | None = None
    rejected: str | None = None
    ignored: bool = False
    why_ignored: str | None = None    # with ignored: the reason, for the import's report
    notices: tuple[str, ...] = ()     # with a draft: what was left out of it, for the import's report
    empty: bool = False               # ignored because it holds no text (an emptied file's record is reported)


class NotRegularFile(ValueError):
    """``open_regular`` found a FIFO, socket, device or folder: the message says which."""


def inside(path: Path, root: Path) -> bool:
    return path == root or path.is_relative_to(root)


def safe_name(name: str) -> str:
    """``name`` printable and storable: bytes that were not UTF-8 (surrogate escapes)
    become ``\\xNN``; a valid name is returned unchanged."""
    try:
        name.encode("utf-8")
        return name
    except UnicodeEncodeError:
        return os.fsencode(name).decode("utf-8", "backslashreplace")


def is_valid_name(name: str) -> bool:
    return safe_name(name) == name


def file_type(mode: int) -> str:
    """What a non-regular file is, for a rejection reason."""
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode):
        return "a character device"
    if stat.S_ISBLK(mode):
        return "a block device"
    if stat.S_ISDIR(mode):
        return "a folder"
    return "not a regular file"


def not_regular_reason(mode: int) -> str:
    return f"{file_type(mode)}, not a regular file: skipped, not opened"


def open_regular(path: str | Path) -> BinaryIO:
    """Open a regular file for reading without ever blocking on a FIFO or a device:
    ``O_NONBLOCK`` (a FIFO opens at once instead of waiting for a writer) and an
    ``fstat`` check on the open descriptor.  Raises ``NotRegularFile`` (a ValueError)
    for anything else, ``OSError`` when it cannot be opened."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0)
    fd = os.open(path, flags)
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise NotRegularFile(not_regular_reason(mode))
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def gunzipped(fh: BinaryIO) -> BinaryIO:
    """``fh`` itself, or read through gzip when it starts with gzip's magic bytes (so a
    ``.jsonl.gz`` is read like its ``.jsonl``; the name is not trusted).  Closing the
    result closes ``fh``.  Decompression is streamed: ``readline(limit)`` on the result
    inflates at most about ``limit`` bytes, so a line cap holds for a gzip bomb too."""
    magic = fh.peek(2)[:2] if hasattr(fh, "peek") else b""
    if magic != b"\x1f\x8b":
        return fh
    import gzip

    gz = gzip.GzipFile(fileobj=fh, mode="rb")
    gz.myfileobj = fh      # what gzip.open(filename) does: closing gz closes fh too
    return gz  # type: ignore[return-value]


def regular_file_problem(path: str | Path) -> str | None:
    """Why ``path`` cannot be read as a regular file (from ``stat``, without opening
    it), or None."""
    try:
        mode = os.stat(path).st_mode
    except OSError as exc:
        return _os_reason(exc)
    return None if stat.S_ISREG(mode) else not_regular_reason(mode)


def _os_reason(exc: OSError) -> str:
    if exc.errno == errno.ELOOP:
        return "symlink loop (the link never reaches a file)"
    return f"cannot read: {exc.strerror or exc}"


def excluded_reason(pattern: str) -> str:
    """Why a file or folder ``pattern`` left out is listed with the ignored ones."""
    return f"excluded (--exclude {pattern!r})"


def excluded_by(rel: str, name: str, patterns: tuple[str, ...]) -> str | None:
    """The first of ``patterns`` (``memo import --exclude``) that leaves out the file or folder
    at ``rel`` (relative to the root, POSIX) named ``name``: a pattern without ``/`` matches a
    name anywhere (``Templates``, ``*.canvas``), one with ``/`` the path from the root
    (``Daily/2023-*``; a folder's match leaves out everything under it)."""
    for pat in patterns:
        if fnmatch.fnmatchcase(rel if "/" in pat else name, pat.strip("/")):
            return pat
    return None


def list_files(root: Path, errors: list[tuple[str, str]] | None = None,
               passed: list[tuple[str, str]] | None = None, exclude: tuple[str, ...] = ()) -> list[tuple[Path, str]]:
    """(path, path relative to root) of every file, symlink or other non-folder entry,
    sorted; hidden files and folders and tool folders are passed over, each added to
    ``passed`` as (path relative to root, why) so the import lists it with the ignored
    files (a folder once, not its contents); symlinked directories are reported as files
    so the caller rejects (outside) or ignores (inside: avoids loops) them.
    A FIFO, socket or device is listed too (never opened here): ``read_file`` rejects it.
    ``exclude``: files and folders ``excluded_by`` leaves out, passed over with the pattern.

    The walk is iterative.  A folder that is not walked is added to ``errors`` as
    (folder relative to root, reason) so a caller can tell an incomplete listing from
    deleted files: one that cannot be listed, one more than ``MAX_FOLDER_DEPTH`` levels
    below the root, or one whose name is not valid UTF-8 (shown escaped)."""
    if not root.is_dir():
        return [(root, root.name)]

    def skip(folder: Path, reason: str) -> None:
        if errors is not None:
            errors.append((safe_name(folder.relative_to(root).as_posix()), reason))

    def pass_over(path: Path, reason: str) -> None:
        if passed is not None:
            passed.append((safe_name(path.relative_to(root).as_posix()), reason))

    out: list[tuple[Path, str]] = []
    stack: list[tuple[Path, int]] = [(root, 0)]
    while stack:
        folder, depth = stack.pop()
        try:
            with os.scandir(folder) as it:
                entries = sorted(it, key=lambda e: e.name)
        except OSError as exc:
            skip(folder, f"cannot list this folder ({exc.strerror or exc})")
            continue
        subfolders = []
        for entry in entries:
            name = entry.name
            path = folder / name
            try:
                is_dir = entry.is_dir(follow_symlinks=False)
            except OSError:
                is_dir = False
            if exclude and (pat := excluded_by(path.relative_to(root).as_posix(), name, exclude)) is not None:
                pass_over(path, excluded_reason(pat))
                continue
            if name.startswith("."):
                pass_over(path, "hidden folder: not walked (import it by its own path to include it)" if is_dir
                          else "hidden file: not imported (import it by its own path to include it)")
                continue
            if not is_dir:
                out.append((path, path.relative_to(root).as_posix()))
                continue
            if name in _SKIP_DIRS:
                pass_over(path, "tool folder (dependencies, caches, environments): not walked")
                continue
            if not is_valid_name(name):
                skip(path, f"folder {_BAD_NAME}; not walked")
            elif depth + 1 > MAX_FOLDER_DEPTH:
                skip(path, f"folder nested deeper than {MAX_FOLDER_DEPTH} levels below the import root; not walked")
            else:
                subfolders.append((path, depth + 1))
        stack.extend(reversed(subfolders))
    return sorted(out, key=lambda t: t[1])


def kind_for(path: Path) -> str | None:
    suffix = path.suffix.lower()
    if suffix in CODE_EXTENSIONS:
        return "code"
    if suffix in TEXT_EXTENSIONS or suffix in HTML_EXTENSIONS or suffix in DOCUMENT_EXTENSIONS:
        return "doc"
    return None


def reads_front_matter(path: Path, kind: str) -> bool:
    """Whether the file's front matter gives its record's title, date and tags
    (``memo.ingest.front_matter``): a markdown file's, and a conversation's whatever its
    name (its splitter never makes the block a turn, so its fields would be lost); never
    code's, nor another text file's (its ``---`` lines are its text)."""
    return kind != "code" and (path.suffix.lower() in MARKDOWN_EXTENSIONS or kind in TURN_KINDS)


def _title(text: str, path: Path, kind: str, front: bool) -> str:
    """A title for a file whose front matter (``front``: read) names none: a markdown
    text's first heading, else the file's name; a markdown file's without its extension
    (a note is known by its name: "Marta Nowak", not "Marta Nowak.md", as Obsidian shows it)."""
    if front:
        _, text = front_matter(text)
    name = path.stem if path.suffix.lower() in MARKDOWN_EXTENSIONS and path.stem else path.name
    if kind != "code" and looks_like_markdown(text):
        return first_heading(text) or name
    return name


# A file named by its date: Obsidian's daily notes ("2024-03-05.md"), Jekyll's posts
# ("2024-03-05-launch.md"), journals ("2024-03-05 standup.txt").  The date starts the name
# and ends at its end or at a character that is not a digit.
_NAME_DATE = re.compile(r"(\d{4})[-_.](\d{2})[-_.](\d{2})(?!\d)")


def date_in_name(name: str) -> str | None:
    """The calendar date a file's name starts with, as ISO 8601 (``2024-03-05``), else None
    (no date there, or not a real day: ``2024-02-30``).  A file without a date of its own
    (none given, none in its front matter) is dated by its name: a daily note says nothing
    of its day but its name."""
    m = _NAME_DATE.match(name)
    return event_date("-".join(m.groups())) if m else None


def _resolve(path: Path) -> tuple[Path | None, str | None]:
    try:
        return path.resolve(), None
    except RuntimeError:               # Python 3.11 pathlib: "Symlink loop from ..."
        return None, "symlink loop (the link never reaches a file)"
    except OSError as exc:
        return None, _os_reason(exc)


def _ignored(rel: str, path: Path) -> FileItem:
    suffix = path.suffix.lower()
    what = f"'{suffix}' files" if suffix else "files with this name"
    return FileItem(rel, ignored=True, why_ignored=f"{what} are not imported (markdown, text, HTML, PDF, Word, EPUB and code are; "
                                                   "--kind does not change which files are read)")


def check_encoding(encoding: str | None) -> str | None:
    """``encoding`` as Python names it (``latin-1`` -> ``iso8859-1``), None for detection;
    an unknown name is a ValidationError (before any file is read)."""
    if encoding is None or encoding.strip().lower() in ("", "auto"):
        return None
    try:
        return codecs.lookup(encoding.strip()).name
    except LookupError:
        raise ValidationError(f"unknown encoding {encoding!r}",
                              hint="use a Python codec name such as utf-8, latin-1, cp1252, shift_jis, or auto") from None


def decode_text(data: bytes, encoding: str | None = None) -> tuple[str, dict[str, object]] | str:
    """(text, provenance) or a rejection reason.

    With ``encoding`` (a name from ``check_encoding``) the bytes are decoded with it, strictly.
    Without: UTF-8 (a BOM is dropped); bytes that are not UTF-8 go to charset-normalizer's
    detection, and the text is kept only when it finds an encoding that decodes the whole
    file.  The provenance (stored in the record's meta) names a non-UTF-8 encoding and how
    it was chosen: ``{"encoding": "cp1252", "encoding_source": "detected"}``."""
    if encoding is not None:
        codec = "utf-8-sig" if encoding == "utf-8" else encoding
        try:
            text = data.decode(codec)
        except UnicodeDecodeError as exc:
            return f"not {encoding} text (byte {exc.start}; --encoding {encoding})"
        return text, ({} if encoding == "utf-8" else {"encoding": encoding, "encoding_source": "--encoding"})
    try:
        return data.decode("utf-8-sig"), {}
    except UnicodeDecodeError as exc:
        first_bad = exc.start
    mended = _mostly_utf8(data)
    if mended is not None:
        return mended
    name = detect_encoding(data)
    if name is None:
        return (f"not UTF-8 text (byte {first_bad}) and no other encoding fits; "
                "pass --encoding NAME (e.g. latin-1) if you know it")
    try:
        text = data.decode(name)
    except UnicodeDecodeError:
        return f"not UTF-8 text (byte {first_bad}); detected {name} does not decode it, pass --encoding NAME"
    return text, {"encoding": name, "encoding_source": "detected"}


# A UTF-8 file with a few stray bytes (a paste from a legacy editor, a truncated copy):
# the whole file was rejected, and the hint to pass --encoding latin-1 would turn every
# real UTF-8 character of it (é, €, 日本語) into two or three wrong ones.  Its text is
# kept with U+FFFD for each bad byte, and the import says so.
MAX_STRAY_BYTES = 16


def _mostly_utf8(data: bytes) -> tuple[str, dict[str, object]] | None:
    """(text, provenance) when ``data`` is UTF-8 but for at most ``MAX_STRAY_BYTES`` bytes
    (and at most 1 in 1,000) and holds real UTF-8 beyond ASCII, else None (detection then
    picks a legacy encoding for text that is not UTF-8 at all)."""
    text = data.decode("utf-8-sig", errors="replace")
    bad = text.count("\ufffd") - data.count("\ufffd".encode())
    if not 0 < bad <= min(MAX_STRAY_BYTES, max(1, len(data) // 1000)):
        return None
    if not any(ord(c) > 127 and c != "\ufffd" for c in text):
        return None                  # ASCII and a stray byte: no evidence it is UTF-8
    return text, {"encoding": "utf-8", "encoding_source": f"{bad} invalid byte(s) replaced by U+FFFD"}


def _bom_encoding(data: bytes) -> str | None:
    """'utf-32' or 'utf-16' when ``data`` starts with that byte-order mark (the codec reads
    the mark and the byte order from it), else None.  UTF-32's little-endian mark begins
    with UTF-16's, so it is asked first."""
    if data.startswith((codecs.BOM_UTF32_LE, codecs.BOM_UTF32_BE)):
        return "utf-32"
    if data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        return "utf-16"
    return None


def read_file(path: Path, rel: str, root: Path, template: RecordDraft, max_bytes: int,
              kind_override: str | None, encoding: str | None = None) -> FileItem:
    if not is_valid_name(rel):
        return FileItem(safe_name(rel), rejected=f"file {_BAD_NAME}")
    real, why = _resolve(path)
    if real is None:
        return FileItem(rel, rejected=why)
    if path.is_symlink() and not inside(real, root):
        return FileItem(rel, rejected="symlink points outside the import root")
    if not inside(real, root):
        return FileItem(rel, rejected="path is outside the import root")
    kind = kind_for(real if path.is_symlink() else path)
    try:
        st = os.stat(real)             # the type from its mode: a FIFO is never opened
    except OSError as exc:
        return _ignored(rel, path) if kind is None else FileItem(rel, rejected=_os_reason(exc))
    if stat.S_ISDIR(st.st_mode):
        return FileItem(rel, ignored=True,  # symlinked directory inside the root: avoid loops
                        why_ignored="symlink to a folder inside the import root: not followed (the folder is walked itself)")
    if not stat.S_ISREG(st.st_mode):
        return FileItem(rel, rejected=not_regular_reason(st.st_mode))
    if kind is None:
        return _ignored(rel, path)
    convert = CONVERTERS.get(path.suffix.lower())
    # A PDF's, Word document's or e-book's bytes are mostly fonts and images: --max-bytes caps its text.
    file_cap = max_bytes * DOCUMENT_BYTES_PER_TEXT_BYTE if convert else max_bytes
    cap = (f"over the {file_cap}-byte cap (--max-bytes"
           f"{f' x {DOCUMENT_BYTES_PER_TEXT_BYTE} for a PDF, Word document or EPUB' if convert else ''})")
    if st.st_size > file_cap:
        return FileItem(rel, rejected=f"file is {st.st_size} bytes, {cap}")
    try:
        with open_regular(real) as fh:
            data = fh.read(file_cap + 1)
    except NotRegularFile as exc:
        return FileItem(rel, rejected=str(exc))
    except OSError as exc:
        return FileItem(rel, rejected=_os_reason(exc))
    if len(data) > file_cap:
        return FileItem(rel, rejected=f"file grew past {file_cap} bytes while read, {cap}")
    page_title = None
    doc_notices: tuple[str, ...] = ()
    if convert is not None:
        read = convert(data)
        if isinstance(read, Unread):     # scanned pages, an empty document: as an empty file, not a failed input
            return (FileItem(rel, ignored=True, why_ignored=read.reason, empty=True) if read.empty
                    else FileItem(rel, rejected=read.reason))
        text, page_title, doc_notices = read.markdown, read.title, read.notices
        provenance: dict[str, object] = dict(read.meta)
        if len(text.encode()) > max_bytes:
            return FileItem(rel, rejected=f"the document's text is {len(text.encode())} bytes, over the "
                                          f"{max_bytes}-byte cap (--max-bytes)")
    else:
        # UTF-16 and UTF-32 text is full of NUL bytes: with --encoding, or a byte-order mark
        # that names one of them (Windows tools write such files), decode first and call the
        # file binary only for a NUL character in the decoded text.
        bom = _bom_encoding(data) if encoding is None else None
        if b"\x00" in data and encoding is None and bom is None:
            return FileItem(rel, rejected="binary file (contains NUL bytes)")
        decoded = decode_text(data, encoding or bom)
        if isinstance(decoded, str):
            return FileItem(rel, rejected=decoded)
        text, provenance = decoded
        if "\x00" in text:
            return FileItem(rel, rejected="binary file (contains NUL characters)")
        if bom is not None:
            provenance = {"encoding": bom, "encoding_source": "byte-order mark"}
    if path.suffix.lower() in HTML_EXTENSIONS:
        # A page is read as the markdown of its text (memo.ingest.html_text): its headings
        # give the passages' sections, as a markdown file's do.
        page_title, text = html_to_markdown(text)
        provenance = {**provenance, "converted_from": "html"}
        if not text.strip():
            return FileItem(rel, ignored=True, why_ignored="HTML page without text (only markup, scripts or "
                                                           "navigation)", empty=True)
    if not text.strip():
        # Skipped, not rejected: a package's empty __init__.py is not a failed input, and a
        # rejection would make a whole folder import exit 5 (issue 32).
        return FileItem(rel, ignored=True, why_ignored="empty file (no text to import)", empty=True)
    kind = kind_override or kind
    draft = replace(template, body=text, kind=kind, import_path=rel, ext_id=None,  # type: ignore[arg-type]
                    meta={**template.meta, **provenance} if provenance else template.meta)
    front = reads_front_matter(path, kind)
    if front and not front_matter(text)[1].strip():
        # An Obsidian placeholder or a template's stub: nothing to search, as an empty file
        # (it was rejected, so every import of the folder exited 5).
        return FileItem(rel, ignored=True, why_ignored="only front matter (no text to import)", empty=True)
    notices: tuple[str, ...] = doc_notices
    mended = str(provenance.get("encoding_source", "")) if provenance.get("encoding") == "utf-8" else ""
    if mended:
        notices = (f"not valid UTF-8 in places: {mended}; the rest of the text is imported as written",)
    named = date_in_name(path.name) if kind != "code" and not draft.event_at else None
    if front:                       # the caller's title and date win, its tags come first
        draft, front_notices = with_front_matter(draft, dated_by=f"its name ({named})" if named else None)
        notices += front_notices
    if path.suffix.lower() in MARKDOWN_EXTENSIONS and kind != "code":    # Obsidian's #tags in the text
        draft = replace(draft, tags=with_inline_tags(draft.tags, text))
    if named and not draft.event_at:
        draft = replace(draft, event_at=named, meta={**draft.meta, "event_at_source": "file name"})
    if not draft.title:
        # A document without a title of its own is known by its file's name ("nettle.pdf"):
        # its first heading is a chapter's ("1. Introduction"), not the document's.
        fallback = path.name if convert is not None else _title(text, path, kind, front)
        draft = replace(draft, title=page_title or fallback)
    return FileItem(rel, draft=draft, notices=notices)


def iter_files(root: Path, template: RecordDraft, *, max_bytes: int = DEFAULT_MAX_BYTES,
               kind_override: str | None = None, encoding: str | None = None) -> Iterator[FileItem]:
    for path, rel in list_files(root):
        yield read_file(path, rel, root, template, max_bytes, kind_override, check_encoding(encoding))
