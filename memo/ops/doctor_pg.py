"""``memo doctor`` on PostgreSQL: the checks that mean something on a server.

The file checks (header, quick_check, b-tree indexes, foreign keys) are SQLite's and the
server's own business there (docs/postgres.md); what memo keeps beside the canonical rows
is checked: the schema version, the keyword index (``tsv`` and the bm25 postings) against
the passages, with CJK text in ``memo.text.cjk.index_form``
(``memo.store.postgres.keyword_form.keyword_index_mismatches``), and the live passages and
facts still without a vector (``memo.ops.doctor.pending_vectors``, SQLite's own check: a
``notice``, ``memo backfill``).  A keyword index out of step is a ``repair`` (``memo
reindex`` re-derives it); an older schema is a ``repair`` (``memo stats --migrate``), a
newer one too (upgrade memo).  No damaged marker: that is a file's.

A server that cannot be reached is not a damaged database: the connection's typed error
goes to the caller as every other command gets it (``StoreUnavailable``, exit 6: retry
once the server is up; a wrong user, password or database name ``ValidationError``, exit 2:
``memo.store.postgres.connection.connect_error``), as SQLite's doctor raises for a missing
file.  A database memo never wrote is a notice when empty (the first write creates the
tables) and ``damaged`` ("not a memo database") when it holds other tables.
"""

from __future__ import annotations

import time

from memo.ops.doctor_report import _EXIT, _RANK, MIGRATE, REINDEX, Check, DoctorReport, _Run, pending_vectors
from memo.store.postgres import schema as pg_schema
from memo.store.postgres.connection import PgConnection, redact
from memo.store.postgres.keyword_form import keyword_index_mismatches

_SKIPPED = "not run on PostgreSQL: the server checks its own pages, indexes and keys"
# Every schema version has these (M001): the pending-vector check's tables.
_VECTOR_TABLES = frozenset({"records", "passages", "vectors", "facts", "fact_vectors"})


def doctor_pg(url: str) -> DoctorReport:
    started = time.perf_counter()
    shown = redact(url)    # the report prints it: never the password
    run = _Run(path=shown)   # type: ignore[arg-type]   # a URL, not a file: only reported
    version: int | None = None
    t0 = time.perf_counter()
    conn = PgConnection(url)       # unreachable / misconfigured: raised, not a finding
    try:
        run.check("open", True, "connected", t0)
        version = _schema(run, conn)
        if version == pg_schema.LATEST:
            _fts(run, conn)
        if 1 <= version <= pg_schema.LATEST:     # memo's tables, as this memo knows them
            # Findings and counts only, no check row of its own: the PostgreSQL checks
            # stay open, schema, fts and file_checks (SQLite's "counts" row compares
            # index row counts, which a server's triggers keep in step).
            pending_vectors(run, conn, _VECTOR_TABLES)
    finally:
        conn.close()
    for name in ("schema", "fts"):
        if not any(c.name == name for c in run.checks):
            run.checks.append(Check(name, None, "not run: see above"))
    run.checks.append(Check("file_checks", None, _SKIPPED))
    status = max((f.severity for f in run.findings), key=_RANK.__getitem__, default="ok")
    return DoctorReport(path=shown, status=status, exit_code=_EXIT[status], schema_version=version,
                        checks=tuple(run.checks), findings=tuple(run.findings), counts=dict(run.counts),
                        marker=None, marker_after="none", seconds=round(time.perf_counter() - started, 3))


def _schema(run: _Run, conn: PgConnection) -> int:
    t0 = time.perf_counter()
    version = pg_schema.schema_version(conn)
    latest = pg_schema.LATEST
    if version == 0:
        tables = [r[0] for r in conn.execute_native(
            "SELECT tablename FROM pg_tables WHERE schemaname = current_schema() ORDER BY tablename").fetchall()]
        if tables:
            run.check("schema", False, f"v0, tables: {', '.join(tables[:8])}", t0)
            run.find("schema", "damaged", f"not a memo database (it holds {', '.join(tables[:5])})",
                     "pass --db (or MEMO_DB) with memo's database URL, or an empty database to start one; "
                     "memo never adds its tables to another program's database", physical=False)
        else:
            run.check("schema", True, "v0: a new, empty database", t0)
            run.find("schema", "notice", "the database is empty (schema v0)",
                     "any write command (`memo add`, `memo import`) creates memo's tables")
    elif version > latest:
        run.check("schema", False, f"v{version}, newer than this memo (v{latest})", t0)
        run.find("schema", "repair", f"schema v{version} is newer than this memo (v{latest})", "upgrade memo")
    elif version < latest:
        run.check("schema", False, f"v{version}, this memo writes v{latest}", t0)
        run.find("schema", "repair", f"schema v{version} is older than this memo (v{latest})", MIGRATE)
    else:
        run.check("schema", True, f"v{version}", t0)
    return version


def _fts(run: _Run, conn: PgConnection) -> None:
    t0 = time.perf_counter()
    bad = keyword_index_mismatches(conn)
    wrong = {k: v for k, v in bad.items() if v}
    if wrong:
        detail = ", ".join(f"{k} {v}" for k, v in wrong.items())
        run.check("fts", False, f"keyword index out of step with the passages: {detail}", t0)
        run.find("fts", "repair", f"the keyword index (tsv, passage_terms) disagrees with the "
                 f"passages' text ({detail})", REINDEX)
    else:
        run.check("fts", True, "tsv, kw columns and passage_terms match the passages", t0)
