"""Real data sets through the whole harness (slow: uses the repository's SciFact and LoCoMo).

Indexes and vectors go to the normal eval cache ($MEMO_CACHE/eval, else the checkout's .cache/memo-eval),
so only the first run pays for embedding; traces go to a temporary runs dir."""

from __future__ import annotations

import os

import pytest

from memo_eval.grid import RunSpec
from memo_eval.regress import regress
from memo_eval.run import EvalOptions, run_eval

pytestmark = pytest.mark.slow


def test_fast_regression_passes(tmp_path, progress):
    res = regress(fast=True, out=tmp_path / "runs", status=progress)
    assert res["passed"], [c for c in res["checks"] if c["status"] == "FAIL"]
    assert res["batches"][0]["dataset"] == "sample"       # hybrid, the shipped model, all arms


def test_locomo_keyword_by_category(tmp_path, progress):
    res = run_eval(EvalOptions(dataset="locomo", specs=[RunSpec("rrf", mode="keyword")], semantic=False,
                               out=tmp_path / "runs"), status=progress)
    run = res["runs"][0]
    cats = run["by_category"]
    assert set(cats) == {"1", "2", "3", "4", "5"} and cats["5"]["n"] == 446
    assert "abstain_recall" in cats["5"] and "recall_10" not in cats["5"]
    # FTS5 keyword reference: turn recall@10 about 0.59 over categories 1-4.
    assert 0.5 < run["metrics"]["recall_10"] < 0.7
    ev = res["notes"]["evidence"]
    assert ev["dropped_unknown"] == 2 and ev["split"] == 4


def test_full_regression_passes(tmp_path, progress):
    # The first run embeds SciFact's 7,046 passages (about 15 minutes on 2 cores; cached after).
    res = regress(fast=False, out=tmp_path / "runs", status=progress)
    assert res["passed"], [c for c in res["checks"] if c["status"] == "FAIL"]


@pytest.mark.skipif(os.environ.get("MEMO_NIGHTLY") != "1",
                    reason="the nightly gate (every suite domain; most of an hour cold): MEMO_NIGHTLY=1, "
                           "as .github/workflows/nightly.yml sets it")
def test_nightly_gate_passes(tmp_path, progress):
    res = regress(nightly=True, out=tmp_path / "runs", status=progress)
    assert res["mode"] == "nightly" and res["passed"], [c for c in res["checks"] if c["status"] == "FAIL"]
    assert {c["check"] for c in res["checks"]} >= {"nightly-scifact", "nightly-locomo", "nightly-chats"}
