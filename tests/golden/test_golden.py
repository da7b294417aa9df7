"""Golden tests: a tiny hand-made corpus (corpus.json), fixed queries (cases.json) and the
expected ranked ids and ``why`` numbers (expected.json).

Besides comparing with expected.json, each case re-derives the numbers from the formulas
(docs/architecture.md section 5): RRF contribution = weight / (k + rank), recency factor =
floor + (1 - floor) * 0.5 ** (age_days / half_life), final = fused * factor.

Regenerate after a deliberate change:  .venv/bin/python tests/golden/test_golden.py --regen
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest

from memo.profile import load_profile
from memo.retrieve import SearchRequest, search
from memo.store.connect import write_tx
from memo.store.db import open_db
from memo.store.facts import insert_fact, resolve_evidence
from memo.store.records import insert_record
from memo.stored import FactDraft, PassageDraft, RecordDraft
from memo.types import Scope

HERE = Path(__file__).resolve().parent
CORPUS = json.loads((HERE / "corpus.json").read_text(encoding="utf-8"))
CASES = json.loads((HERE / "cases.json").read_text(encoding="utf-8"))
EXPECTED_PATH = HERE / "expected.json"


class _Index:
    def __init__(self, sims):
        self.sims = sims

    def search(self, conn, qvec, allowed, k):
        ok = None if allowed is None else set(np.asarray(allowed).tolist())
        items = sorted(((pk, c) for pk, c in self.sims.items() if ok is None or pk in ok), key=lambda x: (-x[1], x[0]))
        return items[:k]


class _Semantic:
    model_id = "all-minilm-l6-v2-int8"

    def __init__(self, sims):
        self.index = _Index(sims)

    def status(self):
        return True, "golden fake"

    def embed_query(self, text):
        return np.zeros(384, dtype=np.float32)


def build(path: Path):
    conn = open_db(path)
    with write_tx(conn):
        for rec in CORPUS["records"]:
            draft = RecordDraft(body=rec["text"], id=rec["id"], kind=rec["kind"], namespace=rec["namespace"],
                                source=rec.get("source"), author=rec.get("author"),
                                import_path=rec.get("import_path"), library=rec.get("library"),
                                version=rec.get("version"), tags=tuple(rec.get("tags", ())),
                                event_at=rec.get("event_at"))
            insert_record(conn, draft, (PassageDraft(text=rec["text"], section=rec.get("section", ""),
                                                     speaker=rec.get("speaker")),),
                          recorded_at=rec["recorded_at"])
        for f in CORPUS.get("facts", ()):
            ev = resolve_evidence(conn, f["evidence"], f["namespace"])
            insert_fact(conn, FactDraft(text=f["text"], evidence=tuple(f["evidence"]), namespace=f["namespace"]),
                        ev, recorded_at=f["recorded_at"], fact_id=f["id"])
            conn.execute("UPDATE facts SET superseded_at = ?, superseded_by = ?, forgotten_at = ? WHERE id = ?",
                         (f.get("superseded_at"), f.get("superseded_by"), f.get("forgotten_at"), f["id"]))
    return conn


def run_case(conn, case):
    pks = dict(conn.execute("SELECT record_id, pk FROM passages"))
    services = {}
    if "semantic" in case:
        services["semantic"] = _Semantic({pks[rid]: cos for rid, cos in case["semantic"].items()})
    scope = {k: v if isinstance(v, str) else tuple(v) for k, v in case.get("scope", {}).items()}
    resp = search(conn, SearchRequest(case["query"], scope=Scope(**scope),
                                      mode=case["mode"], response_format="explain", now=CASES["now"]),
                  case["profile"], services)
    return resp


def summarise(resp) -> dict:
    return {
        "ids": [r.record_id for r in resp.results],
        "abstained": resp.abstained,
        "reason": resp.reason,
        "why": [{"id": r.record_id,
                 "arms": {a: {"rank": w.rank, "raw": round(w.raw, 6), "contribution": round(w.contribution, 12),
                              **({"votes": [{"fact": v.fact_id, "rank": v.rank, "score": round(v.score, 12),
                                             "keyword_rank": v.keyword_rank,
                                             "keyword_raw": None if v.keyword_raw is None else round(v.keyword_raw, 6)}
                                            for v in w.votes]} if w.votes else {})}
                          for a, w in r.why.arms.items()},
                 "fused": round(r.why.fused, 12), "recency_factor": round(r.why.factor("recency"), 12),
                 "final": round(r.why.final, 12), "band": r.why.band,
                 "age_days": r.why.freshness["age_days"]} for r in resp.results],
        "arms_ran": [a.name for a in resp.trace.arms if a.ran],
        "filter": resp.trace.filter,
        "cutoff_kind": resp.trace.cutoff_kind,
    }


@pytest.fixture(scope="module")
def conn(tmp_path_factory):
    c = build(tmp_path_factory.mktemp("golden") / "golden.db")
    yield c
    c.close()


EXPECTED = json.loads(EXPECTED_PATH.read_text(encoding="utf-8")) if EXPECTED_PATH.exists() else {}


@pytest.mark.parametrize("case", CASES["cases"], ids=lambda c: c["name"])
def test_golden(conn, case):
    resp = run_case(conn, case)
    got = summarise(resp)
    assert got == EXPECTED[case["name"]]
    # Re-derive the numbers from the formulas.
    prof = load_profile(case["profile"])
    for res in resp.results:
        w = res.why
        if prof.fusion.method == "rrf":
            for arm, a in w.arms.items():
                assert a.contribution == prof.weights[arm] / (prof.fusion.k + a.rank)
        age = w.freshness["age_days"]
        if res.kind in prof.recency.aging_kinds:
            assert w.factor("recency") == pytest.approx(
                prof.recency.floor + (1 - prof.recency.floor) * 0.5 ** (age / prof.recency.half_life_days), rel=1e-12)
        else:
            assert w.factor("recency") == 1.0
        total = 0.0
        for a in w.arms.values():
            total += a.contribution
        assert total * w.factor("recency") == w.final == res.score


if __name__ == "__main__" and "--regen" in sys.argv:
    import tempfile
    with tempfile.TemporaryDirectory() as tmp:
        c = build(Path(tmp) / "golden.db")
        out = {case["name"]: summarise(run_case(c, case)) for case in CASES["cases"]}
        c.close()
    EXPECTED_PATH.write_text(json.dumps(out, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    sys.stderr.write(f"wrote {EXPECTED_PATH}\n")
