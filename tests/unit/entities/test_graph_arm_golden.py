"""The graph arm's hits (pk, rank, raw score and every vote's mass, bit for bit) on a seeded
synthetic store are those of the arm before issue 29.5's speed-ups (numpy CSR instead of
scipy.sparse, bulk indexing of the mention rows, the push's threshold scan): the expected
file was written by this module run as a script against the code of commit e3c6775

    git archive e3c6775 memo | tar -x -C /tmp/old
    PYTHONPATH=/tmp/old:. python tests/unit/entities/test_graph_arm_golden.py

Profiles cover the push and the exact walk, the report floor, bridges, common entities and
the title hop; scopes the whole store and one namespace.

Re-pinned once since, by running this module as a script on the code of 2026-12-05, when the
title hop was limited to an article's lead (memo.graph.titles): the 46 searches of the two
zscore profiles (the ones with the hop) changed, 1,586 -> 1,048 hits; the 104 others are
still e3c6775's, digest for digest."""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

import numpy as np

EXPECTED = Path(__file__).with_name("graph_arm_golden.json")
N_ENTITIES = 120
FILLER = "the results were reviewed again by all of them after a long week".split()


def build(path: Path) -> None:
    from memo.ops.add import add_record
    from memo.store.db import open_db
    from memo.stored import RecordDraft

    rng = np.random.default_rng(29)
    weights = 1.0 / np.arange(1, N_ENTITIES + 1) ** 0.8
    weights /= weights.sum()
    conn = open_db(path)
    for r in range(90):
        sentences = []
        for _ in range(int(rng.integers(2, 6))):
            names = [f"Entity{e}" for e in rng.choice(N_ENTITIES, size=int(rng.integers(1, 4)), p=weights)]
            words = list(rng.choice(FILLER, size=4))
            sentences.append(f"{names[0]} {' '.join(words[:2])} {' and '.join(names[1:]) or 'everyone'} "
                             f"{' '.join(words[2:])}.")
        title = f"Entity{int(rng.integers(N_ENTITIES))}" if r % 3 == 0 else None
        add_record(conn, RecordDraft(body="\n\n".join(sentences), title=title, namespace=f"ns{r % 2}",
                                     id=f"rec{r:03d}"))
    conn.close()


def dump(path: Path, index: dict | None = None) -> dict[str, list]:
    """Every search's graph hits, digested; ``index``: ``index.*`` keys set in every profile
    (storage only: the hits must not change)."""
    from memo.profile import load_profile
    from memo.retrieve import SearchRequest, search
    from memo.retrieve.arms.graph import GraphArm
    from memo.store.db import open_db
    from memo.types import Scope

    got: list = []
    real = GraphArm.run

    def run(self, ctx):  # noqa: ANN001, ANN202
        hits = real(self, ctx)
        got.append([[h.pk, h.rank, float(h.raw).hex(), [[v.entity, v.name, float(v.mass).hex()] for v in h.votes]]
                    for h in hits])
        return hits

    variants = {
        "rrf": load_profile("rrf"),
        "zscore": load_profile("zscore"),
        "zscore_bridges": load_profile("zscore").with_overrides({"graph.bridge_share": 0.01}),
        "rrf_exact": load_profile("rrf").with_overrides({"graph.epsilon": 0.0}),
        "minmax_common": load_profile("minmax").with_overrides({"entities.common_share": 0.05,
                                                                "graph.report_floor": 0.1}),
    }
    if index:
        variants = {k: v.with_overrides({f"index.{key}": val for key, val in index.items()})
                    for k, v in variants.items()}
    rng = np.random.default_rng(5)
    queries = [f"Entity{a} and Entity{b}" for a, b in rng.integers(0, N_ENTITIES, size=(12, 2))]
    queries += ["Entity1 and Entity2 and Entity3", "what did Entity7 review", "the long week"]
    out: dict[str, list] = {}
    conn = open_db(path, write=False)
    GraphArm.run = run
    try:
        for name, prof in variants.items():
            for scope_name, scope in (("all", Scope()), ("ns1", Scope(namespaces=("ns1",)))):
                for q in queries:
                    got.clear()
                    search(conn, SearchRequest(q, limit=10, scope=scope), prof)
                    # one digest per search (the hits in full would be 0.7 MB): hits, raw scores and
                    # vote masses as exact hex floats, and how many hits there were
                    text = json.dumps(got, sort_keys=True)
                    out[f"{name}|{scope_name}|{q}"] = [sum(len(h) for h in got),
                                                       hashlib.sha256(text.encode()).hexdigest()[:24]]
    finally:
        GraphArm.run = real
        conn.close()
    return out


def test_graph_arm_hits_are_those_before_the_speed_ups(tmp_path):
    from memo.graph.cache import forget_graphs

    forget_graphs()
    build(tmp_path / "g.db")
    got = dump(tmp_path / "g.db")
    expected = json.loads(EXPECTED.read_text(encoding="utf-8"))
    assert sum(1 for v in expected.values() if v[0]) > 60       # the arm reported something
    assert got == expected


def test_graph_arm_hits_from_the_sidecar_are_the_same(tmp_path):
    """The graph and its title index written to sidecars, then mapped by a new process's
    cache (forget_graphs): the same hits, bit for bit."""
    from memo.graph import cache
    from memo.graph.sidecar import sidecar_path, titles_path

    cache.forget_graphs()
    build(tmp_path / "g.db")
    expected = json.loads(EXPECTED.read_text(encoding="utf-8"))
    assert dump(tmp_path / "g.db", {"graph_sidecar_min": 1}) == expected      # computed, then written
    assert sidecar_path(tmp_path / "g.db").exists() and titles_path(tmp_path / "g.db").exists()
    cache.forget_graphs()
    assert dump(tmp_path / "g.db", {"graph_sidecar_min": 1}) == expected      # mapped
    assert cache.DEFAULT.sidecar_note == "ok"


if __name__ == "__main__":
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        build(Path(tmp) / "g.db")
        res = dump(Path(tmp) / "g.db")
    EXPECTED.write_text(json.dumps(res, sort_keys=True, indent=0) + "\n", encoding="utf-8")
    import memo

    print(f"{len(res)} searches, {sum(1 for v in res.values() if v[0])} with graph hits ({memo.__file__})",
          file=sys.stderr)
