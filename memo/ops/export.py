"""``memo export``: the knowledge base as one file any memo imports back, SQLite or PostgreSQL.

``memo backup`` copies a SQLite file for the same machine's memo; an export is what moves a
knowledge base elsewhere: to PostgreSQL (or back), into another database beside what it
holds, to a newer memo, or out of memo altogether (its lines are plain JSON:
``memo.ops.export_lines``).  It holds every version of every record and fact (``as_of``
searches keep working), their tags and passages as stored (so a fact's evidence ids stay
valid), and the vectors (re-embedding a large base takes hours).  Forgotten records and facts
are left out unless asked for, as ``memo purge`` would leave them: an export is often given to
someone else.

Everything is read in one read snapshot (``read_tx``): writers go on meanwhile, and the file
holds the base as it was at one moment.  The file is written under a temporary name beside
the destination and renamed into place once complete, so an interrupted export never leaves
a file that looks whole (and ``memo import`` refuses one without its end line anyway).
"""

from __future__ import annotations

import gzip
import json
import os
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from memo.errors import DiskFull, StoreError, ValidationError
from memo.ops import export_lines as fmt
from memo.ops.guard import store_errors
from memo.ops.leftovers import clean_leftovers, temp_path_beside
from memo.ops.maintenance import check_backup_dest
from memo.ops.store_batch import chunks
from memo.store.connect import read_tx
from memo.store.dialect import is_postgres
from memo.store.migrations import LATEST
from memo.store.records import utc_now
from memo.text.namespaces import check_namespace
from memo.version import __version__

PAGE = 500      # records (or facts) read per query: memory stays bounded on a base of any size


@dataclass(frozen=True, slots=True)
class ExportReport:
    path: str
    records: int
    passages: int
    facts: int
    vectors: dict[str, int] = field(default_factory=dict)   # model id -> passage and fact vectors written
    namespaces: tuple[str, ...] = ()                         # () = every namespace
    left_out: dict[str, int] = field(default_factory=dict)  # forgotten records / facts not exported
    without_vectors: int = 0                                 # exported passages with no vector (embedded on import)
    include_forgotten: bool = False
    size_bytes: int = 0
    seconds: float = 0.0


@dataclass(frozen=True, slots=True)
class ExportProgress:
    done: int
    total: int
    current: str


@store_errors("export")
def export_db(conn: Any, dest: str | Path, *, namespaces: Sequence[str] = (), include_forgotten: bool = False,
              vectors: bool = True, overwrite: bool = False,
              progress: Callable[[ExportProgress], None] | None = None) -> ExportReport:
    """Write the knowledge base (``namespaces`` only, when given) to ``dest`` (gzip when it
    ends in ``.gz``).  An existing file is replaced only with ``overwrite``; the database
    itself and its side files never."""
    started = time.monotonic()
    spaces = tuple(dict.fromkeys(namespaces))
    for ns in spaces:
        check_namespace(ns)
    if str(dest).strip() in ("", "-"):
        raise ValidationError("give the export a file path (it is not written to stdout)",
                              hint="e.g. memo export kb.jsonl.gz")
    real = check_backup_dest(conn, dest, overwrite=overwrite, example="memo-export.jsonl.gz")
    left_out = _check_namespaces(conn, spaces, include_forgotten)
    clean_leftovers(real.parent)
    tmp = temp_path_beside(real, "export")
    counts = {"records": 0, "passages": 0, "facts": 0}
    written: dict[str, int] = {}
    passages_with_vectors = 0
    try:
        with read_tx(conn), _open(tmp, real.name) as out:
            where, params = _where(spaces, include_forgotten)
            total = int(conn.execute(f"SELECT count(*) FROM records WHERE {where}", params).fetchone()[0]) + int(
                conn.execute(f"SELECT count(*) FROM facts WHERE {where}", params).fetchone()[0])
            _write(out, fmt.header(exported_at=utc_now(), memo_version=__version__, schema=LATEST,
                                   namespaces=spaces, include_forgotten=include_forgotten, vectors=vectors))
            for line in _records(conn, where, params, include_forgotten, vectors):
                _write(out, line)
                counts["records"] += 1
                passages_with_vectors += sum(1 for p in line["passages"] if p.get("vectors"))
                counts["passages"] += len(line["passages"])
                _count_vectors(written, (v for p in line["passages"] for v in p.get("vectors", {})))
                if progress is not None and counts["records"] % 100 == 0:
                    progress(ExportProgress(counts["records"], total, "records"))
            for line in _facts(conn, where, params, include_forgotten, vectors):
                _write(out, line)
                counts["facts"] += 1
                _count_vectors(written, line.get("vectors", {}))
                if progress is not None and counts["facts"] % 100 == 0:
                    progress(ExportProgress(counts["records"] + counts["facts"], total, "facts"))
            _write(out, fmt.end_line(counts["records"], counts["passages"], counts["facts"]))
        if progress is not None:
            progress(ExportProgress(total, total, "done"))
        os.replace(tmp, real)
    except OSError as exc:
        if exc.errno == 28:   # ENOSPC
            raise DiskFull(f"export to {real} failed: the disk is full; nothing was written there",
                           hint="free some space or export to another disk") from exc
        raise StoreError(f"export to {real} failed: {exc.strerror or exc}; nothing was written there",
                         hint="check the folder's permissions and free space") from exc
    finally:
        tmp.unlink(missing_ok=True)
    return ExportReport(path=str(real), records=counts["records"], passages=counts["passages"], facts=counts["facts"],
                        vectors=dict(sorted(written.items())), namespaces=spaces,
                        left_out=left_out, without_vectors=counts["passages"] - passages_with_vectors,
                        include_forgotten=include_forgotten, size_bytes=real.stat().st_size,
                        seconds=round(time.monotonic() - started, 3))


def _check_namespaces(conn: Any, spaces: tuple[str, ...], include_forgotten: bool) -> dict[str, int]:
    """A namespace asked for that holds nothing to export is an error before anything is
    written (a typo in a nightly job's --namespace wrote an empty export, exit 0, every
    night); and what the export leaves out: the forgotten records and facts."""
    where, params = _where(spaces, True)
    held = {r[0] for r in conn.execute(f"SELECT DISTINCT namespace FROM records WHERE {where}", params)}
    held |= {r[0] for r in conn.execute(f"SELECT DISTINCT namespace FROM facts WHERE {where}", params)}
    empty = [ns for ns in spaces if ns not in held]
    if empty:
        names = sorted(r[0] for r in conn.execute("SELECT DISTINCT namespace FROM records"))
        raise ValidationError(f"namespace {empty[0]!r} holds no record or fact; nothing was written",
                              hint=f"namespaces here: {', '.join(names[:20]) or 'none'} (--namespace names one "
                                   "exactly: 'eng' is not 'eng/backend')")
    if include_forgotten:
        return {}
    return {t: int(conn.execute(f"SELECT count(*) FROM {t} WHERE {where} AND forgotten_at IS NOT NULL",
                                params).fetchone()[0]) for t in ("records", "facts")}


class _Out:
    """The export's byte stream (gzip or plain) and its underlying file, fsynced at close."""

    def __init__(self, raw: IO[bytes], zipped: IO[bytes] | None) -> None:
        self.raw, self.zipped = raw, zipped

    def write(self, data: bytes) -> None:
        (self.zipped or self.raw).write(data)

    def __enter__(self) -> _Out:
        return self

    def __exit__(self, *exc: object) -> None:
        try:
            if self.zipped is not None:
                self.zipped.close()
            if exc[0] is None:
                self.raw.flush()
                os.fsync(self.raw.fileno())
        finally:
            self.raw.close()


def _open(tmp: Path, name: str) -> _Out:
    # Readable by its owner only: an export holds the whole knowledge base (0644 let every
    # user of the machine read it).
    raw = os.fdopen(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), "wb")  # noqa: SIM115 - closed by _Out
    zipped = gzip.GzipFile(filename=name.removesuffix(".gz"), mode="wb", fileobj=raw, mtime=0) \
        if name.endswith(".gz") else None
    return _Out(raw, zipped)


def _write(out: _Out, obj: dict[str, Any]) -> None:
    out.write(json.dumps(obj, ensure_ascii=False, separators=(",", ":")).encode("utf-8", "surrogatepass") + b"\n")


def _count_vectors(written: dict[str, int], models: Iterator[str] | dict[str, str]) -> None:
    for model in models:
        written[model] = written.get(model, 0) + 1


def _where(spaces: tuple[str, ...], include_forgotten: bool) -> tuple[str, tuple[str, ...]]:
    parts = ["1 = 1"]
    if spaces:
        parts.append(f"namespace IN ({','.join('?' * len(spaces))})")
    if not include_forgotten:
        parts.append("forgotten_at IS NULL")
    return " AND ".join(parts), spaces


def _pages(conn: Any, table: str, where: str, params: tuple[str, ...]) -> Iterator[list[Any]]:
    """The table's rows in the order they were written, a page at a time (keyset: no
    OFFSET, no cursor left open across the other queries, on either backend): facts by
    pk; records by their first passage's pk (records have no such key of their own on
    PostgreSQL, as ``memo.store.mentions.rebuild_mentions`` says), so an import writes them,
    and derives their entity rows, in the order the source did."""
    after = 0
    while True:
        if table == "facts":
            rows = conn.execute(f"SELECT * FROM facts WHERE {where} AND pk > ? ORDER BY pk LIMIT {PAGE}",
                                (*params, after)).fetchall()
            if not rows:
                return
            after = int(rows[-1]["pk"])
            yield rows
            continue
        firsts = conn.execute(f"SELECT pk, record_id FROM passages WHERE pk > ? AND ord = 0 ORDER BY pk LIMIT {PAGE}",
                              (after,)).fetchall()
        if not firsts:
            return
        after = int(firsts[-1][0])
        ids = [r[1] for r in firsts]
        got = {r["id"]: r for r in conn.execute(
            f"SELECT * FROM records WHERE {where} AND id IN ({','.join('?' * len(ids))})", (*params, *ids))}
        rows = [got[i] for i in ids if i in got]
        if rows:
            yield rows


def _vectors_of(conn: Any, table: str, key: str, pks: Sequence[int]) -> dict[int, dict[str, str]]:
    """pk -> {model id: base64 of its float32 vector} for the rows of ``table`` (vectors or
    fact_vectors) keyed by ``key``."""
    out: dict[int, dict[str, str]] = {}
    pg = is_postgres(conn)
    col = "vec::text" if pg else "vec"
    for chunk in chunks(list(pks)):
        for pk, model, vec in conn.execute(
                f"SELECT {key}, model_id, {col} FROM {table} WHERE {key} IN ({','.join('?' * len(chunk))}) "
                "ORDER BY model_id", tuple(chunk)):
            out.setdefault(int(pk), {})[model] = fmt.encode_vector(_pg_bytes(vec) if pg else bytes(vec))
    return out


def _pg_bytes(text: str) -> bytes:
    """pgvector's text form ``[0.1,0.2,...]`` as little-endian float32 bytes."""
    import numpy as np  # only a PostgreSQL export with vectors needs it

    return np.asarray(json.loads(text), dtype="<f4").tobytes()


def _records(conn: Any, where: str, params: tuple[str, ...], include_forgotten: bool,
             vectors: bool) -> Iterator[dict[str, Any]]:
    for rows in _pages(conn, "records", where, params):
        ids = [r["id"] for r in rows]
        tags: dict[str, list[str]] = {}
        passages: dict[str, list[Any]] = {}
        for chunk in chunks(ids):
            marks = ",".join("?" * len(chunk))
            for rid, tag in conn.execute(f"SELECT record_id, tag FROM record_tags WHERE record_id IN ({marks}) "
                                         "ORDER BY record_id, tag", tuple(chunk)):
                tags.setdefault(rid, []).append(tag)
            for p in conn.execute(f"SELECT * FROM passages WHERE record_id IN ({marks}) ORDER BY record_id, ord",
                                  tuple(chunk)):
                passages.setdefault(p["record_id"], []).append(p)
        vecs = _vectors_of(conn, "vectors", "passage_pk", [p["pk"] for ps in passages.values() for p in ps]) \
            if vectors else {}
        for r in rows:
            line: dict[str, Any] = {"type": "record"}
            line.update({k: (json.loads(r[k] or "{}") if k == "meta" else r[k]) for k in fmt.RECORD_FIELDS})
            line["tags"] = tags.get(r["id"], [])
            line["passages"] = [_passage(p, vecs.get(int(p["pk"]))) for p in passages.get(r["id"], [])]
            yield line


def _passage(p: Any, vecs: dict[str, str] | None) -> dict[str, Any]:
    out = {k: p[k] for k in fmt.PASSAGE_FIELDS}
    if vecs:
        out["vectors"] = vecs
    return out


def _facts(conn: Any, where: str, params: tuple[str, ...], include_forgotten: bool,
           vectors: bool) -> Iterator[dict[str, Any]]:
    hidden = "" if include_forgotten else " AND r.forgotten_at IS NULL"
    for rows in _pages(conn, "facts", where, params):
        pks = [int(f["pk"]) for f in rows]
        evidence: dict[int, list[str]] = {}
        for chunk in chunks(pks):
            for fpk, pid in conn.execute(
                    "SELECT e.fact_pk, p.id FROM fact_evidence e JOIN passages p ON p.pk = e.passage_pk "
                    f"JOIN records r ON r.id = p.record_id WHERE e.fact_pk IN ({','.join('?' * len(chunk))}){hidden} "
                    "ORDER BY e.fact_pk, p.id", tuple(chunk)):
                evidence.setdefault(int(fpk), []).append(pid)
        vecs = _vectors_of(conn, "fact_vectors", "fact_pk", pks) if vectors else {}
        for f in rows:
            line: dict[str, Any] = {"type": "fact"}
            line.update({k: (json.loads(f[k] or "{}") if k == "meta" else f[k]) for k in fmt.FACT_FIELDS})
            line["evidence"] = evidence.get(int(f["pk"]), [])
            if vecs.get(int(f["pk"])):
                line["vectors"] = vecs[int(f["pk"])]
            yield line
