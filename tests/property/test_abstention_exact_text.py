"""Property (issue 13.4): abstention means "not in the knowledge base", so a query whose
exact text is a passage of the knowledge base never abstains, whatever the keyword
floor (1.0, the strictest, included) and whatever else the corpus holds."""

from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memo.profile import load_profile
from memo.retrieve import SearchRequest, search
from memo.store.connect import write_tx
from memo.store.db import open_db
from memo.store.records import insert_record
from memo.stored import PassageDraft, RecordDraft
from tests.fast_examples import examples

# Common words (in many passages: idf clamped to ~0), stop words, rare and odd tokens.
WORDS = ("the", "and", "of", "report", "weather", "pool", "filter", "zebra", "quasar", "caroline",
         "running", "runs", "x86", "naïve", "naive", "ERR_CONN_RESET", "net/http", "42", "a")

text_st = st.lists(st.sampled_from(WORDS), min_size=1, max_size=12).map(" ".join)


@settings(max_examples=examples(40), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(texts=st.lists(text_st, min_size=1, max_size=15, unique=True), pick=st.integers(0, 14),
       floor=st.sampled_from((0.3, 0.8, 1.0)))
def test_a_passage_text_as_the_query_never_abstains(texts, pick, floor):
    with tempfile.TemporaryDirectory() as d:
        conn = open_db(Path(d) / "p.db")
        try:
            for t in texts:
                with write_tx(conn):
                    insert_record(conn, RecordDraft(body=t), (PassageDraft(text=t),))
            query = texts[pick % len(texts)]
            profile = load_profile("rrf").with_overrides({"abstention.keyword_floor": floor})
            resp = search(conn, SearchRequest(query, now="2024-07-01T00:00:00Z"), profile)
            assert not resp.abstained and resp.results, (query, resp.reason)
        finally:
            conn.close()
