"""memo/retrieve/run_arms.py: the arms that need neither the model nor another arm's hits
run first, then the others' ``prepare``, then the others; the runs are reported in ARMS
order and the hits are those of running every arm in ARMS order (the old loop)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from memo.embed.service import SemanticService, clear_caches
from memo.embed.vectors import write_vectors
from memo.errors import QuerySyntaxError
from memo.ops.add import add_record
from memo.profile import load_profile
from memo.retrieve.arms import ARMS
from memo.retrieve.arms.base import ArmContext, ArmPlan, Scratch
from memo.retrieve.run_arms import run_arms
from memo.retrieve.scope import build_scope_sql
from memo.retrieve.types import ArmHit
from memo.stored import RecordDraft
from memo.types import Scope
from tests.unit.embed.conftest import FakeEmbedder, fake_spec, fake_vec


class Probe:
    """An arm that records when it planned, prepared and ran."""

    evidence = frozenset({"lexical"})
    reads = ()

    def __init__(self, name: str, log: list[str], *, needs_model: bool = False, after: tuple[str, ...] = (),
                 prepares: bool = False) -> None:
        self.name, self.log, self.needs_model, self.after = name, log, needs_model, after
        if prepares:
            self.prepare = lambda ctx: (log.append(f"prepare {name}"),
                                        ctx.scratch.prepared.__setitem__(name, len(ctx.scratch.hits)))

    def plan(self, ctx: ArmContext) -> ArmPlan:
        self.log.append(f"plan {self.name}")
        return ArmPlan(True, "probe")

    def run(self, ctx: ArmContext) -> list[ArmHit]:
        self.log.append(f"run {self.name}")
        prepared = ctx.scratch.prepared.pop(self.name, None)
        return [ArmHit(pk=len(ctx.scratch.hits) + (prepared or 0) * 100, rank=1, raw=1.0)]


def test_order_of_work_and_of_the_report(fresh_db) -> None:
    log: list[str] = []
    arms = [Probe("semantic", log, needs_model=True), Probe("keyword", log), Probe("exact", log),
            Probe("fact", log, needs_model=True), Probe("entity", log),
            Probe("graph", log, after=("keyword", "semantic"), prepares=True)]
    ctx = ArmContext(conn=fresh_db, query="q", mode="auto", scope_sql=build_scope_sql(Scope()), fetch_depth=10)
    runs = run_arms(ctx, arms)
    assert [r.name for r in runs] == ["semantic", "keyword", "exact", "fact", "entity", "graph"]
    assert log == ["plan keyword", "run keyword", "plan exact", "run exact", "plan entity", "run entity",
                   "prepare graph",
                   "plan semantic", "run semantic", "plan fact", "run fact", "plan graph", "run graph"]
    # graph prepared after the three free arms (3 hits then) and ran after all five
    assert runs[-1].hits[0].pk == 5 + 300 and not ctx.scratch.prepared


def test_the_registry_declares_what_it_waits_for() -> None:
    names = [a.name for a in ARMS]
    by = {a.name: a for a in ARMS}
    assert {n for n in names if by[n].needs_model} == {"semantic", "fact"}
    for arm in ARMS:
        assert all(names.index(dep) < names.index(arm.name) for dep in arm.after), arm.name
    assert by["graph"].after == ("keyword", "semantic") and hasattr(by["graph"], "prepare")
    assert hasattr(by["semantic"], "prepare")


BODIES = ["Alice Moreau joined the Lighthouse project in March.",
          "The Lighthouse project stores its data in Kestrel DB.",
          "Kestrel DB replication broke after the upgrade to version 4.",
          "Bruno Ferreira maintains Kestrel DB backups every Friday.",
          "Lighthouse: the project's home page.", "Kestrel DB", "Alice Moreau and Bruno Ferreira met in Lyon.",
          "Nothing here about anyone."]


def _in_arms_order(ctx: ArmContext) -> list[tuple[str, bool, tuple]]:
    """The old loop: every arm in ARMS order, plan then run, no prepare (a query an arm
    cannot compile skips that arm)."""
    out = []
    for arm in ARMS:
        plan = arm.plan(ctx)
        try:
            hits = tuple(arm.run(ctx)[:ctx.fetch_depth]) if plan.runs else ()
        except QuerySyntaxError:
            out.append((arm.name, False, ()))
            continue
        ctx.scratch.hits[arm.name] = hits
        out.append((arm.name, plan.runs, hits))
    return out


@pytest.mark.parametrize("query", ["How is Alice Moreau related to Bruno Ferreira?", "Kestrel DB backups",
                                   "Lighthouse project data", "???"])
def test_same_hits_as_the_arms_in_order(fresh_db, tmp_path: Path, query: str) -> None:
    clear_caches()
    for i, body in enumerate(BODIES):
        add_record(fresh_db, RecordDraft(body=body, title=body.split(":")[0] if i == 4 else ""))
    pks = [r[0] for r in fresh_db.execute("SELECT p.pk FROM passages p ORDER BY p.pk")]
    texts = [r[0] for r in fresh_db.execute("SELECT text FROM passages ORDER BY pk")]
    write_vectors(fresh_db, "fake-model", pks, np.stack([fake_vec(t) for t in texts]))
    spec = fake_spec(tmp_path)
    svc = SemanticService(fresh_db, spec, embedder=FakeEmbedder())
    prof = load_profile("zscore")
    prof = prof.with_overrides({"entities.min_shared": 1})

    def ctx() -> ArmContext:
        return ArmContext(conn=fresh_db, query=query, mode="auto", scope_sql=build_scope_sql(Scope()),
                          fetch_depth=20, services={"semantic": svc}, profile=prof, scratch=Scratch())

    want = _in_arms_order(ctx())
    got = [(r.name, r.ran, r.hits) for r in run_arms(ctx(), ARMS)]
    assert got == want
    ran = {name for name, runs, hits in want if runs and hits}
    assert ({"keyword", "semantic", "graph"} <= ran) if query != "???" else ("semantic" in ran and "keyword" not in ran), want
