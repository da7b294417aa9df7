"""``memo doctor``: check the database and say what to do (thin skin over ``memo.ops.doctor``).

Exit codes: 0 healthy (notices such as pending vectors allowed), 9 a memo command repairs
it (``memo reindex``, ``memo stats --migrate``), 10 damaged (restore a backup), 6 when
there is no database to check or its PostgreSQL server cannot be reached (retry once it is
up), 2 when the server refuses the URL's user, password or database name.
"""

from __future__ import annotations

from typing import Annotated

import typer

from memo.cli.common import DbOption, JsonOption, echo, handle_errors, print_json
from memo.ops.doctor import doctor as run_doctor
from memo.store.db import named_db

_MARK = {True: "ok  ", False: "FAIL", None: "--  "}


@handle_errors
def doctor(full: Annotated[bool, typer.Option(
               "--full", help="integrity_check instead of quick_check: every index against its table "
                              "(about twice quick_check's time).")] = False,
           db: DbOption = None, as_json: JsonOption = False) -> None:
    """Check the database: header, schema version, quick_check (integrity_check with --full),
    the UNIQUE indexes against their tables, full-text indexes, row counts, foreign keys.
    Says what to do about each problem (reindex, migrate, backfill, restore).

    Exit 0 when healthy, 9 when `memo reindex` / `memo stats --migrate` repairs it,
    10 when it is damaged (restore a backup) or not a memo database, 6 when there is no
    database or its PostgreSQL server is unreachable, 2 for a wrong PostgreSQL user,
    password or database name."""
    # memo.ops.doctor reads $MEMO_DB when db is falsy: an empty --db must be refused first,
    # not checked as "the database $MEMO_DB names" (memo.store.db.named_db).
    named_db(db)
    report = run_doctor(db, full=full)
    if as_json:
        print_json(report)
    else:
        echo(f"database  {report.path}")
        for check in report.checks:
            echo(f"  {_MARK[check.ok]}  {check.name:<15} {check.detail}")
        for finding in report.findings:
            echo(f"{finding.severity}: {finding.problem}\n    -> {finding.action}")
        if report.marker is not None or report.marker_after == "set":
            echo(f"damaged marker: {report.marker_after}"
                       + (" (writes are refused until it is cleared)" if report.marker_after in ("set", "kept") else
                          " (writes are allowed again)" if report.marker_after == "cleared" else ""))
        echo(f"status: {report.status} (exit {report.exit_code}, {report.seconds:.2f}s)")
    if report.exit_code:
        raise typer.Exit(report.exit_code)


def register(app: typer.Typer) -> None:
    app.command("doctor")(doctor)
