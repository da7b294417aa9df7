"""Arms declare what they are (issue 27.4) and the arm-hit cache is keyed by what each arm
reads (issue 34.2)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from retrieve_helpers import add

from memo.profile import load_profile
from memo.profile_keys import KEYS
from memo.retrieve import SearchRequest, search
from memo.retrieve.arms import ARMS
from memo.retrieve.arms.base import VoteEvidence, default_weigh
from memo.retrieve.run_arms import reads_key
from memo.retrieve.services import ArmServices
from memo.retrieve.types import Evidence

ARMS_DIR = Path(__file__).resolve().parents[3] / "memo" / "retrieve" / "arms"
SECTIONS = {k.section for k in KEYS}
NAMES = {k.name for k in KEYS}


@pytest.mark.parametrize("arm", ARMS, ids=lambda a: a.name)
def test_every_arm_declares_its_evidence_and_the_keys_it_reads(arm):
    assert arm.evidence and arm.evidence <= {"lexical", "semantic", "structural"}
    assert arm.reads and all(r in NAMES or r in SECTIONS for r in arm.reads), arm.reads
    assert "retrieve.fetch_depth" in arm.reads
    profile = load_profile("zscore")
    assert len(reads_key(arm, profile)) == len(arm.reads)
    assert isinstance(arm.weigh(Evidence(1, 0.5, 0.1)), VoteEvidence)


def test_arms_do_not_import_each_other():
    arm_modules = {p.stem for p in ARMS_DIR.glob("*.py")} - {"__init__", "base", "shared"}
    for path in ARMS_DIR.glob("*.py"):
        if path.stem in ("__init__",):
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("memo.retrieve.arms."):
                assert node.module.rsplit(".", 1)[1] not in arm_modules, f"{path.name} imports {node.module}"


def test_the_default_weigh_follows_the_declared_kind():
    ev = Evidence(1, 0.3, 0.1)
    assert default_weigh(frozenset({"lexical"}), ev).lexical
    assert default_weigh(frozenset({"structural"}), ev).structural
    assert default_weigh(frozenset({"semantic"}), ev).cosines == (0.3,)


def test_an_unread_key_reuses_an_arms_hits_and_a_read_key_does_not(conn, monkeypatch):
    from memo.retrieve.arms.keyword import KeywordArm

    for text in ("the backup job runs nightly", "backup of the photos", "a cake recipe"):
        add(conn, text, kind="doc")
    calls = []
    real = KeywordArm.run
    monkeypatch.setattr(KeywordArm, "run", lambda self, ctx: calls.append(1) or real(self, ctx))
    services = ArmServices(arm_cache=True)
    request = SearchRequest("backup job", mode="keyword")
    base = load_profile("zscore")
    search(conn, request, base, services)
    assert len(calls) == 1
    # keys the keyword arm does not read: fusion, a rescorer, the graph: its hits are reused
    for unread in ({"fusion.k": 10}, {"context.boost": 2.0}, {"graph.damping": 0.7}, {"weights.keyword": 0.9}):
        search(conn, request, base.with_overrides(unread), services)
    assert len(calls) == 1
    # a key it reads: the arm runs again
    search(conn, request, base.with_overrides({"retrieve.keyword_section_weight": 2.0}), services)
    assert len(calls) == 2
    search(conn, request, base.with_overrides({"retrieve.fetch_depth": 50}), services)
    assert len(calls) == 3
