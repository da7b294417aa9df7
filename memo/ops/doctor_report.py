"""The report of ``memo doctor`` (``memo.ops.doctor`` for a SQLite file,
``memo.ops.doctor_pg`` for PostgreSQL): checks, findings, severities and exit codes."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memo.embed import DEFAULT_MODEL_ID

EXIT_OK, EXIT_REPAIR, EXIT_DAMAGED = 0, 9, 10
_RANK = {"ok": 0, "notice": 0, "repair": 1, "damaged": 2}
_EXIT = {"ok": EXIT_OK, "notice": EXIT_OK, "repair": EXIT_REPAIR, "damaged": EXIT_DAMAGED}

REINDEX = "run `memo reindex` (rebuilds the keyword, exact and fact indexes from the stored rows)"
REINDEX_BTREES = "run `memo reindex` (rebuilds every index from the stored rows: nothing is lost)"
READ_ONLY = "read-only: searches work, writes need write access"
RESTORE = "restore a backup: `memo restore <backup> --yes` (the current file is kept beside it)"
MIGRATE = "run `memo stats --migrate`"
BACKFILL = "run `memo backfill` to embed them (search works meanwhile, without their vectors)"


@dataclass(frozen=True)
class Check:
    name: str
    ok: bool | None          # None: not run (an earlier check made it pointless)
    detail: str
    ms: float = 0.0


@dataclass(frozen=True)
class Finding:
    check: str
    severity: str            # "notice" | "repair" | "damaged"
    problem: str
    action: str


@dataclass(frozen=True)
class DoctorReport:
    path: str
    status: str              # "ok" | "notice" | "repair" | "damaged"
    exit_code: int
    schema_version: int | None
    checks: tuple[Check, ...]
    findings: tuple[Finding, ...]
    counts: dict[str, int]
    marker: dict[str, Any] | None     # the damaged marker found before the checks
    marker_after: str                 # "none" | "set" | "kept" | "cleared"
    seconds: float


@dataclass
class _Run:
    path: Path
    checks: list[Check] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)
    physical: bool = False   # pages or canonical rows damaged: the marker must be set
    skip: str = ""           # why the remaining checks do not run
    bad_indexes: dict[str, str] = field(default_factory=dict)  # index -> its table, disagreeing
    read_only: str | None = None

    def check(self, name: str, ok: bool | None, detail: str, t0: float) -> None:
        self.checks.append(Check(name, ok, detail, round((time.perf_counter() - t0) * 1000, 1)))

    def find(self, check: str, severity: str, problem: str, action: str, *, physical: bool = True) -> None:
        self.findings.append(Finding(check, severity, problem, action))
        if severity == "damaged" and check not in ("schema",) and physical:
            self.physical = True


# A live passage's record (``r``): neither forgotten nor superseded.
_LIVE = "r.forgotten_at IS NULL AND r.superseded_at IS NULL"


def _count(conn: Any, sql: str, *params: object) -> int:
    return int(conn.execute(sql, params).fetchone()[0])


def pending_vectors(run: _Run, conn: Any, tables: set[str] | frozenset[str]) -> None:
    """Live passages and facts without a vector, for every model that has vectors (the
    default model when none has): a ``notice`` each (``memo backfill`` embeds them; search
    works meanwhile), counted as ``pending_vectors`` / ``pending_fact_vectors``.  One
    definition for both backends (``memo.ops.doctor_pg`` runs it too: plain SQL);
    ``tables``: the tables present (a check is skipped without its tables)."""
    if "vectors" in tables and "records" in tables:
        models = [r[0] for r in conn.execute("SELECT DISTINCT model_id FROM vectors ORDER BY model_id")]
        pending = 0
        for model in models or [DEFAULT_MODEL_ID]:
            pending += _count(conn, f"""SELECT count(*) FROM passages p JOIN records r ON r.id = p.record_id
                                      WHERE {_LIVE} AND NOT EXISTS (SELECT 1 FROM vectors v
                                      WHERE v.passage_pk = p.pk AND v.model_id = ?)""", model)
        run.counts["pending_vectors"] = pending
        if pending:
            run.find("counts", "notice", f"{pending} live passage(s) have no vector yet", BACKFILL)
    if "fact_vectors" in tables and "facts" in tables:
        models = [r[0] for r in conn.execute("SELECT DISTINCT model_id FROM fact_vectors ORDER BY model_id")]
        pending = 0
        for model in models or [DEFAULT_MODEL_ID]:
            pending += _count(conn, """SELECT count(*) FROM facts f WHERE f.forgotten_at IS NULL
                                     AND f.superseded_at IS NULL AND NOT EXISTS (SELECT 1 FROM fact_vectors v
                                     WHERE v.fact_pk = f.pk AND v.model_id = ?)""", model)
        run.counts["pending_fact_vectors"] = pending
        if pending:
            run.find("counts", "notice", f"{pending} live fact(s) have no vector yet", BACKFILL)
