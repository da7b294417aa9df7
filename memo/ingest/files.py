"""Walk an import root and turn its files into record drafts, refusing what is unsafe.

Security (reliability.md R13, CWE-22): every file is resolved and must stay inside the
resolved root; a symlink that leaves the root is rejected, never followed.  A file
larger than ``max_bytes`` or not valid UTF-8 text is rejected with a reason; the rest
of the import goes on.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path

from memo.ingest.split_code import CODE_EXTENSIONS
from memo.ingest.split_markdown import front_matter, looks_like_markdown
from memo.types import RecordDraft

DEFAULT_MAX_BYTES = 5 * 1024 * 1024
TEXT_EXTENSIONS = {".md", ".markdown", ".mdx", ".txt", ".text", ".rst", ".org", ""}
_SKIP_DIRS = {".git", ".hg", ".svn", "node_modules", "__pycache__", ".venv", "venv", ".tox", ".mypy_cache"}


@dataclass(frozen=True, slots=True)
class FileItem:
    """One file found under the root: a draft, or a rejection reason, or ignored."""

    rel: str
    draft: RecordDraft | None = None
    rejected: str | None = None
    ignored: bool = False


def inside(path: Path, root: Path) -> bool:
    return path == root or path.is_relative_to(root)


def list_files(root: Path, errors: list[tuple[str, str]] | None = None) -> list[tuple[Path, str]]:
    """(path, path relative to root) of every regular file or symlink, sorted; hidden
    and tool directories are skipped; symlinked directories are reported as files so
    the caller rejects (outside) or ignores (inside: avoids loops) them.

    os.walk skips a folder it cannot list without a word; ``errors`` collects
    (folder relative to root, reason) for those, so a caller can tell an incomplete
    listing from deleted files."""
    if root.is_file() or root.is_symlink() and not root.is_dir():
        return [(root, root.name)]

    def onerror(exc: OSError) -> None:
        if errors is not None:
            where = Path(exc.filename) if exc.filename else root
            rel = where.relative_to(root).as_posix() if inside(where, root) else str(where)
            errors.append((rel, exc.strerror or str(exc)))

    out: list[tuple[Path, str]] = []
    for dirpath, dirnames, filenames in os.walk(root, onerror=onerror, followlinks=False):
        base = Path(dirpath)
        keep = []
        for d in sorted(dirnames):
            if d in _SKIP_DIRS or d.startswith("."):
                continue
            if (base / d).is_symlink():
                filenames.append(d)
            else:
                keep.append(d)
        dirnames[:] = keep
        for name in sorted(filenames):
            if name.startswith("."):
                continue
            p = base / name
            out.append((p, p.relative_to(root).as_posix()))
    return sorted(out, key=lambda t: t[1])


def kind_for(path: Path) -> str | None:
    suffix = path.suffix.lower()
    if suffix in CODE_EXTENSIONS:
        return "code"
    if suffix in TEXT_EXTENSIONS:
        return "doc"
    return None


def _title(text: str, path: Path, kind: str) -> str:
    if kind != "code" and path.suffix.lower() in {".md", ".markdown", ".mdx"}:
        meta, text = front_matter(text)
        if meta.get("title"):
            return meta["title"]
    if kind != "code" and looks_like_markdown(text):
        for line in text.splitlines():
            if line.startswith("# "):
                return line[2:].strip()
    return path.name


def read_file(path: Path, rel: str, root: Path, template: RecordDraft, max_bytes: int,
              kind_override: str | None) -> FileItem:
    real = path.resolve()
    if path.is_symlink() and not inside(real, root):
        return FileItem(rel, rejected="symlink points outside the import root")
    if not inside(real, root):
        return FileItem(rel, rejected="path is outside the import root")
    if real.is_dir():
        return FileItem(rel, ignored=True)  # symlinked directory inside the root: avoid loops
    kind = kind_for(real if path.is_symlink() else path)
    if kind is None:
        return FileItem(rel, ignored=True)
    try:
        size = real.stat().st_size
        if size > max_bytes:
            return FileItem(rel, rejected=f"file is {size} bytes, over the {max_bytes}-byte cap (--max-bytes)")
        data = real.read_bytes()
    except OSError as exc:
        return FileItem(rel, rejected=f"cannot read: {exc.strerror or exc}")
    if b"\x00" in data:
        return FileItem(rel, rejected="binary file (contains NUL bytes)")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        return FileItem(rel, rejected=f"not UTF-8 text (byte {exc.start})")
    if not text.strip():
        return FileItem(rel, rejected="file is empty")
    kind = kind_override or kind
    draft = replace(template, body=text, kind=kind, title=template.title or _title(text, path, kind),
                    import_path=rel, ext_id=None)  # type: ignore[arg-type]
    return FileItem(rel, draft=draft)


def iter_files(root: Path, template: RecordDraft, *, max_bytes: int = DEFAULT_MAX_BYTES,
               kind_override: str | None = None) -> Iterator[FileItem]:
    for path, rel in list_files(root):
        yield read_file(path, rel, root, template, max_bytes, kind_override)
