"""Loaders: BEIR folders, LoCoMo evidence repair, a user's JSONL queries."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from memo.errors import DatasetError
from memo_eval.datasets import load_eval_set
from memo_eval.datasets.beir import read_qrels
from memo_eval.datasets.custom import load_custom
from memo_eval.datasets.locomo import load_locomo, normalise_evidence
from memo_eval.synthetic import write_user_queries


def test_beir_splits(tiny):
    test = load_eval_set(str(tiny), "test")
    train = load_eval_set(str(tiny), "train")
    assert [q.qid for q in test.queries] == ["q1", "q2", "q3", "q4"]
    assert len(train.queries) == 5
    assert test.qrels["q1"] == {"d01": 2, "d02": 1}
    assert test.unit == "record"
    assert test.corpus_hash == train.corpus_hash          # one index for both splits
    assert test.dataset_hash != train.dataset_hash
    assert len(list(test.corpus())) == 12
    assert len(load_eval_set(str(tiny), "test", limit=2).queries) == 2
    with pytest.raises(DatasetError, match="no qrels for split"):
        load_eval_set(str(tiny), "dev")


def test_qrels_formats(tmp_path):
    p = tmp_path / "q.tsv"
    p.write_text("query-id\tcorpus-id\tscore\r\n1\ta\t1\r\n1\tb\t0\r\n2\tQ0\tc\t2\n".replace("2\tQ0\tc\t2", "2\tQ0\tc\t2"))
    assert read_qrels(p) == {"1": {"a": 1}, "2": {"c": 2}}


def test_repo_datasets_resolve():
    es = load_eval_set("scifact", "test")
    assert len(es.queries) == 300 and sum(len(v) for v in es.qrels.values()) == 339


def test_locomo_evidence_normalisation():
    known = {"D8:6", "D9:17", "D9:1", "D4:4", "D4:6", "D30:5", "D11:26", "D1:1"}
    c: Counter[str] = Counter()
    got = normalise_evidence(["D8:6; D9:17", "D9:1 D4:4 D4:6", "D30:05", "D:11:26", "D", "D10:19", "D1:1"], known, c)
    assert got == ["D8:6", "D9:17", "D9:1", "D4:4", "D4:6", "D30:5", "D11:26", "D1:1"]
    assert c == Counter(split=2, zero_pad=1, extra_colon=1, dropped_bare=1, dropped_unknown=1)


def _locomo(tmp_path):
    sample = {"sample_id": "conv-9", "conversation": {
        "speaker_a": "A", "speaker_b": "B",
        "session_1_date_time": "1:56 pm on 8 May, 2023",
        "session_1": [{"speaker": "A", "dia_id": "D1:1", "text": "I adopted a dog named Rex"},
                      {"speaker": "B", "dia_id": "D1:2", "text": "Nice! I started pottery"}],
        "session_2_date_time": "2:00 pm on 9 June, 2023",
        "session_2": [{"speaker": "A", "dia_id": "D2:1", "text": "Rex learned to sit"}]},
        "qa": [{"question": "What is A's dog called?", "answer": "Rex", "evidence": ["D1:1"], "category": 4},
               {"question": "What did B start?", "answer": "pottery", "evidence": ["D1:02", "D7:1"], "category": 1},
               {"question": "What is B's cat called?", "adversarial_answer": "Tom", "evidence": ["D1:2"],
                "category": 5},
               {"question": "Broken?", "answer": "x", "evidence": ["D"], "category": 2}]}
    p = tmp_path / "locomo10.json"
    p.write_text(json.dumps([sample]))
    return p


def test_locomo_queries(tmp_path):
    es = load_locomo(_locomo(tmp_path))
    q = es.by_id()
    assert q["conv-9/q0000"].namespace == "locomo/conv-9"
    assert q["conv-9/q0000"].now == "2023-06-09T14:00:00Z"      # after the last session
    assert es.qrels["conv-9/q0000"] == {"locomo/conv-9#D1:1": 1}
    assert es.qrels["conv-9/q0001"] == {"locomo/conv-9#D1:2": 1}
    assert not q["conv-9/q0002"].answerable and q["conv-9/q0002"].category == "5"
    assert "conv-9/q0003" not in es.qrels
    ev = es.notes["evidence"]
    assert ev["zero_pad"] == 1 and ev["dropped_unknown"] == 1 and ev["dropped_bare"] == 1 and ev["no_evidence"] == 1
    assert es.unit == "passage"


def test_locomo_real_file_counts():
    es = load_eval_set("locomo", "test")
    ev = es.notes["evidence"]
    assert len(es.queries) == 1986 and es.notes["categories"]["5"] == 446
    # datasets/locomo/SOURCE.md: 9 of 2,815 references do not resolve as given.
    assert ev["references"] == 2815
    assert (ev["split"], ev["zero_pad"], ev["extra_colon"], ev["dropped_bare"], ev["dropped_unknown"]) == (4, 1, 1, 1, 2)


def test_custom_jsonl(tmp_path):
    p = write_user_queries(tmp_path / "mine.jsonl")
    es = load_custom(p, "test")
    assert [q.qid for q in es.queries] == ["q1", "q2", "q3", "q4", "u1"]
    assert not es.by_id()["u1"].answerable and "u1" not in es.qrels
    assert es.unit == "auto" and es.corpus is None
    assert len(load_custom(p, "all").queries) == 10


@pytest.mark.parametrize("line,msg", [
    ('{"query": "x", "relevant": ["a"]}', "required"),
    ('{"id": "1", "query": "x"}', "no relevant ids"),
    ('{"id": "1", "query": "x", "relevant": ["a"], "colour": 1}', "unknown field"),
    ('{"id": "1", "query": "x", "relevant": 3}', "must be a list"),
])
def test_custom_errors(tmp_path, line, msg):
    p = tmp_path / "bad.jsonl"
    p.write_text(line + "\n")
    with pytest.raises(DatasetError, match=msg):
        load_custom(p)
