"""The fast regression gate can fail: real breakages applied to a copy of the pipeline
(monkeypatched in this process; the replay runs in-process with one worker, so the patch
reaches every search) must each make ``memo eval regress --fast`` fail.

Uses the bundled sample with the shipped model (the vectors are cached under the normal
eval cache after the first run, ~90 s cold)."""

from __future__ import annotations

import pytest

import memo.retrieve.arms.keyword as keyword_arm
import memo.retrieve.fusion as fusion
from memo.retrieve import impact, kw_search
from memo_eval.grid import RunSpec
from memo_eval.regress import regress

pytestmark = pytest.mark.slow


def _fast(tmp_path, progress=None):
    return regress(fast=True, workers=1, out=tmp_path / "runs", status=progress)


def _failed(res):
    return sorted({(c["check"], c["metric"]) for c in res["checks"] if c["status"] == "FAIL"})


def test_fast_gate_passes_on_the_shipped_pipeline(tmp_path, progress):
    res = _fast(tmp_path, progress)
    assert res["passed"], _failed(res)
    assert res["batches"][0]["dataset"] == "sample"
    metrics = {c["metric"] for c in res["checks"]}
    for arm in ("keyword", "exact", "semantic", "fact", "entity", "graph"):
        assert f"by_arm.{arm}.ran" in metrics


def test_dropping_the_section_column_fails_the_gate(tmp_path, monkeypatch):
    # The keyword arm searches the text column only (as if passages_fts lost "section").
    match = keyword_arm.keyword_match
    monkeypatch.setattr(keyword_arm, "keyword_match", lambda q: "{text} : (" + match(q) + ")")
    # The fast keyword paths (persistent postings, the in-memory impact index the replay's
    # worker builds) rank the query's words, not the match string: off, so FTS5 ranks the
    # broken match, as every path would with the column really gone.
    monkeypatch.setattr(impact, "current_index", lambda conn, table="passages_fts": None)
    monkeypatch.setattr(impact, "usable_index", lambda conn, table: None)
    monkeypatch.setattr(kw_search, "topk", lambda *a, **k: None)
    res = _fast(tmp_path)
    assert not res["passed"]
    assert ("sample-rrf-all-arms", "ranking.agreement") in _failed(res)


def test_removing_the_rrf_tiebreak_fails_the_gate(tmp_path, monkeypatch):
    monkeypatch.setitem(fusion.FUSIONS, "rrf",
                        (fusion.rrf_contributions, lambda run, w, k: [0.0] * len(run.hits)))
    res = _fast(tmp_path)
    assert not res["passed"]
    assert ("sample-rrf-all-arms", "ranking.agreement") in _failed(res)


def test_halving_a_weight_fails_the_gate(tmp_path, monkeypatch):
    load = RunSpec.load

    def halved(self):
        p = load(self)
        return p.with_overrides({"weights.keyword": p.weights["keyword"] / 2})

    monkeypatch.setattr(RunSpec, "load", halved)
    res = _fast(tmp_path)
    assert not res["passed"]
    failed = _failed(res)
    assert ("sample-rrf-all-arms", "by_arm.keyword.share") in failed
    assert ("sample-rrf-all-arms", "ranking.agreement") in failed


# Every stage the default profile turns on is seen by the fast gate (issue 28.3): switch
# each off in the code (not in the profile) and the gate's own fixture (sample-chat,
# sample-docs) fails.
@pytest.mark.parametrize("name,check", [("speaker", "sample-chat-default"), ("dates", "sample-chat-default"),
                                        ("heading", "sample-docs-default"), ("context", "sample-docs-default"),
                                        ("recency", "sample-chat-default")])
def test_breaking_a_rescorer_fails_the_gate(tmp_path, monkeypatch, name, check):
    import memo.retrieve.pipeline as pipeline
    from memo.retrieve.rescore import NOTHING

    class Broken:
        def __init__(self, name):
            self.name = name

        def rescore(self, cands, inp):
            return NOTHING

    monkeypatch.setattr(pipeline, "RESCORERS", tuple(Broken(r.name) if r.name == name else r
                                                     for r in pipeline.RESCORERS))
    res = _fast(tmp_path)
    assert not res["passed"]
    assert (check, f"by_factor.{name}.top10") in _failed(res)


def test_embedding_the_names_again_fails_the_gate(tmp_path, monkeypatch):
    # strip_common broken: the semantic arm embeds the query as typed, speakers' names included
    import memo.retrieve.arms.shared as shared

    monkeypatch.setattr(shared, "_embedded_text", lambda ctx: (ctx.query, ()))
    res = _fast(tmp_path)
    assert not res["passed"]
    assert ("sample-chat-default", "ranking.agreement") in _failed(res)


def test_never_abstaining_fails_the_gate(tmp_path, monkeypatch):
    # abstention rule 1 broken: a candidate whose only evidence is a weak cosine is kept
    import memo.retrieve.pipeline as pipeline

    monkeypatch.setattr(pipeline, "abstain", lambda ranked, floor, weigh=None, known=None: (list(ranked), []))
    res = _fast(tmp_path)
    assert not res["passed"]
    assert ("sample-chat-default", "abstain_recall") in _failed(res)
