"""Property: whatever a knowledge base went through (records added, superseded, forgotten,
purged; facts added, superseded, forgotten), ``memo export --include-forgotten`` then
``memo import`` into an empty database gives the same canonical rows, evidence, vectors
and derived entity rows (memo.ops.export, memo.ops.export_restore); the export without
forgotten rows gives what ``memo purge`` leaves."""

from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memo import ops
from memo.errors import MemoError
from memo.ops.export import export_db
from memo.ops.facts import add_fact, forget_facts, supersede_fact
from memo.store.db import open_db
from memo.stored import FactDraft, RecordDraft
from tests.fast_examples import examples
from tests.unit.ops.export_rows import CANONICAL, DERIVED, canonical

WORDS = ("Alice", "Bruno", "Kestrel", "backups", "run", "on", "Friday", "Monday", "the", "pump", "at",
         "40", "psi", "Lighthouse", "project", "joined", "in", "March", "café", "Zürich")
text_st = st.lists(st.sampled_from(WORDS), min_size=3, max_size=12).map(" ".join)
op_st = st.one_of(
    st.tuples(st.just("add"), text_st, st.sampled_from(("default", "work")), st.sampled_from(("note", "doc"))),
    st.tuples(st.just("supersede"), st.integers(0, 50), text_st),
    st.tuples(st.just("forget"), st.integers(0, 50)),
    st.tuples(st.just("fact"), st.integers(0, 50), text_st),
    st.tuples(st.just("fact_supersede"), st.integers(0, 50), text_st),
    st.tuples(st.just("fact_forget"), st.integers(0, 50)),
    st.tuples(st.just("purge")),
)


def _live(conn, table: str) -> list[str]:
    """The current rows in the order they were written (ids hold a random tail: ordering by
    them made an operation's target differ between runs of the same example)."""
    return [r[0] for r in conn.execute(
        f"SELECT id FROM {table} WHERE superseded_at IS NULL AND forgotten_at IS NULL ORDER BY rowid")]


def _apply(conn, op: tuple) -> None:
    kind = op[0]
    records, facts = _live(conn, "records"), _live(conn, "facts")
    try:
        if kind == "add":
            ops.add_record(conn, RecordDraft(body=op[1], namespace=op[2], kind=op[3], tags=(op[2],)))
        elif kind == "supersede" and records:
            ops.supersede(conn, records[op[1] % len(records)], op[2])
        elif kind == "forget" and records:
            ops.forget(conn, [records[op[1] % len(records)]])
        elif kind == "fact" and records:
            rid = records[op[1] % len(records)]
            ns = conn.execute("SELECT namespace FROM records WHERE id = ?", (rid,)).fetchone()[0]
            add_fact(conn, FactDraft(text=op[2], evidence=(rid,), namespace=ns))
        elif kind == "fact_supersede" and facts:
            supersede_fact(conn, facts[op[1] % len(facts)], op[2])
        elif kind == "fact_forget" and facts:
            forget_facts(conn, [facts[op[1] % len(facts)]])
        elif kind == "purge":
            ops.purge(conn, confirm=True)
    except MemoError:
        pass   # a refused operation (the same text twice, a fact near-identical...) changes nothing


@settings(max_examples=examples(25), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(history=st.lists(op_st, min_size=1, max_size=14))
def test_an_export_brings_back_what_was_stored(history: list[tuple]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        src = open_db(folder / "src.db")
        for op in history:
            _apply(src, op)
        export_db(src, folder / "all.jsonl", include_forgotten=True)
        export_db(src, folder / "kept.jsonl.gz")
        everything = open_db(folder / "all.db")
        ops.import_path(everything, folder / "all.jsonl")
        # Canonical rows as they are; the entity rows as ``memo reindex`` derives them from
        # those (a source's depend on its history: a record forgotten since named an entity
        # first, and the import, as reindex, never sees its mentions).
        stored = canonical(src)
        ops.reindex(src)
        derived = canonical(src)
        got = canonical(everything)
        assert {k: got[k] for k in CANONICAL} == {k: stored[k] for k in CANONICAL}
        assert {k: got[k] for k in DERIVED} == {k: derived[k] for k in DERIVED}
        kept = open_db(folder / "kept.db")
        ops.import_path(kept, folder / "kept.jsonl.gz")
        ops.purge(src, confirm=True)
        ops.reindex(src)
        assert canonical(kept) == canonical(src)
        for conn in (src, everything, kept):
            conn.close()
