"""Issue 29.2: a two-hop chain is reached.  Alice's note names the Lighthouse project, the
project's note names Kestrel DB, Bruno's note names Kestrel DB: asked how Alice relates to
Bruno, the default profile with the extra graph_bridges on returns the bridge ("Lighthouse
... Kestrel DB") in the top 5, found by the graph's walks (real pipeline, SQLite; no embedding
model in the unit tests).  graph_bridges is off in the default: it failed the suite's rule
(docs/eval.md, issue 29)."""

from __future__ import annotations

import numpy as np

from memo.ops.add import add_record
from memo.profile import load_profile
from memo.retrieve import search
from memo.retrieve.arms.graph import bridges
from memo.retrieve.types import SearchRequest
from memo.stored import RecordDraft

CHAIN = ["Alice Moreau joined the Lighthouse project in March.",
         "The Lighthouse project stores its data in Kestrel DB.",
         "Kestrel DB replication broke after the upgrade to version 4.",
         "Bruno Ferreira maintains Kestrel DB backups every Friday."]
OTHER = [f"Unrelated note number {i}: the weather was mild and the garden needed water." for i in range(10)]
QUERY = "How is Alice Moreau related to Bruno Ferreira?"


BRIDGES = {"graph.bridge_share": 0.01}


def test_the_bridge_is_in_the_top_5_with_graph_bridges(fresh_db):
    ids = [add_record(fresh_db, RecordDraft(body=b)).record_id for b in CHAIN + OTHER]
    keys = {r[0] for r in fresh_db.execute("SELECT key FROM entities WHERE kind != 'initial'")}
    assert keys == {"alice moreau", "lighthouse", "kestrel db", "bruno ferreira"}   # not "Unrelated"
    r = search(fresh_db, SearchRequest(QUERY, response_format="explain", limit=5),
               load_profile("zscore").with_overrides(BRIDGES))
    top = [x.passage_id.split(":")[0] for x in r.results]
    assert ids[1] in top[:5]
    bridge = next(x for x in r.results if x.passage_id.startswith(ids[1]))
    walk = bridge.why.arms["graph"]
    assert {v.entity for v in walk.votes if v.mass > 0} == {"alice moreau", "bruno ferreira"}   # both walks
    # the floor alone (graph_bridges off) drops it: its mass is small next to a seed's own note
    floor_only = load_profile("zscore").with_overrides({"graph.bridge_share": 0.0})
    off = search(fresh_db, SearchRequest(QUERY, response_format="explain", limit=10), floor_only)
    assert all(not x.passage_id.startswith(ids[1]) for x in off.results)


def test_bridges_counts_walks_by_their_own_top():
    mass = np.array([[0.31, 0.001], [0.02, 0.015], [0.001, 0.014], [0.001, 0.30]])
    assert bridges(mass, 0.01).tolist() == [1, 2, 1, 1]
    assert bridges(np.zeros((0, 2)), 0.01).tolist() == []
