"""``memo doctor``: check a database and say what to do about what is wrong.

Checks, in order (each one a ``Check`` in the report; every problem a ``Finding`` with the
action that fixes it):

1. ``header``: the file's first 100 bytes (``memo.store.damage.check_header``); an empty or
   non-SQLite file stops here.
2. ``open``: memo's connection factory can open it.
3. ``schema``: ``PRAGMA user_version`` against the tables present (not memo's; version lost
   but provable; older / newer than this memo).
4. ``quick_check``: ``PRAGMA quick_check`` (every page; O(size), docs/architecture.md);
   with ``full``, ``integrity_check`` instead: also every index against its table.
4b. ``indexes``: ``PRAGMA integrity_check`` of the tables whose UNIQUE indexes writes rely
   on (``memo.store.damage.UNIQUE_GUARDED``; covered by ``integrity_check`` with ``full``).
   quick_check never compares an index with its table: an index entry whose key bytes
   changed passes it, yet ``memo get`` misses the row and ``memo add`` stores a second
   live copy.  An index that disagrees with its table is a ``repair`` (``memo reindex``
   runs SQLite's REINDEX); rows missing from a table are ``damaged``.
5. ``fts``: FTS5 ``integrity-check`` of every full-text index, with rank 1 so an
   external-content index is also compared with its content table; ``passages_fts``
   holds ``memo.text.cjk.index_form`` of its rows, not the rows as stored, so it gets
   rank 0 (its structure) and memo's own comparison with the rows
   (``memo.store.derived.keyword_index_mismatches``).
6. ``counts``: rows of the keyword and exact indexes against ``passages`` (and ``facts_fts``
   against ``facts``); vectors whose passage (fact) is gone; passages (facts) without a
   vector: pending, a notice.
7. ``foreign_keys``: ``PRAGMA foreign_key_check``.

On PostgreSQL (a ``postgresql://`` URL) ``memo.ops.doctor_pg`` runs instead: schema
version, the keyword index (tsv, CJK index form, bm25 postings) against the passages, and
the pending vectors of step 6 (``pending_vectors``, shared).  A server it cannot reach is
``StoreUnavailable`` (exit 6) as for every command, not a finding.

Beside them, a ``leftovers`` notice lists temporary files of killed backups and restores
in the database's folder with the command that removes them (``memo.ops.leftovers``).

Severity of a finding, and the exit code of ``memo doctor``:

* ``notice`` (exit 0): nothing is wrong; e.g. vectors pending (``memo backfill``).
* ``repair`` (exit 9): a memo command repairs it: ``memo reindex`` (derived indexes),
  ``memo stats --migrate`` (older schema, or a lost version number the tables prove),
  upgrading memo (newer schema).
* ``damaged`` (exit 10): the file or its canonical rows are damaged, or it is not a memo
  database: ``memo restore <backup> --yes`` (or point --db at the right file).

The damaged marker (``memo.store.damage``) follows the verdict: set when the file is
damaged, cleared when its pages and canonical rows are intact (a ``repair`` verdict clears
it too, so ``memo reindex`` can run), except that indexes disagreeing with their tables set
(or keep) a marker for ``memo reindex``: writes stay refused until it rebuilt them.
Nothing else is written.

Not damage: a read-only file or folder (a notice: searches work, writes need write
access; the FTS5 check, which SQLite runs as a write, is skipped); a full disk that keeps
the file from being opened (DiskFull, exit 12).  A path that is not a regular file (a
folder, a device, a FIFO) or a file with nothing of SQLite in it is "not a memo database"
(point --db at memo's file), never "restore a backup".
"""

from __future__ import annotations

import os
import re
import sqlite3
import time
from pathlib import Path
from typing import Any

from memo.errors import DiskFull, MemoError, StoreError
from memo.ops.doctor_report import (  # noqa: F401  (also memo.ops.doctor's names)
    _EXIT,
    _LIVE,
    _RANK,
    BACKFILL,
    EXIT_DAMAGED,
    EXIT_OK,
    EXIT_REPAIR,
    MIGRATE,
    READ_ONLY,
    REINDEX,
    REINDEX_BTREES,
    RESTORE,
    Check,
    DoctorReport,
    Finding,
    _Run,
    pending_vectors,
)
from memo.ops.leftovers import doctor_notes
from memo.store.connect import connect
from memo.store.damage import (
    DOCTOR_GUARDED,
    NOT_A_FILE_HINT,
    NOT_MEMO_HINT,
    check_header,
    check_lines,
    clear_marker,
    guarded_index_lines,
    integrity_lines,
    is_corrupt_error,
    is_fts_shadow,
    mark_damaged,
    not_a_file,
    read_marker,
    split_integrity,
)
from memo.store.db import resolve_db_path
from memo.store.derived import keyword_index_mismatches
from memo.store.dialect import is_db_url
from memo.store.migrations import LATEST, MEMO_TABLES, proven_version, user_tables, user_version


def doctor(path: str | Path | None = None, *, full: bool = False) -> DoctorReport:
    """Check the database at ``path`` (default: $MEMO_DB, else the user data dir).
    ``full``: ``integrity_check`` (every index against its table) instead of quick_check."""
    if is_db_url(path if path else os.environ.get("MEMO_DB")):
        from memo.ops.doctor_pg import doctor_pg  # the server's checks (schema, keyword index)

        return doctor_pg(str(path if path else os.environ["MEMO_DB"]))
    started = time.perf_counter()
    p = resolve_db_path(path)
    if not p.exists():
        raise StoreError(f"no database at {p}", hint="pass --db / MEMO_DB with the database file")
    kind = not_a_file(p)
    if kind:   # before any read: reading a FIFO would block, a device is never a database
        raise StoreError(f"{p} {kind}, not a memo database file", hint=NOT_A_FILE_HINT)
    run = _Run(p)
    marker = read_marker(p)
    version: int | None = None
    conn: sqlite3.Connection | None = None
    try:
        if _header(run):
            conn = _open(run)
        if conn is not None:
            version = _schema(run, conn)
            _page_check(run, conn, full)
            if not run.skip:
                _indexes(run, conn, full)
                _fts(run, conn)
                _counts(run, conn)
                _foreign_keys(run, conn)
        first = "integrity_check" if full else "quick_check"
        for name in ("open", "schema", first, "indexes", "fts", "counts", "foreign_keys"):
            if not any(c.name == name for c in run.checks):
                run.checks.append(Check(name, None, f"not run: {run.skip or 'see above'}"))
    finally:
        if conn is not None:
            conn.close()
    for problem, action in doctor_notes(p):     # killed backups' and restores' copies
        run.find("leftovers", "notice", problem, action)
    status = max((f.severity for f in run.findings), key=_RANK.__getitem__, default="ok")
    marker_after = _update_marker(run, marker, status)
    return DoctorReport(path=str(p), status=status, exit_code=_EXIT[status], schema_version=version,
                        checks=tuple(run.checks), findings=tuple(run.findings), counts=dict(run.counts),
                        marker=marker, marker_after=marker_after,
                        seconds=round(time.perf_counter() - started, 3))


def _update_marker(run: _Run, marker: dict[str, Any] | None, status: str) -> str:
    header_ok = any(c.name == "header" and c.ok for c in run.checks)
    if run.physical and header_ok:
        reason = "; ".join(f.problem for f in run.findings if f.severity == "damaged")
        if marker is not None:
            return "kept"
        return "set" if mark_damaged(run.path, f"memo doctor: {reason}") else "none"
    if run.bad_indexes:
        # Writes through a disagreeing index go wrong (a second live copy, a row missed):
        # refused until `memo reindex`, which this marker lets through.
        if marker is not None and marker.get("repair") == "reindex":
            return "kept"
        if marker is not None and not clear_marker(run.path):
            return "kept"
        reason = f"indexes disagree with their tables: {', '.join(sorted(run.bad_indexes))}"
        return "set" if mark_damaged(run.path, f"memo doctor: {reason}", repair="reindex") else \
            ("cleared" if marker is not None else "none")
    if marker is not None and status != "damaged":
        return "cleared" if clear_marker(run.path) else "kept"
    return "kept" if marker is not None else "none"


def _header(run: _Run) -> bool:
    t0 = time.perf_counter()
    problem = check_header(run.path)
    if problem is None:
        run.check("header", True, "SQLite 3 header, sane page size and format bytes", t0)
        return True
    run.check("header", False, problem, t0)
    run.skip = "the file header is not a SQLite database's"
    if problem.startswith("is not a memo database"):
        run.find("header", "damaged", f"{run.path} {problem}", NOT_MEMO_HINT, physical=False)
    elif problem.startswith("is empty"):
        run.find("header", "damaged", f"{run.path} is empty (0 bytes): not a memo database",
                 "delete it to start a new database, or " + RESTORE)
    else:
        run.find("header", "damaged", f"{run.path} {problem}", RESTORE)
    return False


def _open(run: _Run) -> sqlite3.Connection | None:
    t0 = time.perf_counter()
    try:
        conn = connect(run.path)
        conn.execute("SELECT count(*) FROM sqlite_schema").fetchone()
    except DiskFull:
        raise    # not damage: nothing to check until there is room to open it (exit 6)
    except (MemoError, sqlite3.DatabaseError) as exc:
        run.check("open", False, str(exc), t0)
        run.skip = "the database cannot be opened"
        run.find("open", "damaged", f"cannot open the database: {exc}", RESTORE)
        return None
    run.read_only = getattr(conn, "memo_readonly", None)
    if run.read_only:
        run.check("open", True, f"opened read-only: {run.read_only}", t0)
        run.find("open", "notice", f"{READ_ONLY} ({run.read_only})",
                 "nothing to repair; give memo write access to the file and its folder to write")
    else:
        run.check("open", True, "opened with memo's settings", t0)
    return conn


def _schema(run: _Run, conn: sqlite3.Connection) -> int | None:
    t0 = time.perf_counter()
    try:
        version = user_version(conn)
        tables = user_tables(conn)
    except sqlite3.DatabaseError as exc:
        run.check("schema", False, str(exc), t0)
        run.find("schema", "damaged", f"the schema cannot be read: {exc}", RESTORE)
        run.physical = True
        run.skip = "the schema cannot be read"
        return None
    present = [t for t in MEMO_TABLES if t in tables]
    if version == 0 and not tables:
        run.check("schema", True, "v0: a new, empty database", t0)
        run.find("schema", "notice", "the database is empty (schema v0)",
                 "any write command (`memo add`, `memo import`) creates memo's tables")
        run.skip = "the database is empty"
    elif not present:
        run.check("schema", False, f"v{version}, tables: {', '.join(sorted(tables)[:8])}", t0)
        run.find("schema", "damaged", f"not a memo database (it holds {', '.join(sorted(tables)[:5])})",
                 "pass --db (or MEMO_DB) with memo's database file; memo never adds its tables to "
                 "another program's database")
        run.skip = "not a memo database"
    elif version == 0:
        proven = proven_version(conn)
        run.check("schema", False, "v0 with memo's tables: the version number was lost", t0)
        if proven is not None:
            run.find("schema", "repair", f"schema version lost (0); the tables match memo schema v{proven} exactly",
                     f"{MIGRATE}: it restores v{proven} after quick_check (then migrates if needed)")
        else:
            run.find("schema", "damaged", "schema version lost (0) and the tables match no memo schema exactly",
                     RESTORE)
            run.physical = True
    elif version > LATEST:
        run.check("schema", False, f"v{version}, newer than this memo (v{LATEST})", t0)
        run.find("schema", "repair", f"schema v{version} is newer than this memo (v{LATEST})",
                 "upgrade memo (if no newer memo ever wrote this file, its version number is damaged: "
                 + RESTORE + ")")
        run.skip = "the schema is newer than this memo"
    else:
        missing = [t for t in MEMO_TABLES if t not in tables]
        if missing:
            run.check("schema", False, f"v{version}, missing {', '.join(missing)}", t0)
            run.find("schema", "damaged", f"schema v{version} but memo's table(s) {', '.join(missing)} are missing",
                     RESTORE)
            run.physical = True
            run.skip = "memo's tables are missing"
        elif version < LATEST:
            run.check("schema", True, f"v{version}, older than this memo (v{LATEST})", t0)
            run.find("schema", "repair", f"schema v{version} is older than this memo (v{LATEST})", MIGRATE)
        else:
            run.check("schema", True, f"v{version}", t0)
    return version


_TREE = re.compile(r"\b[Tt]ree (\d+)\b")


def _page_check(run: _Run, conn: sqlite3.Connection, full: bool) -> None:
    """quick_check, or with ``full`` integrity_check (which also compares every index
    with its table: ``_index_findings`` sorts those lines out as repairs)."""
    t0 = time.perf_counter()
    name = "integrity_check" if full else "quick_check"
    if full:
        lines = integrity_lines(conn)
    else:
        try:
            lines = check_lines(conn, "PRAGMA quick_check(100)")
        except sqlite3.DatabaseError as exc:
            lines = [f"quick_check stopped: {exc}"]
    if lines == ["ok"]:
        run.check(name, True, "ok", t0)
        return
    _, other = split_integrity(lines)
    run.check(name, False, f"{len(lines)} problem(s): {lines[0][:200]}", t0)
    _index_findings(run, conn, name, lines)
    if not other:
        return
    where = _tables_of(conn, other)
    place = f" in {', '.join(where)}" if where else ""
    if where and all(is_fts_shadow(t) for t in where):
        # Only full-text index b-trees: derived from the rows, rebuilt by reindex.
        run.find(name, "repair", f"{name} finds {len(other)} problem(s){place}: {other[0][:200]}", REINDEX)
        return
    run.find(name, "damaged", f"{name} finds {len(other)} problem(s){place}: {other[0][:200]}", RESTORE)


def _index_findings(run: _Run, conn: sqlite3.Connection, check: str, lines: list[str]) -> None:
    """A repair finding per index that disagrees with its table (REINDEX rebuilds it from
    the table's rows)."""
    indexes, _ = split_integrity(lines)
    if not indexes:
        return
    tables = {r[0]: r[1] for r in conn.execute("SELECT name, tbl_name FROM sqlite_schema WHERE type = 'index'")}
    for index in sorted(indexes):
        if index in run.bad_indexes:
            continue
        run.bad_indexes[index] = tables.get(index, "?")
        sample = next((ln for ln in lines if ln.endswith(f" {index}")), "")
        run.find(check, "repair", f"the index {index} of {tables.get(index, '?')} disagrees with its table "
                 f"({sample[:120]}); writes are refused until it is rebuilt", REINDEX_BTREES)


def _indexes(run: _Run, conn: sqlite3.Connection, full: bool) -> None:
    t0 = time.perf_counter()
    if full:
        run.check("indexes", not run.bad_indexes, "covered by integrity_check" if not run.bad_indexes else
                  "disagree: " + ", ".join(sorted(run.bad_indexes)), t0)
        return
    try:
        lines = guarded_index_lines(conn, DOCTOR_GUARDED)
    except sqlite3.DatabaseError as exc:
        lines = [f"integrity_check stopped: {exc}"]
    if not lines:
        run.check("indexes", True, "ok: the UNIQUE indexes of records, passages, facts and entities match their "
                  "tables", t0)
        return
    run.check("indexes", False, f"{len(lines)} problem(s): {lines[0][:200]}", t0)
    _index_findings(run, conn, "indexes", lines)
    _, other = split_integrity(lines)
    if other:
        run.find("indexes", "damaged", f"integrity_check finds {len(other)} problem(s): {other[0][:200]}", RESTORE)


def _tables_of(conn: sqlite3.Connection, lines: list[str]) -> list[str]:
    """Names of the tables whose b-trees quick_check names ("Tree N ..." is a root page)."""
    roots = {int(m.group(1)) for line in lines for m in _TREE.finditer(line)}
    if not roots:
        return []
    try:
        rows = conn.execute("SELECT rootpage, tbl_name FROM sqlite_schema WHERE rootpage > 0").fetchall()
    except sqlite3.DatabaseError:
        return []
    return sorted({r[1] for r in rows if r[0] in roots})


def _fts_tables(conn: sqlite3.Connection) -> list[tuple[str, str | None]]:
    """(name, content table or None) for every FTS5 table."""
    out = []
    for name, sql in conn.execute("SELECT name, sql FROM sqlite_schema WHERE type = 'table' "
                                  "AND sql LIKE 'CREATE VIRTUAL TABLE%' ORDER BY name"):
        if "fts5" not in (sql or "").lower():
            continue
        m = re.search(r"content\s*=\s*'([^']*)'", sql)
        out.append((name, m.group(1) or None if m else None))
    return out


def _fts(run: _Run, conn: sqlite3.Connection) -> None:
    t0 = time.perf_counter()
    bad: list[str] = []
    try:
        tables = _fts_tables(conn)
    except sqlite3.DatabaseError as exc:
        run.check("fts", False, f"cannot list the full-text indexes: {exc}", t0)
        return
    if run.read_only:
        # FTS5 runs its integrity-check as an INSERT: SQLite refuses it on a read-only file.
        run.check("fts", None, "not run: the database is read-only (FTS5's check is a write; run `memo doctor` "
                  "on a writable copy to include it)", t0)
        return
    for name, _content in tables:
        try:
            if name == "passages_fts":
                # Its rows are index_form of the text (memo.text.cjk), not the text as stored:
                # FTS5 checks its own structure (rank 0), memo compares it with the rows.
                conn.execute('INSERT INTO passages_fts(passages_fts, rank) VALUES (\'integrity-check\', 0)')
                if (off := keyword_index_mismatches(conn)):
                    bad.append(name)
                    run.find("fts", "repair", f"the full-text index {name} does not match its rows "
                             f"({off} terms differ)", REINDEX)
            else:
                # rank 1: an external-content index is compared with its content table as well.
                conn.execute(f'INSERT INTO "{name}"("{name}", rank) VALUES (\'integrity-check\', 1)')
        except sqlite3.DatabaseError as exc:
            if not is_corrupt_error(exc):
                bad.append(f"{name}: could not run ({exc})")
                continue
            bad.append(name)
            run.find("fts", "repair", f"the full-text index {name} does not match its rows ({exc})", REINDEX)
    run.check("fts", not bad, "ok: " + ", ".join(n for n, _ in tables) if not bad else "; ".join(bad), t0)


def _one(conn: sqlite3.Connection, sql: str, *params: object) -> int:
    return int(conn.execute(sql, params).fetchone()[0])


def _counts(run: _Run, conn: sqlite3.Connection) -> None:
    t0 = time.perf_counter()
    tables = user_tables(conn)
    c = run.counts
    problems: list[str] = []
    try:
        c["passages"] = _one(conn, "SELECT count(*) FROM passages")
        if "passages_fts_docsize" in tables:
            c["keyword_rows"] = _one(conn, "SELECT count(*) FROM passages_fts_docsize")
            missing = _one(conn, "SELECT count(*) FROM passages WHERE pk NOT IN (SELECT id FROM passages_fts_docsize)")
            extra = _one(conn, "SELECT count(*) FROM passages_fts_docsize WHERE id NOT IN (SELECT pk FROM passages)")
            if missing or extra:
                problems.append(f"keyword index: {missing} passage(s) missing, {extra} row(s) without a passage")
        if "exact_fts" in tables:
            c["exact_rows"] = _one(conn, "SELECT count(*) FROM exact_fts")
            missing = _one(conn, "SELECT count(*) FROM passages WHERE pk NOT IN (SELECT rowid FROM exact_fts)")
            extra = _one(conn, "SELECT count(*) FROM exact_fts WHERE rowid NOT IN (SELECT pk FROM passages)")
            if missing or extra:
                problems.append(f"exact index: {missing} passage(s) missing, {extra} row(s) without a passage")
        if "facts" in tables and "facts_fts_docsize" in tables:
            c["facts"] = _one(conn, "SELECT count(*) FROM facts")
            c["fact_index_rows"] = _one(conn, "SELECT count(*) FROM facts_fts_docsize")
            missing = _one(conn, "SELECT count(*) FROM facts WHERE pk NOT IN (SELECT id FROM facts_fts_docsize)")
            extra = _one(conn, "SELECT count(*) FROM facts_fts_docsize WHERE id NOT IN (SELECT pk FROM facts)")
            if missing or extra:
                problems.append(f"fact index: {missing} fact(s) missing, {extra} row(s) without a fact")
        for vt, key, parent in (("vectors", "passage_pk", "passages"), ("fact_vectors", "fact_pk", "facts")):
            if vt in tables and parent in tables:
                c[vt] = _one(conn, f"SELECT count(*) FROM {vt}")
                orphans = _one(conn, f"SELECT count(*) FROM {vt} WHERE {key} NOT IN (SELECT pk FROM {parent})")
                if orphans:
                    problems.append(f"{vt}: {orphans} vector(s) of {parent} that no longer exist")
        pending_vectors(run, conn, tables)
    except sqlite3.DatabaseError as exc:
        run.check("counts", False, f"stopped: {exc}", t0)
        sev = "damaged" if is_corrupt_error(exc) else "repair"
        run.find("counts", sev, f"counting rows failed: {exc}", RESTORE if sev == "damaged" else REINDEX)
        return
    for problem in problems:
        run.find("counts", "repair", problem, REINDEX)
    detail = ", ".join(f"{k} {v}" for k, v in c.items())
    run.check("counts", not problems, detail if not problems else "; ".join(problems), t0)


_DERIVED_FK = {"vectors", "fact_vectors"}   # orphans are rebuilt away by `memo reindex`


def _foreign_keys(run: _Run, conn: sqlite3.Connection) -> None:
    t0 = time.perf_counter()
    try:
        rows = conn.execute("PRAGMA foreign_key_check").fetchall()
    except sqlite3.DatabaseError as exc:
        run.check("foreign_keys", False, f"stopped: {exc}", t0)
        if is_corrupt_error(exc):
            run.find("foreign_keys", "damaged", f"foreign_key_check failed: {exc}", RESTORE)
        return
    by_table: dict[str, int] = {}
    via_index: dict[str, str] = {}
    damaged_parents = set(run.bad_indexes.values())
    for r in rows:
        by_table[r[0]] = by_table.get(r[0], 0) + 1
        if r[2] in damaged_parents:
            via_index[r[0]] = r[2]
    for table, n in sorted(by_table.items()):
        if table in via_index:
            # The check looks parents up through their (damaged) indexes: not proof of lost rows.
            run.find("foreign_keys", "repair", f"{table}: {n} row(s) whose {via_index[table]} row the damaged "
                     f"index cannot find; run `memo doctor` again after the reindex", REINDEX_BTREES)
        elif table not in _DERIVED_FK:   # vectors: reported by the counts check already
            run.find("foreign_keys", "damaged", f"{table}: {n} row(s) point at rows that no longer exist "
                     "(canonical rows lost)", RESTORE)
    detail = "ok" if not by_table else ", ".join(f"{t} {n}" for t, n in sorted(by_table.items()))
    run.check("foreign_keys", not by_table, detail, t0)
