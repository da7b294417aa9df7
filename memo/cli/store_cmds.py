"""Store commands: add, import, export, get, list, supersede, forget, purge, stats, reindex, backup, restore.

Each command parses its options, calls one function of ``memo.ops`` and prints the
returned report (``--json``: one JSON document, schemas in docs/cli-json.md).
"""

from __future__ import annotations

import sqlite3
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    SpinnerColumn,
    TextColumn,
    TimeElapsedColumn,
)

from memo import metrics, ops
from memo.cli.common import (
    DbOption,
    JsonOption,
    echo,
    handle_errors,
    print_json,
    states_of,
    to_jsonable,
    visible,
)
from memo.errors import ImportRejected, ValidationError
from memo.ingest.files import DEFAULT_MAX_BYTES
from memo.ops.after_commit import embed_pending, import_vectors, pending_elsewhere
from memo.ops.export import export_db
from memo.ops.importer import (
    BATCH_CHARS,
    DEFAULT_BATCH,
    FORMATS,
    MAX_IMPORT_WORKERS,
    PARALLEL_MIN_ITEMS,
    ImportOptions,
)
from memo.ops.importer import Progress as ImportProgress
from memo.ops.paging import fetch_page
from memo.ops.prepare_pool import MAX_WORKERS
from memo.ops.reports import ImportReport, VectorStatus
from memo.ops.watch import DEFAULT_INTERVAL, MAX_INTERVAL, MIN_INTERVAL, Waiting
from memo.ops.watch import check as check_watch
from memo.ops.watch import watch as watch_folder
from memo.progress import PLAIN_PROGRESS_EVERY
from memo.store.db import open_db
from memo.stored import RecordDraft
from memo.types import FIELD_HELP

NamespaceOpt = Annotated[str, typer.Option("--namespace", "-n", help="Namespace (a separate collection).")]
KindOpt = Annotated[str | None, typer.Option("--kind", "-k", help="note, conversation, doc or code.")]
TitleOpt = Annotated[str | None, typer.Option("--title", help="Title (plain text: also the passages' section).")]
SourceOpt = Annotated[str | None, typer.Option("--source", help="Where it came from (a system, a URL...).")]
LibraryOpt = Annotated[str | None, typer.Option("--library", help="Library the doc or code belongs to.")]
VersionOpt = Annotated[str | None, typer.Option("--version", help="Library version the doc describes.")]
TagOpt = Annotated[list[str] | None, typer.Option("--tag", "-t", help="A tag (repeat for several).")]
EventOpt = Annotated[str | None, typer.Option("--event-date", help="When it happened (ISO-8601 date or time).")]
TrustOpt = Annotated[float | None, typer.Option("--trust", help="How far to trust it, 0..1 (default 1).")]
AuthorOpt = Annotated[str | None, typer.Option("--author", help="Who or what wrote it (provenance).")]
YesOpt = Annotated[bool, typer.Option("--yes", "-y", help="Confirm an operation on more than one record.")]

_err = Console(stderr=True)


def _text_arg(text: str | None) -> str:
    if text is None or text == "-":
        if sys.stdin is None or sys.stdin.isatty():
            raise ValidationError("no text given", hint="pass the text as an argument or pipe it on stdin")
        text = sys.stdin.read()
    return text


def _note_queued(vectors: VectorStatus | None) -> None:
    """One line on stderr when a committed write's passages wait for their vectors (the
    write itself succeeded: exit code 0)."""
    if vectors is None or not vectors.queued:
        return
    why = f" ({vectors.error})" if vectors.error else ""
    echo(f"note: saved; {vectors.queued} passage(s) queued for embedding{why}; "
               f"`memo backfill` embeds them", err=True)


def _text_value(value: object) -> str:
    """A value as a person reads it: a mapping as ``name count, name count`` (largest
    first), a sequence as ``a, b``; never Python's repr."""
    if isinstance(value, dict):
        items = sorted(value.items(), key=lambda kv: (-kv[1], str(kv[0]))) if all(
            isinstance(v, (int, float)) for v in value.values()) else list(value.items())
        return ", ".join(f"{k} {v:,}" if isinstance(v, int) else f"{k} {v}" for k, v in items)
    if isinstance(value, (list, tuple)):
        return ", ".join(str(v) for v in value)
    return str(value)


def _echo_kv(pairs: list[tuple[str, object]]) -> None:
    for key, value in pairs:
        if value not in (None, "", (), [], {}):
            echo(f"{key:<14}{_text_value(value)}")


@handle_errors
def add(text: Annotated[str | None, typer.Argument(help="The text; omit or '-' to read stdin.")] = None,
        namespace: NamespaceOpt = "default", kind: KindOpt = None, title: TitleOpt = None,
        source: SourceOpt = None, library: LibraryOpt = None, version: VersionOpt = None,
        tag: TagOpt = None, event_date: EventOpt = None, trust: TrustOpt = None,
        author: AuthorOpt = None,
        entity: Annotated[list[str] | None, typer.Option(
            "--entity", help="An entity the record is about (repeat); stored as meta.entities and mentioned "
                             "by every passage of the record.")] = None,
        db: DbOption = None, as_json: JsonOption = False) -> None:
    """Add one record (a note, a conversation, a doc or code). The same text twice is stored once.
    Front matter at the top (---, title:, date:, tags:, ---) gives the title, date and tags
    the options do not, as `memo import` reads it; a markdown text's inline #tags are tags too."""
    draft = RecordDraft(body=_text_arg(text), kind=kind or "note", namespace=namespace,  # type: ignore[arg-type]
                        title=title, source=source, library=library, version=version,
                        tags=tuple(tag or ()), event_at=event_date,
                        trust=1.0 if trust is None else trust, author=author,
                        meta={"entities": list(dict.fromkeys(entity))} if entity else {})
    conn = open_db(db)
    report = ops.add_record(conn, draft)
    if as_json:
        print_json(report)
    else:
        note = " (same text already stored)" if report.status == "skipped" else f", {report.passages} passages"
        echo(f"{report.status} {report.record_id}{note}")
        if report.note:
            echo(f"note: {report.note}", err=True)
    _note_queued(report.vectors)


# --max-bytes' ceiling: no text value larger than SQLite's SQLITE_MAX_LENGTH (10^9 bytes;
# PostgreSQL's is 1 GiB) is ever stored, and a file is read whole; a larger number once
# reached Python's read() and failed with OverflowError.  The floor is 1: a cap of 0 or
# less rejected every file.
MAX_IMPORT_BYTES = 1_000_000_000



@contextmanager
def _progress_bar(enabled: bool, label: str = "importing") -> Iterator[object]:
    """A bar on stderr (a terminal), plain lines (a log), or nothing; ``update(p)`` takes
    anything with ``done``, ``total`` and ``current`` (an import's or an export's progress)."""
    if not enabled:
        yield None
        return
    if not _err.is_terminal:
        # A log or a pipe: no live bar (its clean-up left a blank line before errors), one
        # plain line every PLAIN_PROGRESS_EVERY seconds of a long import instead.
        start = last = time.monotonic()

        def line(p: ImportProgress) -> None:  # or an ExportProgress
            nonlocal last
            now = time.monotonic()
            if now - last >= PLAIN_PROGRESS_EVERY:
                last = now
                total = f"/{p.total:,}" if p.total else ""
                echo(f"{label}: {p.done:,}{total} after {now - start:.0f} s ({p.current[-60:]})", err=True)

        yield line
        return
    # The current file's name as plain text: rich would read "[/x].md" as markup (and fail
    # on it), and its control characters would reach the terminal (``visible``).
    columns = [SpinnerColumn(), TextColumn("[progress.description]{task.description}"), BarColumn(),
               MofNCompleteColumn(), TimeElapsedColumn(), TextColumn("{task.fields[current]}", markup=False)]
    with Progress(*columns, console=_err, transient=True) as bar:
        task = bar.add_task(label, total=None, current="")

        def update(p: ImportProgress) -> None:
            bar.update(task, completed=p.done, total=p.total, current=visible(p.current[-40:]))

        yield update


@handle_errors
def import_(path: Annotated[Path, typer.Argument(help="A file or folder (or a BEIR / LoCoMo data set).")],
            format: Annotated[str, typer.Option("--format", "-f", help=f"One of {', '.join(FORMATS)}.")] = "auto",
            namespace: Annotated[str | None, typer.Option(
                "--namespace", "-n", help="Namespace (default 'default'; for LoCoMo the prefix, default 'locomo').")] = None,
            kind: KindOpt = None, source: SourceOpt = None,
            library: LibraryOpt = None, version: VersionOpt = None, tag: TagOpt = None,
            trust: TrustOpt = None, author: AuthorOpt = None,
            root: Annotated[Path | None, typer.Option("--root", help="Refuse paths outside this folder.")] = None,
            max_bytes: Annotated[int, typer.Option(
                "--max-bytes", min=1, max=MAX_IMPORT_BYTES,
                help="Reject files (and JSONL lines) larger than this many bytes.")] = DEFAULT_MAX_BYTES,
            encoding: Annotated[str | None, typer.Option(
                "--encoding", help="Files' text encoding (latin-1, cp1252...); default: UTF-8, else detected.")] = None,
            batch_size: Annotated[int, typer.Option(
                "--batch-size", min=1,
                help=f"Records per transaction (a batch of large records ends sooner, at {BATCH_CHARS >> 20}M "
                     "characters).")] = DEFAULT_BATCH,
            workers: Annotated[int | None, typer.Option(
                "--workers", min=0, max=MAX_IMPORT_WORKERS,
                help="Processes preparing records beside the one writing (0: none); default: one per core "
                     f"after the first, at most {MAX_WORKERS}, for inputs of {PARALLEL_MIN_ITEMS:,} records or more.")] = None,
            exclude: Annotated[list[str] | None, typer.Option(
                "--exclude", help="Folder import: leave out files and folders matching this pattern (repeat): "
                                  "a name anywhere (Templates, '*.canvas') or a path from the folder "
                                  "('Daily/2023-*').")] = None,
            prune: Annotated[bool, typer.Option(
                "--prune", help="Folder import: forget the records of files deleted from the folder or emptied.")] = False,
            progress: Annotated[bool, typer.Option("--progress/--no-progress", help="Progress bar on stderr.")] = True,
            embed: Annotated[bool, typer.Option("--embed/--no-embed",
                                                help="Embed the new passages after the import (else `memo backfill`).")] = True,
            watch: Annotated[bool, typer.Option(
                "--watch", help="Files and folders: stay running and import again whenever a file changes, is added, "
                                "moved or deleted (Ctrl-C stops); --json prints one document per import.")] = False,
            interval: Annotated[float, typer.Option(
                "--interval", help=f"--watch: seconds between two looks at the files ({MIN_INTERVAL:g} to "
                                   f"{MAX_INTERVAL:g}).")] = DEFAULT_INTERVAL,
            db: DbOption = None, as_json: JsonOption = False) -> None:
    """Import markdown, text, HTML, PDF, Word, EPUB and code files (a file or a folder), JSONL, a BEIR corpus, LoCoMo, or a `memo export` file.

    Same content is skipped; a changed file at the same path supersedes its old version, and
    a renamed or moved one the record of the file it was; files deleted from a folder, or
    emptied, are reported (forgotten with --prune).  With --watch it keeps the folder
    imported as it changes.
    Exits 5 when some inputs were rejected (the rest is imported)."""
    opts = ImportOptions(format=format, namespace=namespace, kind=kind, tags=tuple(tag or ()),
                         source=source, library=library, version=version,
                         trust=1.0 if trust is None else trust, author=author, max_bytes=max_bytes,
                         batch_size=batch_size, root=root, prune=prune, encoding=encoding,
                         workers=workers, exclude=tuple(exclude or ()))
    if watch:
        check_watch(path, opts, interval)                   # before any output: a bad --interval, a JSONL
        _watch(open_db(db), path, opts, interval=interval, embed=embed, progress=progress, as_json=as_json)
        return
    if interval != DEFAULT_INTERVAL:
        raise ValidationError("--interval applies to --watch only", hint="add --watch, or drop --interval")
    conn = open_db(db)
    try:
        with _progress_bar(progress and not as_json) as update:
            report = ops.import_path(conn, path, opts, progress=update)  # type: ignore[arg-type]
    except KeyboardInterrupt:
        # Said, not a silent exit 130: what is stored stays, and the same command finishes it.
        echo(INTERRUPTED_IMPORT, err=True)
        raise typer.Exit(130) from None
    _show_import(conn, report, path, embed=embed, progress=progress, as_json=as_json)
    if report.rejected:
        raise typer.Exit(ImportRejected.exit_code)


INTERRUPTED_IMPORT = ("interrupted: the batches committed before it are stored; run the same import again to finish "
                      "(what is stored is skipped)")


def _watch(conn: sqlite3.Connection, path: Path, opts: ImportOptions, *, interval: float, embed: bool,
           progress: bool, as_json: bool) -> None:
    """``memo import --watch`` (memo.ops.watch): each import shown as one import is, with
    its time; Ctrl-C or SIGTERM stops it (exit 0 between imports, 130 during one, as an
    import stopped by hand)."""
    stop = threading.Event()
    busy = [False]
    imports = [0]

    def started() -> None:
        busy[0] = True          # until the import's report is printed: its rows and vectors are stored

    def done(report: ImportReport) -> None:
        imports[0] += 1

        def whole() -> None:
            busy[0] = False

        _show_import(conn, report, path, embed=embed, progress=False, as_json=as_json,
                     stamp=f"[{datetime.now().strftime('%H:%M:%S')}] ", line=True, embedded_then=whole, at=_now())

    def waiting(w: Waiting) -> None:
        busy[0] = False         # no import under way (one the lock held off: its committed batches stay)
        if as_json:
            print_json({"waiting": w.state, "detail": w.detail, "at": _now()}, line=True)
        elif w.state == "busy":
            echo(f"[{datetime.now().strftime('%H:%M:%S')}] not imported yet: {w.detail}; trying again", err=True)
        else:
            why = "is gone" if w.state == "gone" else "lists no file memo imports now"
            echo(f"{w.detail} {why}: nothing imported (with --prune every record of it would be forgotten); "
                 "waiting for its files", err=True)

    try:
        with _terminated_as_interrupt():
            if not as_json:
                echo(f"watching {path} (every {interval:g}s; Ctrl-C stops)", err=True)
            watch_folder(conn, path, opts, interval=interval, stop=stop, on_import=done, on_change=started,
                         on_wait=waiting)
    except KeyboardInterrupt:
        if busy[0]:
            echo(INTERRUPTED_IMPORT, err=True)
            raise typer.Exit(130) from None
        echo(f"stopped watching {path} after {imports[0]} import(s)", err=True)


def _now() -> str:
    """UTC now as the JSON documents write times (``2026-12-07T11:20:03Z``)."""
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _show_import(conn: sqlite3.Connection, report: ImportReport, path: Path, *, embed: bool, progress: bool,
                 as_json: bool, stamp: str = "", line: bool = False, embedded_then: Callable[[], None] | None = None,
                 at: str | None = None) -> None:
    """Embed an import's passages, then print its report (``embedded_then`` is called between:
    the import is whole from there on)."""
    # Embedding runs after every batch has committed, outside any transaction: this import's
    # passages only (those of earlier --no-embed imports stay queued for `memo backfill`).
    embedded = (embed_pending(conn, report.record_ids + report.skipped_record_ids, progress=progress and not as_json,
                              passages=report.passages) if embed else None)
    elsewhere = pending_elsewhere(conn, embedded) if embedded is not None else 0
    report = replace(report, vectors=import_vectors(embedded, report.passages))
    if embedded_then is not None:
        embedded_then()
    if as_json:
        print_json({**to_jsonable(report), "embedding": to_jsonable(embedded), **({"at": at} if at else {})},
                   line=line)
    else:
        echo(f"{stamp}imported {report.root} ({report.format}): added {report.added}, updated {report.updated}, "
                   f"skipped {report.skipped}, rejected {len(report.rejected)}, ignored {report.ignored}; "
                   f"{report.passages} passages in {report.batches} batches, {report.seconds:.1f}s")
        for rej in report.rejected:
            echo(f"  rejected {rej.path}: {rej.reason}", err=True)
        if report.facts_added or report.facts_skipped:
            echo(f"facts: added {report.facts_added}, skipped {report.facts_skipped}")
        _echo_near_facts(report)
        _echo_ignored(report)
        _echo_notices(report)
        _echo_missing(report, path)
        if embedded is not None:
            copied = f", {embedded.reused} of them copied from the earlier version" if embedded.reused else ""
            echo(f"embedded {embedded.embedded} passages ({embedded.model_id or 'no model'}{copied}), "
                       f"{embedded.pending_after} pending" + (f": {embedded.error}" if embedded.error else ""))
    if embedded is not None:   # with --no-embed the queue is what was asked for
        _note_queued(report.vectors)
    if elsewhere:
        echo(f"note: {elsewhere:,} passage(s) of other records have no vector yet (not this import's); "
             f"`memo backfill` embeds them", err=True)


def _echo_near_facts(report: ImportReport, shown: int = 10) -> None:
    for near in report.facts_near_duplicates[:shown]:
        what = f"stored as {near.fact_id}, linked" if near.fact_id else "not stored (skip)"
        echo(f"  fact {near.where}: near-identical to {near.near_duplicate_of} "
                   f"(similarity {near.similarity:.2f}); {what}")
    if len(report.facts_near_duplicates) > shown:
        echo(f"  ... and {len(report.facts_near_duplicates) - shown} more near-identical facts (--json lists all)")


def _echo_ignored(report: ImportReport, shown: int = 10) -> None:
    for item in report.ignored_files[:shown]:
        echo(f"  ignored {item.path}: {item.reason}")
    if len(report.ignored_files) > shown:
        echo(f"  ... and {len(report.ignored_files) - shown} more ignored (--json lists all)")


def _echo_notices(report: ImportReport, shown: int = 10) -> None:
    """Imported files with something left out, on stderr with the rejections: a warning,
    though the import succeeded."""
    for item in report.notices[:shown]:
        echo(f"  notice {item.path}: {item.reason}", err=True)
    if len(report.notices) > shown:
        echo(f"  ... and {len(report.notices) - shown} more notices (--json lists all)", err=True)


def _echo_missing(report: ImportReport, path: Path, shown: int = 10) -> None:
    n = len(report.missing)
    if not n:
        return
    files = "1 imported file is" if n == 1 else f"{n} imported files are"
    where = (f"gone from {path}" if not report.emptied else f"now empty in {path}" if len(report.emptied) == n
             else f"gone from or now empty in {path}")
    if report.pruned:
        echo(f"{files} {where}: forgot {report.pruned} record(s) (`memo purge` deletes them for good)")
    else:
        echo(f"{files} {where} (their records are still searchable; "
                   f"re-run with --prune to forget them)")
    emptied = set(report.emptied)
    for rel in report.missing[:shown]:
        echo(f"  {'now empty' if rel in emptied else 'gone'} {rel}")
    if n > shown:
        echo(f"  ... and {n - shown} more (--json lists all)")


@contextmanager
def _terminated_as_interrupt() -> Iterator[None]:
    """SIGTERM (``timeout``, systemd, a CI job cancelled) as Ctrl-C for the block: the export's
    clean-up runs and no hidden half-written file stays beside its destination."""
    import signal

    def stop(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    try:
        previous = signal.signal(signal.SIGTERM, stop)
    except ValueError:          # not the main thread: leave the signal as it is
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


@handle_errors
def export(dest: Annotated[Path, typer.Argument(help="The file to write (gzip when it ends in .gz).")],
           namespace: Annotated[list[str] | None, typer.Option(
               "--namespace", "-n", help="Only these namespaces (repeatable); default every one.")] = None,
           include_forgotten: Annotated[bool, typer.Option(
               "--include-forgotten", help="Forgotten records and facts too (left out by default, as purge would).")] = False,
           vectors: Annotated[bool, typer.Option(
               "--vectors/--no-vectors", help="Carry the vectors (else the importing memo embeds every passage).")] = True,
           force: Annotated[bool, typer.Option("--force", help="Replace an existing file.")] = False,
           progress: Annotated[bool, typer.Option("--progress/--no-progress", help="Progress bar on stderr.")] = True,
           db: DbOption = None, as_json: JsonOption = False) -> None:
    """Write every record and fact, with their versions, passages and vectors, to one file that
    `memo import` reads back into any database, SQLite or PostgreSQL."""
    conn = open_db(db, write=False)
    with _progress_bar(progress and not as_json, "exporting") as update, _terminated_as_interrupt():
        report = export_db(conn, dest, namespaces=tuple(namespace or ()), include_forgotten=include_forgotten,
                           vectors=vectors, overwrite=force, progress=update)  # type: ignore[arg-type]
    if as_json:
        print_json(report)
        return
    models = ", ".join(f"{n:,} of {m}" for m, n in report.vectors.items()) or "none"
    echo(f"exported {report.records:,} records ({report.passages:,} passages) and {report.facts:,} facts to "
         f"{report.path}: {report.size_bytes:,} bytes, {report.seconds:.1f}s; vectors: {models}")
    echo(f"`memo import {report.path}` reads it back (into a SQLite file or a postgresql:// database)")
    gone = [f"{n:,} forgotten {t}" for t, n in report.left_out.items() if n]
    if gone:
        echo(f"left out: {' and '.join(gone)} (--include-forgotten exports them)")
    if report.without_vectors:
        echo(f"note: {report.without_vectors:,} passage(s) have no vector here"
             + (" (--no-vectors)" if not vectors else "") + ": `memo import` embeds them", err=True)


@handle_errors
def get(record_id: Annotated[str, typer.Argument(help="Record id (or a passage id '<record>:<n>').")],
        db: DbOption = None, as_json: JsonOption = False) -> None:
    """Show one record with its passages."""
    rec = ops.get(open_db(db, write=False), record_id)
    if as_json:
        print_json(rec)
        return
    _echo_kv([(k, getattr(rec, k)) for k in ("id", "namespace", "kind", "title", "source", "library", "version",
                                             "event_at", "recorded_at", "superseded_at", "superseded_by",
                                             "forgotten_at", "trust", "author", "import_path")])
    _echo_kv([("tags", ", ".join(rec.tags))])
    for p in rec.passages:
        echo(f"\n[{p.id}] {p.section}".rstrip())
        echo(p.text)
    if rec.facts:
        echo(f"\nfacts ({len(rec.facts)}) citing its passages:")
        for f in rec.facts:
            echo(f"  {f.id}  {f.text}  [{', '.join(f.passages)}]")


def list_(namespace: Annotated[list[str] | None, typer.Option("--namespace", "-n", help="Repeatable.")] = None,
          kind: Annotated[list[str] | None, typer.Option("--kind", "-k", help="Repeatable.")] = None,
          source: Annotated[list[str] | None, typer.Option("--source", help="Repeatable.")] = None,
          library: LibraryOpt = None, version: VersionOpt = None,
          tag: Annotated[list[str] | None, typer.Option("--tag", "-t", help="Must carry every tag.")] = None,
          date_from: Annotated[str | None, typer.Option("--from", help=FIELD_HELP["date_from"])] = None,
          date_to: Annotated[str | None, typer.Option("--to", help=FIELD_HELP["date_to"])] = None,
          include_forgotten: Annotated[bool, typer.Option("--include-forgotten")] = False,
          include_superseded: Annotated[bool, typer.Option("--include-superseded")] = False,
          limit: Annotated[int, typer.Option("--limit", help="At most this many records.")] = 50,
          offset: Annotated[int, typer.Option("--offset", help="Skip this many (the next page: --offset N).")] = 0,
          db: DbOption = None, as_json: JsonOption = False) -> None:
    """List records, newest first (live ones unless --include-forgotten / --include-superseded)."""
    flt = ops.ListFilter(namespaces=tuple(namespace or ()), kinds=tuple(kind or ()), sources=tuple(source or ()),
                         library=library, version=version, tags=tuple(tag or ()),
                         date_from=date_from, date_to=date_to,
                         include_forgotten=include_forgotten, include_superseded=include_superseded,
                         limit=limit, offset=offset)
    conn = open_db(db, write=False)
    rows, next_offset = fetch_page(lambda n: ops.list_records(conn, replace(flt, limit=n)), limit, offset)
    if as_json:
        print_json({"count": len(rows), "records": to_jsonable(rows), "next_offset": next_offset})
        return
    for r in rows:
        states = states_of(r.superseded_at, r.forgotten_at)
        state = f" [{states}]" if states else ""
        dated = f"  dated {r.event_at}" if r.event_at and r.event_at not in (r.title or "") else ""
        echo(f"{r.id}  {r.namespace}/{r.kind}  {r.title or ''}{state}{dated}  ({r.passages} passages)")
    if next_offset is not None:
        echo(f"-- records {offset + 1:,}-{next_offset:,} shown, more exist: --offset {next_offset} "
             f"for the next page, or a larger --limit")
    elif not rows:
        filtered = flt != ops.ListFilter(limit=limit, offset=offset)
        echo(f"no records past --offset {offset}" if offset else
             "no records match these filters" if filtered else
             "no live records (--include-forgotten / --include-superseded list the others)")


@handle_errors
def supersede(record_id: Annotated[str, typer.Argument(help="The record to replace.")],
              text: Annotated[str | None, typer.Argument(help="The new text; omit or '-' for stdin.")] = None,
              title: TitleOpt = None, source: SourceOpt = None, library: LibraryOpt = None,
              version: VersionOpt = None, tag: TagOpt = None, event_date: EventOpt = None,
              trust: TrustOpt = None, author: AuthorOpt = None,
              db: DbOption = None, as_json: JsonOption = False) -> None:
    """Write a new version of a record; the old one stays for as_of queries."""
    report = ops.supersede(open_db(db, create=False), record_id, _text_arg(text), title=title, source=source,
                           library=library, version=version, tags=tuple(tag) if tag else None,
                           event_at=event_date, trust=trust, author=author)
    if as_json:
        print_json(report)
    else:
        echo(f"superseded {report.old_id} by {report.new_id} ({report.passages} passages)")
        if report.facts_without_evidence:
            echo(f"note: {len(report.facts_without_evidence)} fact(s) cited only what this version changed and now "
                 f"cite nothing current: {', '.join(report.facts_without_evidence[:10])}"
                 f"{' …' if len(report.facts_without_evidence) > 10 else ''}; check them "
                 "(`memo fact supersede` / `memo fact forget`)", err=True)
    _note_queued(report.vectors)


@handle_errors
def forget(record_ids: Annotated[list[str], typer.Argument(help="Record ids.")], yes: YesOpt = False,
           db: DbOption = None, as_json: JsonOption = False) -> None:
    """Hide records from every search (soft delete; `memo purge` removes them for good)."""
    report = ops.forget(open_db(db, create=False), record_ids, confirm=yes)
    if as_json:
        print_json(report)
    else:
        echo(f"forgot {len(report.forgotten)} record(s)"
                   + (f"; {len(report.already_forgotten)} were already forgotten" if report.already_forgotten else ""))


@handle_errors
def purge(yes: YesOpt = False, db: DbOption = None, as_json: JsonOption = False) -> None:
    """Delete forgotten records for good (with passages, tags, vectors, index rows)."""
    report = ops.purge(open_db(db, create=False), confirm=yes)
    if as_json:
        print_json(report)
    else:
        echo(f"purged {report.records} record(s), {report.passages} passages, {report.vectors} vectors")


@handle_errors
def stats(migrate: Annotated[bool, typer.Option("--migrate", help="Apply pending schema migrations first.")] = False,
          db: DbOption = None, as_json: JsonOption = False) -> None:
    """Counts: records and facts (live, superseded, forgotten), passages, vectors per model, pending vectors."""
    report = ops.stats(open_db(db, write=migrate, create=False))
    if as_json:
        # metrics: this process's search metrics (zero in a fresh CLI process) and the
        # pending-vector gauge read from the database (memo/metrics.py; docs/cli-json.md).
        print_json({**to_jsonable(report), "metrics": metrics.stats_metrics(report.pending_vectors)})
        return
    _echo_kv([("database", report.path), ("schema", f"v{report.schema_version}"),
              ("size", f"{report.size_bytes:,} bytes"),
              ("records", f"{report.live} live, {report.superseded} superseded, {report.forgotten} forgotten"),
              ("passages", report.passages), ("kinds", report.by_kind), ("namespaces", report.by_namespace),
              ("vectors", report.vectors), ("pending", report.pending_vectors),
              ("facts", f"{report.facts_live} live, {report.facts_superseded} superseded, "
                        f"{report.facts_forgotten} forgotten"),
              ("fact vectors", report.fact_vectors), ("facts pending", report.pending_fact_vectors)])


@handle_errors
def reindex(db: DbOption = None, as_json: JsonOption = False) -> None:
    """Rebuild the keyword and exact indexes from the stored passages."""
    report = ops.reindex(open_db(db, create=False))
    if as_json:
        print_json(report)
    else:
        echo(f"reindexed {report.passages} passages in {report.seconds:.2f}s; {report.vectors}")


@handle_errors
def backup(dest: Annotated[Path, typer.Argument(help="Where to write the copy.")],
           force: Annotated[bool, typer.Option(
               "--force", help="Replace an existing file (never the database, its -wal/-shm/-journal, "
                               "or a database in use).")] = False,
           db: DbOption = None, as_json: JsonOption = False) -> None:
    """Copy the database with SQLite's online backup API, verify the copy, then move it into place."""
    report = ops.backup(open_db(db, write=False), dest, overwrite=force)
    if as_json:
        print_json(report)
    else:
        echo(f"backup {report.path}: {report.size_bytes} bytes, integrity {report.integrity}, "
                   f"{report.counts['records']} records, {report.counts['passages']} passages")


@handle_errors
def restore(backup_file: Annotated[Path, typer.Argument(help="A file written by `memo backup`.")],
            yes: Annotated[bool, typer.Option("--yes", "-y", help="Confirm replacing the database's contents.")] = False,
            keep_previous: Annotated[bool, typer.Option(
                "--keep-previous/--no-keep-previous",
                help="Keep the replaced database as <db>.before-restore-<time>.")] = True,
            db: DbOption = None, as_json: JsonOption = False) -> None:
    """Replace the database's contents with a verified backup (safe while other memo processes run)."""
    report = ops.restore(backup_file, db, confirm=yes, keep_previous=keep_previous)
    if as_json:
        print_json(report)
    else:
        echo(f"restored {report.path} from {report.source}: integrity {report.integrity}, "
                   f"{report.counts.get('records', 0)} records, {report.counts.get('passages', 0)} passages")
        if report.previous:
            echo(f"previous database kept at {report.previous}")


def register(app: typer.Typer) -> None:
    app.command("add")(add)
    app.command("import")(import_)
    app.command("export")(export)
    app.command("get")(get)
    app.command("list")(handle_errors(list_))
    app.command("supersede")(supersede)
    app.command("forget")(forget)
    app.command("purge")(purge)
    app.command("stats")(stats)
    app.command("reindex")(reindex)
    app.command("backup")(backup)
    app.command("restore")(restore)
