"""JSONL fact lines and LoCoMo observations imported as facts (issue 10.2-10.3)."""

from __future__ import annotations

import json
from collections import Counter

from memo import ops
from memo.ingest.locomo_facts import iter_observations, normalise_evidence
from memo.ops import facts as fops
from memo.ops.importer import ImportOptions


def test_jsonl_fact_lines_after_records_bad_lines_rejected(fresh_db, tmp_path):
    path = tmp_path / "kb.jsonl"
    lines = [
        {"text": "the proxy log shows resets every hour", "id": "proxy-log"},
        {"type": "fact", "text": "clients see ERR_CONN_RESET", "evidence": ["proxy-log"], "subject": "clients"},
        {"type": "fact", "text": "bad evidence", "evidence": ["nope"]},
        {"type": "fact", "text": "no evidence"},
        {"type": "fact", "text": "unknown field", "evidence": ["proxy-log"], "colour": "red"},
        {"type": "weird", "text": "x"},
    ]
    path.write_text("\n".join(json.dumps(x) for x in lines) + "\n", encoding="utf-8")
    rep = ops.import_path(fresh_db, path, ImportOptions(namespace="ops"))
    assert rep.added == 1 and rep.facts_added == 1
    reasons = {r.path.rsplit(":", 1)[1]: r.reason for r in rep.rejected}
    assert set(reasons) == {"3", "4", "5", "6"} and "nope" in reasons["3"] and "evidence" in reasons["4"]
    facts = fops.list_facts(fresh_db)
    assert [f.text for f in facts] == ["clients see ERR_CONN_RESET"] and facts[0].namespace == "ops"
    assert facts[0].subject == "clients" and facts[0].evidence[0].passage_id.endswith(":0")
    again = ops.import_path(fresh_db, path, ImportOptions(namespace="ops"))
    assert again.facts_added == 0 and again.facts_skipped == 1


def test_locomo_observations_become_facts_with_repaired_evidence(fresh_db, tmp_path):
    sample = {"sample_id": "conv-x", "qa": [],
              "conversation": {"speaker_a": "A", "speaker_b": "B",
                               "session_1_date_time": "1:56 pm on 8 May, 2023",
                               "session_1": [{"speaker": "A", "dia_id": "D1:1", "text": "I adopted a dog"},
                                             {"speaker": "B", "dia_id": "D1:2", "text": "What breed?"},
                                             {"speaker": "A", "dia_id": "D1:3", "text": "A beagle named Max"}]},
              "observation": {"session_1_observation": {
                  "A": [["A adopted a beagle called Max.", "D1:1, D1:3"], ["A likes walks.", "D9:9"]],
                  "B": [["B asked about the breed.", ["D1:02"]]]}}}
    path = tmp_path / "locomo.json"
    path.write_text(json.dumps([sample]), encoding="utf-8")
    counts: Counter[str] = Counter()
    drafts = list(iter_observations(path, "locomo", counts))
    assert [d.evidence for _, d in drafts] == [("D1:1", "D1:3"), ("D1:2",)]
    assert counts["split"] == 1 and counts["zero_pad"] == 1 and counts["dropped_unknown"] == 1
    assert counts["no_evidence"] == 1
    rep = ops.import_path(fresh_db, path, ImportOptions(format="locomo"))
    assert rep.added == 1 and rep.facts_added == 2
    f = fops.list_facts(fresh_db, namespaces=["locomo/conv-x"], evidence=None)
    assert {x.subject for x in f} == {"A", "B"} and all(x.event_at == "2023-05-08T13:56:00.000000Z" for x in f)
    beagle = next(x for x in f if "beagle" in x.text)
    assert [e.text for e in beagle.evidence] == ["A: I adopted a dog", "A: A beagle named Max"]


def test_normalise_evidence_is_the_questions_rule():
    c: Counter[str] = Counter()
    assert normalise_evidence(["D8:6; D9:17", "D:11:26", "D30:05", "D"], {"D8:6", "D9:17", "D11:26", "D30:5"}, c) == \
        ["D8:6", "D9:17", "D11:26", "D30:5"]
    assert c == Counter(split=1, extra_colon=1, zero_pad=1, dropped_bare=1)
