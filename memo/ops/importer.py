"""Import a file, a folder, a JSONL file, a BEIR corpus or LoCoMo conversations.

Per input record: same content already in the namespace -> skipped; a live record at the
same import path (and external id) with other content -> superseded by the new one
(updated); otherwise added.  With ``kind`` (``--kind``) the same text stored as another
kind is split anew: the record at its own import path is superseded (updated), one
elsewhere makes it a skip with a notice (``memo.ops.store_batch``).  Inputs that cannot be read or split are rejected with a
reason and the import goes on.  Records are committed in batches of ``batch_size`` per
BEGIN IMMEDIATE: a failure inside a batch rolls that whole batch back (earlier batches
stay), so nothing is ever half-written, and re-running the import resumes (duplicates
are skipped).  A batch also ends at ``BATCH_CHARS`` of record text: a batch of large
records (a folder of 200 KB documents) held ~1.4 GB before its commit at 500 records.

Identity: a file's record is (namespace, import path, external id), and the import path
stored is the file's *absolute* path, so two folders with the same relative layout
(projA/docs/README.md, projB/docs/README.md) imported into one namespace never replace
each other.  A chat export's conversation is (namespace, conversation id) wherever the
export was saved: a version from another export file is superseded or kept as
``memo.ops.chat_versions`` says (a newer export that holds more of it wins; an older one
is skipped with a notice).  A folder's file with the text of a live record whose file is gone
(renamed or moved inside the folder) supersedes that record, which so follows its file
(memo.ops.file_moves).  After a folder import, live records of files that are gone or now
empty are reported (``missing``) and, with ``prune``, forgotten (memo.ops.import_missing).

One item never stops or hangs an import (issue 9.3): FIFOs, sockets and devices are
rejected without being opened, symlink loops, undecodable names and folders more than
``MAX_FOLDER_DEPTH`` deep are rejected (memo.ingest.files); bad JSONL/BEIR lines and
malformed LoCoMo samples or sessions are rejected (memo.ingest.jsonl/beir/locomo); a
JSONL or BEIR line over ``max_bytes`` is rejected without ever being held whole (issue
33.3: every line is read with a bounded ``readline``, gzip included, the progress bar's
count too, so memory is bounded per line, not only per file); a
draft that cannot be split or stored (not valid Unicode...) is rejected before its batch;
an input that breaks off while being read is rejected from that point on.  Only a
database error stops the import (that batch rolled back, as above).

Preparing a record needs no database (checks, splitting, entity mentions): a large input is
prepared by worker processes while this one writes, in input order (``memo.ops.prepare_pool``,
``ImportOptions.workers``).
"""

from __future__ import annotations

import logging
import sqlite3
import time
from collections.abc import Callable, Iterator
from contextlib import closing
from dataclasses import dataclass, replace
from pathlib import Path

from memo.errors import DatasetError, ImportRejected, MemoError, StoreError, ValidationError
from memo.ingest import chat_exports
from memo.ingest.files import (
    DEFAULT_MAX_BYTES,
    FileItem,
    check_encoding,
    excluded_reason,
    inside,
    is_valid_name,
    list_files,
    read_file,
    safe_name,
)
from memo.ingest.jsonl import READ_ERRORS, iter_jsonl, open_lines, read_lines
from memo.ops import export_lines
from memo.ops.add import storable_nul
from memo.ops.export_restore import import_export
from memo.ops.facts import FactImportReport, import_facts
from memo.ops.file_moves import Walked
from memo.ops.import_missing import check_missing
from memo.ops.prepare_pool import default_workers, outcomes
from memo.ops.reports import ImportReport, Rejection
from memo.ops.store_batch import PreparedItem, store_items
from memo.store import kw_postings
from memo.store.connect import write_tx
from memo.stored import FactDraft, RecordDraft
from memo.text.namespaces import check_namespace

FORMATS = ("auto", "files", "jsonl", "beir", "locomo", "chat", "memo-export")
DEFAULT_BATCH = 500
# Text of one batch at most (records' bodies): a batch of typical records (~1 KB) is cut by
# count, one of large records by this.  Its prepared passages, mentions and FTS5's pending
# terms cost ~10x the text in memory; 16M characters keep an import of 200 KB documents
# near 0.3 GB (500 of them held 1.4 GB).
BATCH_CHARS = 16 << 20
MAX_IMPORT_WORKERS = 32      # asked for explicitly (``workers``); by default at most prepare_pool.MAX_WORKERS
PARALLEL_MIN_ITEMS = 5000     # counted inputs this large are prepared by worker processes (about break-even at 5k)
log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class ImportOptions:
    format: str = "auto"
    namespace: str | None = None      # None: 'default' ('locomo' as prefix for --format locomo)
    kind: str | None = None           # override the kind chosen from the file extension
    tags: tuple[str, ...] = ()
    source: str | None = None
    library: str | None = None
    version: str | None = None
    trust: float = 1.0
    author: str | None = None
    max_bytes: int = DEFAULT_MAX_BYTES
    batch_size: int = DEFAULT_BATCH
    root: Path | None = None          # refuse paths outside it (default: the path itself)
    prune: bool = False               # folder import: forget records of files that are gone
    encoding: str | None = None       # files: decode with this codec; None/'auto' = UTF-8, else detected
    workers: int | None = None        # processes preparing records beside the writer; None: by size and cores
    facts: bool = True                # False: records only (no LoCoMo observations / JSONL fact lines)
    exclude: tuple[str, ...] = ()     # folder import: files and folders left out (memo.ingest.files.excluded_by)
    # folder import: only these files (paths relative to the folder), read as the folder import
    # reads them (its symlink and type rules); nothing is reported missing (memo import --watch)
    only: frozenset[str] | None = None


@dataclass(frozen=True, slots=True)
class _Walk:
    """What a folder walk listed, for telling deleted files from ones still there."""

    root: Path
    seen: frozenset[str]              # absolute POSIX paths of every listed file
    errors: tuple[Rejection, ...]     # folders os.walk could not list
    passed: tuple[Rejection, ...] = ()  # hidden and tool files and folders, listed as ignored


@dataclass(frozen=True, slots=True)
class Progress:
    done: int
    total: int | None                 # None when unknown in advance (LoCoMo sessions)
    current: str


def _template(opts: ImportOptions) -> RecordDraft:
    return RecordDraft(body="", kind=opts.kind or "doc", namespace=opts.namespace or "default",  # type: ignore[arg-type]
                       source=opts.source, library=opts.library, version=opts.version,
                       tags=opts.tags, trust=opts.trust, author=opts.author)


def _resolve(path: Path, opts: ImportOptions) -> Path:
    if not path.exists() and not path.is_symlink():
        raise ValidationError(f"no such file or folder: {path}")
    try:
        real = path.resolve()
    except RuntimeError:               # Python 3.11 pathlib: "Symlink loop from ..."
        raise ValidationError(f"{safe_name(str(path))} is a symlink loop") from None
    if not is_valid_name(str(real)):
        raise ValidationError(f"the path {safe_name(str(real))} is not valid UTF-8",
                              hint="rename it (or import its parent folder: the file is then rejected alone)")
    root = opts.root.resolve() if opts.root else None
    if root is not None and not inside(real, root):
        raise ImportRejected(f"{path} is outside the import root {root}",
                             hint="import only files under the configured root (--root)")
    return real


def input_format(path: str | Path, opts: ImportOptions | None = None) -> tuple[Path, str]:
    """(the resolved path, the format ``import_path`` would read it as: ``files``, ``jsonl``,
    ``chat``, ``beir``, ``locomo``, ``memo-export``), with the same errors before any read."""
    opts = opts or ImportOptions()
    real = _resolve(Path(path), opts)
    return real, _detect(real, opts.format)


def _detect(real: Path, fmt: str) -> str:
    if fmt not in FORMATS:
        raise ValidationError(f"format {fmt!r} is not one of {', '.join(FORMATS)}")
    if fmt != "auto":
        return fmt
    if real.is_file() and export_lines.is_export(real):
        # `memo export`'s file, whatever it is named (a rotation script's kb.1.gz, a .txt):
        # told by its header line (memo.ops.export_restore)
        return "memo-export"
    # A chat export (ChatGPT's or Claude's conversations.json, a JSONL of messages) is
    # told by its first 64 KiB: memo.ingest.chat_exports.detect.
    if real.is_file() and real.suffix.lower() in (".json", ".jsonl", ".gz") and chat_exports.detect(real):
        return "chat"
    if real.is_file() and real.name.lower().endswith((".jsonl", ".jsonl.gz")):
        return "jsonl"
    return "files"


def _adapter_item(d: RecordDraft, rel: str, opts: ImportOptions) -> FileItem:
    """A draft from a data set adapter: add the import path (so a changed document with the
    same external id supersedes its old version) and the command line's provenance."""
    extra: dict[str, object] = {"import_path": d.import_path or rel}
    for name in ("author", "source", "library", "version"):
        if getattr(opts, name) and not getattr(d, name):
            extra[name] = getattr(opts, name)
    if opts.tags:
        extra["tags"] = tuple(dict.fromkeys([*d.tags, *opts.tags]))
    if opts.trust != 1.0:
        extra["trust"] = opts.trust
    return FileItem(d.ext_id or d.title or rel, draft=replace(d, **extra))  # type: ignore[arg-type]


def _beir_items(real: Path, opts: ImportOptions) -> Iterator[FileItem]:
    from memo.ingest import beir
    for lineno, draft, reason in beir.iter_corpus_items(real, namespace=opts.namespace or "default",
                                                        max_bytes=opts.max_bytes):
        if draft is not None:
            yield _adapter_item(draft, real.name, opts)
        else:
            yield FileItem(f"{real.name}:{lineno}" if lineno else real.name, rejected=reason)


def _locomo_items(real: Path, opts: ImportOptions) -> Iterator[FileItem]:
    from memo.ingest import locomo
    prefix = opts.namespace or "locomo"  # one namespace per conversation: '<prefix>/<sample_id>'
    for where, draft, reason in locomo.iter_conversation_items(real, namespace_prefix=prefix):
        if draft is not None:
            yield _adapter_item(draft, real.name, opts)
        else:
            yield FileItem(f"{real.name}{where}", rejected=reason)


def _chat_items(real: Path, opts: ImportOptions) -> Iterator[FileItem]:
    for where, draft, reason in chat_exports.iter_chat_items(real, namespace=opts.namespace or "default"):
        if draft is not None:
            yield _adapter_item(draft, real.name, opts)
        else:
            yield FileItem(f"{real.name}{where}", rejected=reason)


def _refuse_non_jsonl(path: Path) -> None:
    """``--format jsonl`` on a file whose first line is no JSON object (a markdown file):
    one clear error, not a rejection for every line of it."""
    from memo.ingest.beir import open_binary
    try:
        with open_binary(path) as fh:
            first = next((line for line in iter(lambda: fh.readline(1 << 16), b"") if line.strip()), b"")
    except (OSError, EOFError, DatasetError):
        return                      # unreadable: the import itself reports it
    head = first.lstrip(b"\xef\xbb\xbf \t")
    if head and not head.startswith(b"{"):
        raise ValidationError(f"{path.name} is not JSONL (its first line is not a JSON object)",
                              hint="import it without --format (files are read by their type), or give a .jsonl file")


def _count_lines(path: Path, max_bytes: int) -> int | None:
    """Non-blank lines (an over-long one counts: it is one rejection), for the progress
    bar's total: a pre-pass with the import's own bounded line reader, so a 1 GiB line
    costs no more memory here than in the import (about ``max_bytes``); gzip is read
    through.  None when the file cannot be read (or is not a regular file: a FIFO is
    never opened): the import reports that itself."""
    try:
        with open_lines(path) as fh:
            return sum(1 for _, raw in read_lines(fh, max_bytes) if raw is None or raw.strip())
    except (*READ_ERRORS, ValueError):
        return None


def _items(real: Path, fmt: str, opts: ImportOptions) -> tuple[Iterator[FileItem], int | None, _Walk | None]:
    template = _template(opts)
    if fmt == "files":
        errors: list[tuple[str, str]] = []
        passed: list[tuple[str, str]] = []
        files = list_files(real, errors, passed, opts.exclude)
        if opts.only is not None:
            files = [(p, rel) for p, rel in files if rel in opts.only]
        gen = (_read_one(p, rel, real, template, opts) for p, rel in files)
        walk = None
        if real.is_dir() and opts.only is None:
            walk = _Walk(real, frozenset((real / rel).as_posix() for _, rel in files), tuple(
                Rejection(rel, f"{why}; deleted files were not checked") for rel, why in errors),
                tuple(Rejection(rel, why) for rel, why in passed))
        return gen, len(files), walk
    if fmt in ("jsonl", "beir", "locomo", "chat") and real.is_dir():
        raise ValidationError(f"--format {fmt} needs a file, got a folder: {real}")
    if fmt == "jsonl":
        _refuse_non_jsonl(real)
        return iter_jsonl(real, real.name, template, max_bytes=opts.max_bytes), _count_lines(real, opts.max_bytes), None
    if fmt == "beir":
        return _beir_items(real, opts), _count_lines(real, opts.max_bytes), None
    if fmt == "chat":
        return _chat_items(real, opts), None, None
    return _locomo_items(real, opts), None, None


def _read_one(path: Path, rel: str, root: Path, template: RecordDraft, opts: ImportOptions) -> FileItem:
    """One file of a folder; an unexpected error reading it rejects that file only."""
    try:
        return read_file(path, rel, root, template, opts.max_bytes, opts.kind, opts.encoding)
    except Exception as exc:
        log.warning("import: cannot read %s", safe_name(rel), exc_info=True)
        return FileItem(safe_name(rel), rejected=f"cannot read: {type(exc).__name__}: {exc}")


class _Batcher:
    """Accumulates prepared records and commits them ``size`` at a time, each batch in one
    write transaction (``memo.ops.store_batch.store_items``: canonical rows and derived
    indexes together).

    A bulk import (its passages outnumber those the database held when it began: the
    delta of the keyword postings would outgrow their base, which a merge then rebuilds
    from FTS5 anyway) writes no delta: its batches hold the bulk lease and ``finish``
    rebuilds the base once, after the last batch (``memo.store.kw_postings.hold_bulk``)."""

    def __init__(self, conn: sqlite3.Connection, size: int, *, rekind: bool = False,
                 walked: Walked | None = None) -> None:
        self.conn, self.size = conn, max(1, size)
        self.rekind = rekind              # the import names its kind (store_items)
        self.walked = walked              # a complete folder walk: moved files' records follow them (store_items)
        self.pending: list[PreparedItem] = []
        self.pending_rels: list[str] = []  # each pending item's path in the report
        self.notices: list[Rejection] = []  # what a stored batch said of its items (a text kept as another kind)
        self.pending_chars = 0
        self.counts = {"added": 0, "updated": 0, "skipped": 0}
        self.ids: list[str] = []
        self.matched: dict[str, str] = {}  # existing records a skipped input duplicated -> the first such input
        self.batches = 0
        self.passages = 0
        meta = kw_postings.read_meta(conn)
        # None: no postings to keep (PostgreSQL, an old schema); else the base's passages
        self.base_rows = None if meta is None else (meta.rows if meta.built else 0)
        self.bulk = False

    def push(self, item: PreparedItem, rel: str = "") -> None:
        self.pending.append(item)
        self.pending_rels.append(rel)
        self.pending_chars += len(item.draft.body)
        if len(self.pending) >= self.size or self.pending_chars >= BATCH_CHARS:
            self.flush()

    def flush(self) -> None:
        if not self.pending:
            return
        try:
            with write_tx(self.conn):
                if self.bulk or self._outgrows_base():
                    kw_postings.hold_bulk(self.conn)
                    self.bulk = True
                results = store_items(self.conn, self.pending, rekind=self.rekind, walked=self.walked)
        except MemoError:
            raise
        except (sqlite3.Error, ValueError, TypeError, OverflowError) as exc:
            committed = self.counts["added"] + self.counts["updated"]
            raise StoreError(
                f"import stopped in batch {self.batches + 1}: {exc}; that batch was rolled back, "
                f"{committed} records from earlier batches are stored",
                hint="fix the cause and re-run the import; stored records are skipped") from exc
        self.batches += 1
        rels = self.pending_rels
        self.pending, self.pending_rels = [], []
        self.pending_chars = 0
        new_ids = []
        for rel, r in zip(rels, results, strict=True):
            self.counts[r.status] += 1
            if r.note:
                self.notices.append(Rejection(rel, r.note))
            if r.status != "skipped":
                new_ids.append(r.record_id)
                self.passages += r.passages
            else:
                self.matched.setdefault(r.record_id, rel)
        self.ids.extend(new_ids)
        # Embedding is not done per batch: the caller runs memo.ops.embed_pending once the
        # import has committed (one progress bar, no nested live displays).

    def _outgrows_base(self) -> bool:
        if self.base_rows is None:
            return False
        return self.passages + sum(len(item.passages) for item in self.pending) > self.base_rows

    def finish(self, *, build: bool = True) -> None:
        """After the last batch: a bulk import rebuilds the keyword postings' base (or, when
        it stopped, only gives up its lease: the next open for writing rebuilds)."""
        if self.bulk:
            self.bulk = False
            kw_postings.end_bulk(self.conn, build=build)


def _guarded(items: Iterator[FileItem], name: str, rejected: list[Rejection]) -> Iterator[FileItem]:
    """The items, until reading them fails unexpectedly: then the rest of that input is
    rejected with the reason (a generator that raised cannot go on) and what was read
    stays imported.  memo's own errors (a database error...) still stop the import."""
    it = iter(items)
    while True:
        try:
            item = next(it)
        except StopIteration:
            return
        except MemoError:
            raise
        except Exception as exc:
            log.warning("import: reading %s stopped", name, exc_info=True)
            rejected.append(Rejection(name, f"reading stopped here: {type(exc).__name__}: {exc}; "
                                            "the items before it were imported"))
            return
        yield item


def _walk(items: Iterator[FileItem], real: Path, base: Path, batcher: _Batcher, nul_ok: bool,
          rejected: list[Rejection], ignored: list[Rejection], notices: list[Rejection], emptied: set[str],
          total: int | None, progress: Callable[[Progress], None] | None, workers: int) -> int:
    """Prepare every item (on ``workers`` other processes, or here: ``memo.ops.prepare_pool``)
    and hand it to the batcher in input order (its full batches commit on the way); returns
    the items read.  An item's notices are reported with it when it is imported (a
    rejected file's reason says more); ``emptied`` gets the absolute paths of files ignored
    as empty (one holding a record is reported: memo.ops.import_missing)."""
    done = 0
    with closing(outcomes(_guarded(items, real.name, rejected), base, nul_ok, workers,
                          ahead=2 * batcher.size)) as prepared:
        for done, (item, got) in enumerate(prepared, start=1):
            if item.rejected is not None:
                rejected.append(Rejection(item.rel, item.rejected))
            elif item.ignored:
                ignored.append(Rejection(item.rel, item.why_ignored or "not a file type memo imports"))
                if item.empty:
                    emptied.add((base / item.rel).as_posix())
            elif got is not None and got.prepared is not None:
                batcher.push(got.prepared, item.rel)
                notices.extend(Rejection(item.rel, notice) for notice in item.notices)
            elif got is not None and got.rejected is not None:
                if got.warning:
                    log.warning("import: cannot split %s\n%s", item.rel, got.warning)
                rejected.append(Rejection(item.rel, got.rejected))
            if progress is not None:
                progress(Progress(done=done, total=total, current=item.rel))
    return done


def _unused_excludes(patterns: tuple[str, ...], passed: list[Rejection]) -> list[Rejection]:
    """A notice per ``--exclude`` pattern that left out nothing: a typo (``templates`` for
    ``Templates``, ``./Templates``) left the files in without a word."""
    used = {r.reason for r in passed}
    return [Rejection(f"--exclude {pat}", "matched no file or folder, so nothing was left out by it (a pattern "
                      "matches names case-sensitively, a pattern with '/' the path from the imported folder: "
                      "'Daily/2023-*')")
            for pat in dict.fromkeys(patterns) if excluded_reason(pat) not in used]


def _workers(opts: ImportOptions, total: int | None) -> int:
    """Processes preparing records beside this one: none for a small or uncounted input
    (a worker's start, ~0.5 s of imports, would cost more than it saves) unless asked."""
    if opts.workers is not None:
        return opts.workers
    if total is None or total < PARALLEL_MIN_ITEMS:
        return 0
    return default_workers()


def import_path(conn: sqlite3.Connection, path: str | Path, opts: ImportOptions | None = None,
                progress: Callable[[Progress], None] | None = None) -> ImportReport:
    opts = opts or ImportOptions()
    opts = replace(opts, encoding=check_encoding(opts.encoding))
    if opts.workers is not None and not 0 <= opts.workers <= MAX_IMPORT_WORKERS:
        raise ValidationError(f"workers must be 0 to {MAX_IMPORT_WORKERS}, got {opts.workers}",
                              hint="0 prepares every record in the importing process")
    if opts.namespace is not None:
        # Every record would carry it: refuse the import as a whole (exit 2) before any
        # file is read, not each record one by one as a rejection (exit 5).
        check_namespace(opts.namespace)
    started = time.monotonic()
    real = _resolve(Path(path), opts)
    fmt = _detect(real, opts.format)
    if fmt == "memo-export":
        return import_export(conn, real, batch_size=opts.batch_size, given=_not_for_exports(opts),
                             progress=None if progress is None else
                             lambda done, total, what: progress(Progress(done=done, total=total, current=what)))
    if opts.only is not None and (opts.prune or not (fmt == "files" and real.is_dir())):
        raise ValidationError("only= names files of a folder imported as files, without --prune")
    if opts.prune and not (fmt == "files" and real.is_dir()):
        raise ValidationError("--prune only applies to a folder imported as files",
                              hint="drop --prune, or import the folder that held the files")
    items, total, walk = _items(real, fmt, opts)
    base = walk.root if walk else real if real.is_dir() else real.parent    # what the items' paths are under
    # Moves only on a complete listing: a walk that could not list a folder is not trusted
    # to say which files are gone (as for missing, below).
    walked = Walked.of(walk.root, walk.seen) if walk is not None and not walk.errors else None
    batcher = _Batcher(conn, opts.batch_size, rekind=opts.kind is not None, walked=walked)
    nul_ok = storable_nul(conn)
    rejected: list[Rejection] = list(walk.errors) if walk else []
    ignored: list[Rejection] = list(walk.passed) if walk else []
    notices: list[Rejection] = _unused_excludes(opts.exclude, ignored) if walk else []
    emptied: set[str] = set()
    try:
        read = _walk(items, real, base, batcher, nul_ok, rejected, ignored, notices, emptied, total, progress,
                     _workers(opts, total))
        batcher.flush()
    except BaseException:
        try:
            batcher.finish(build=False)
        except Exception:   # noqa: BLE001 - the import's own error is the one to report
            log.warning("import: could not give up the keyword index's bulk lease", exc_info=True)
        raise
    if batcher.bulk and progress is not None:
        progress(Progress(done=read, total=total, current="building the keyword index"))
    batcher.finish()
    facts = _import_facts(conn, real, fmt, opts, rejected) if opts.facts else FactImportReport(0, 0, ())
    missing = None
    # Only here, after the whole walk and the last commit: an import that raised never
    # reaches this line, and a walk that could not list a folder is not trusted to say
    # which files are gone.
    if walk is not None and not walk.errors:
        missing = check_missing(conn, opts.namespace or "default", walk.root, walk.seen,
                                batcher.matched, frozenset(emptied), prune=opts.prune)
    return ImportReport(root=str(real), format=fmt, added=batcher.counts["added"],
                        updated=batcher.counts["updated"], skipped=batcher.counts["skipped"],
                        rejected=tuple(rejected), ignored=len(ignored), ignored_files=tuple(ignored),
                        notices=(*notices, *batcher.notices, *(missing.notices if missing else ())),
                        batches=batcher.batches,
                        passages=batcher.passages, record_ids=tuple(batcher.ids),
                        skipped_record_ids=tuple(sorted(batcher.matched)),
                        missing=missing.paths if missing else (), pruned=missing.pruned if missing else 0,
                        emptied=missing.emptied if missing else (),
                        facts_added=facts.added, facts_skipped=facts.skipped,
                        facts_near_duplicates=facts.near_duplicates,
                        seconds=round(time.monotonic() - started, 3))


def _not_for_exports(opts: ImportOptions) -> tuple[str, ...]:
    """The options asked for that an export's records cannot take (they keep their own)."""
    given = {"--namespace": opts.namespace is not None, "--kind": opts.kind is not None, "--tag": bool(opts.tags),
             "--source": opts.source is not None, "--library": opts.library is not None,
             "--version": opts.version is not None, "--trust": opts.trust != 1.0, "--author": opts.author is not None,
             "--prune": opts.prune, "--exclude": bool(opts.exclude), "--encoding": opts.encoding is not None}
    return tuple(name for name, on in given.items() if on)


def _import_facts(conn: sqlite3.Connection, real: Path, fmt: str, opts: ImportOptions,
                  rejected: list[Rejection]) -> FactImportReport:
    """After the records committed: JSONL fact lines, LoCoMo observations (memo.ops.facts;
    their vectors are embedded with the passages' by the caller's embed_pending)."""
    items: list[tuple[str, FactDraft]] = []
    if fmt == "jsonl":
        from memo.ingest.jsonl_facts import iter_jsonl_facts
        for where, draft, reason in iter_jsonl_facts(real, real.name, opts.namespace or "default", opts.author,
                                                     max_bytes=opts.max_bytes):
            if draft is None:
                rejected.append(Rejection(where, reason or "bad fact line"))
            else:
                items.append((where, draft))
    elif fmt == "locomo":
        from memo.ingest.locomo_facts import iter_observations
        try:
            items = list(iter_observations(real, opts.namespace or "locomo"))
        except DatasetError:
            items = []                      # the record pass already rejected the file
    if not items:
        return FactImportReport(0, 0, ())
    report = import_facts(conn, items, embed=False)
    rejected.extend(Rejection(where, reason) for where, reason in report.rejected)
    return report
