"""``memo doctor`` on PostgreSQL: the checks that mean something on a server.

The file checks (header, quick_check, b-tree indexes, foreign keys) are SQLite's and the
server's own business there (docs/postgres.md); what memo keeps beside the canonical rows
is checked: the schema version, and the keyword index (``tsv`` and the bm25 postings)
against the passages, with CJK text in ``memo.text.cjk.index_form``
(``memo.store.postgres.keyword_form.keyword_index_mismatches``).  A keyword index out of
step is a ``repair`` (``memo reindex`` re-derives it); an older schema is a ``repair``
(``memo stats --migrate``).  No damaged marker: that is a file's.
"""

from __future__ import annotations

import time

from memo.errors import MemoError
from memo.ops.doctor_report import _EXIT, _RANK, MIGRATE, REINDEX, Check, DoctorReport, _Run
from memo.store.db import open_pg
from memo.store.postgres import schema as pg_schema
from memo.store.postgres.keyword_form import keyword_index_mismatches

_SKIPPED = "not run on PostgreSQL: the server checks its own pages, indexes and keys"


def doctor_pg(url: str) -> DoctorReport:
    started = time.perf_counter()
    run = _Run(path=url)   # type: ignore[arg-type]   # a URL, not a file: only reported
    version: int | None = None
    t0 = time.perf_counter()
    try:
        conn = open_pg(url, write=False)
    except MemoError as exc:
        run.check("open", False, str(exc), t0)
        run.find("open", "damaged", f"cannot open the database: {exc}",
                 exc.hint or "check the URL and that the server is up", physical=False)
        conn = None
    if conn is not None:
        try:
            run.check("open", True, "connected; schema readable", t0)
            t0 = time.perf_counter()
            version = pg_schema.schema_version(conn)
            if version < pg_schema.LATEST:
                run.check("schema", False, f"v{version}, this memo writes v{pg_schema.LATEST}", t0)
                run.find("schema", "repair", f"schema v{version} is older than this memo (v{pg_schema.LATEST})",
                         MIGRATE)
            else:
                run.check("schema", True, f"v{version}", t0)
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
        finally:
            conn.close()
    for name in ("open", "schema", "fts"):
        if not any(c.name == name for c in run.checks):
            run.checks.append(Check(name, None, "not run: see above"))
    run.checks.append(Check("file_checks", None, _SKIPPED))
    status = max((f.severity for f in run.findings), key=_RANK.__getitem__, default="ok")
    return DoctorReport(path=url, status=status, exit_code=_EXIT[status], schema_version=version,
                        checks=tuple(run.checks), findings=tuple(run.findings), counts=dict(run.counts),
                        marker=None, marker_after="none", seconds=round(time.perf_counter() - started, 3))
