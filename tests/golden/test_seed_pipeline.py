"""The seed's profiles run the seed's pipeline as written (issue 27.1).

For every golden case, under ``rrf`` and under ``minmax``, this test takes the arms' ranked
lists (stage 2, the pipeline's input) and computes the results itself from the seed's
formulas (../shared/seed: "The search pipeline"), with no memo helper: weighted RRF or
min-max fusion, recency, abstention (rule 1 only), cutoff, limit and token budget.  Then it
compares every score and the order with ``memo.retrieve.search``.  An extra stage or rule
left on in either profile changes a score or the order and fails it.

The constants are the seed's, written here (not read from the profile): a profile that
drifted from the seed fails too.
"""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from test_golden import CASES, _Semantic, build

from memo.retrieve import SearchRequest, search
from memo.retrieve.arms import ARMS
from memo.retrieve.arms.base import ArmContext
from memo.retrieve.run_arms import run_arms
from memo.retrieve.scope import build_scope_sql
from memo.retrieve.services import ArmServices
from memo.types import Scope

# The seed's constants (sections 2-6).
FETCH_DEPTH = 100
K = 60
WEIGHTS = {"semantic": 0.5, "keyword": 0.5, "exact": 0.3, "fact": 0.4, "entity": 0.4, "graph": 0.5}
FLOOR, HALF_LIFE, AGING = 0.8, 90.0, ("note", "conversation")
SEMANTIC_FLOOR = 0.39            # the default model's semantic_floor (docs/models.md)
MIN_RESULTS, GAP, LIMIT, MAX_TOKENS = 3, 0.5, 10, 4000


def rrf(hits, w):
    return [w / (K + h.rank) for h in hits]


def minmax(hits, w):
    raws = [h.raw for h in hits]
    lo, hi = min(raws), max(raws)
    return [w * ((r - lo) / (hi - lo)) if hi > lo else w * 1.0 for r in raws]


def seed_results(conn, runs, method, now):
    """[(pk, score)] in order, from the arms' lists and the seed's formulas alone."""
    score_of, tie_of = (rrf, minmax) if method == "rrf" else (minmax, rrf)
    fused, tie, arms = {}, {}, {}
    for run in runs:                                  # 3 fusion: sum over arms, in arm order
        if not run.ran or not run.hits:
            continue
        w = WEIGHTS[run.name]
        for h, c, t in zip(run.hits, score_of(run.hits, w), tie_of(run.hits, w), strict=True):
            fused[h.pk] = fused.get(h.pk, 0.0) + c
            tie[h.pk] = tie.get(h.pk, 0.0) + t
            arms.setdefault(h.pk, {})[run.name] = h
    meta = {pk: (kind, when, tokens) for pk, kind, when, tokens in conn.execute(
        "SELECT p.pk, r.kind, COALESCE(p.event_at, r.event_at, r.recorded_at), p.tokens"
        " FROM passages p JOIN records r ON r.id = p.record_id")}
    scored = []
    for pk, f in fused.items():                       # 4 recency
        kind, when, _ = meta[pk]
        factor = 1.0
        if kind in AGING and when:
            t = datetime.fromisoformat(when.replace("Z", "+00:00"))
            t = t if t.tzinfo else t.replace(tzinfo=UTC)
            age = max(0.0, (now - t).total_seconds() / 86400.0)
            factor = FLOOR + (1.0 - FLOOR) * 0.5 ** (age / HALF_LIFE)
        scored.append((pk, f * factor, tie[pk]))
    scored.sort(key=lambda x: (-x[1], -x[2], x[0]))
    # 5 abstention: drop a candidate whose only evidence is a cosine below the floor
    kept = [s for s in scored if not (set(arms[s[0]]) == {"semantic"} and arms[s[0]]["semantic"].raw < SEMANTIC_FLOOR)]
    for i in range(max(MIN_RESULTS, 1), len(kept)):   # 6 cutoff
        if kept[i][1] < (1.0 - GAP) * kept[i - 1][1]:
            kept = kept[:i]
            break
    kept = kept[:LIMIT]                               # 7 limit
    out, used = [], 0                                 # 8 token budget: greedy, skip what does not fit
    for pk, s, _ in kept:
        if used + meta[pk][2] <= MAX_TOKENS:
            out.append((pk, s))
            used += meta[pk][2]
    return out


# Records and cases on which every extra of the default would fire (a speaker the query
# names, a month it names, a heading that is the identifier it names, a record holding
# several of the best, a query whose matches are all weak): the seed's profiles must give
# none of those factors and drop nothing the seed keeps.
EXTRA_RECORDS = [
    ("conversation", "chat", "2024-03-02T10:00:00Z", None, [
        ("Priya: the backup job runs every night at two", "", "Priya"),
        ("Tom: does the backup job also copy the photos?", "", "Tom"),
        ("Priya: yes, the backup job copies photos and mail", "", "Priya"),
        ("Tom: great, thanks", "", "Tom")]),
    ("note", "ops", "2024-03-14T00:00:00Z", None, [("Canary rollout of the backup service went fine", "", None)]),
    ("note", "ops", "2024-05-20T00:00:00Z", None, [("Canary rollout of the backup service, canary canary", "", None)]),
    ("doc", "api", None, "pool.md", [
        ("Runs one statement on an idle client.", "Pool API > pool.query(text)", None),
        ("After pool.end, pool.query throws; pool.query never retries, pool.query", "Pool API > pool.end()", None)]),
    ("note", "misc", "2024-02-01T00:00:00Z", None, [("The support group meets on Tuesdays", "", None)]),
]
EXTRA_CASES = [
    {"name": "speaker_and_context", "query": "what did Priya say about the backup job", "mode": "keyword"},
    {"name": "dated_month", "query": "canary rollout in March 2024", "mode": "keyword"},
    {"name": "heading_lookup", "query": "pool.query", "mode": "keyword"},
    {"name": "weak_query_answered", "query": "support group for grieving pets", "mode": "auto",
     "semantic_text": {"The support group meets on Tuesdays": 0.2}},
]


@pytest.fixture(scope="module")
def conn(tmp_path_factory):
    from memo.store.connect import write_tx
    from memo.store.records import insert_record
    from memo.stored import PassageDraft, RecordDraft

    c = build(tmp_path_factory.mktemp("seed") / "golden.db")
    with write_tx(c):
        for kind, ns, when, path, passages in EXTRA_RECORDS:
            draft = RecordDraft(body="\n".join(p[0] for p in passages), kind=kind, namespace=ns, event_at=when,
                                import_path=path)
            insert_record(c, draft, tuple(PassageDraft(text=x, section=s, speaker=sp) for x, s, sp in passages),
                          recorded_at="2024-06-01T00:00:00.000000Z")
    yield c
    c.close()


@pytest.mark.parametrize("profile", ["rrf", "minmax"])
@pytest.mark.parametrize("case", CASES["cases"] + EXTRA_CASES, ids=lambda c: c["name"])
def test_the_seed_profiles_compute_the_seeds_formulas(conn, case, profile):
    from memo.profile import load_profile

    pks = dict(conn.execute("SELECT record_id, pk FROM passages"))
    sims = {pks[rid]: cos for rid, cos in case.get("semantic", {}).items()}
    sims.update({pk: cos for text, cos in case.get("semantic_text", {}).items()
                 for (pk,) in conn.execute("SELECT pk FROM passages WHERE text = ?", (text,))})
    semantic = _Semantic(sims) if sims else None
    services = ArmServices.of({"semantic": semantic} if semantic else {})
    scope = Scope(**{k: v if isinstance(v, str) else tuple(v) for k, v in case.get("scope", {}).items()})
    now = datetime.fromisoformat(CASES["now"].replace("Z", "+00:00"))
    ctx = ArmContext(conn=conn, query=case["query"], mode=case["mode"], scope_sql=build_scope_sql(scope),
                     fetch_depth=FETCH_DEPTH, services=services, scope=scope, profile=load_profile(profile))
    expected = seed_results(conn, run_arms(ctx, ARMS), profile, now)
    resp = search(conn, SearchRequest(case["query"], scope=scope, mode=case["mode"], response_format="explain",
                                      now=CASES["now"]), profile, services)
    got = [(r.pk, r.score) for r in resp.results]
    assert [pk for pk, _ in got] == [pk for pk, _ in expected]
    for (_, s_got), (_, s_exp) in zip(got, expected, strict=True):
        assert s_got == pytest.approx(s_exp, rel=1e-12, abs=0.0)
    assert resp.abstained == (not expected and any(r.ran and r.hits for r in run_arms(ctx, ARMS)))
    # the seed's pipeline gives no factor but recency
    for r in resp.results:
        assert {f.name for f in r.why.factors} <= {"recency"}
