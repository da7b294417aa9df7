"""Fixtures for the eval harness tests: an isolated cache and runs dir, a tiny BEIR set."""

from __future__ import annotations

import pytest

from memo_eval.synthetic import write_beir


@pytest.fixture(autouse=True)
def _isolated(tmp_path, monkeypatch):
    monkeypatch.setenv("MEMO_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("MEMO_EVAL_RUNS", str(tmp_path / "runs"))


@pytest.fixture
def tiny(tmp_path):
    return write_beir(tmp_path / "tiny")
