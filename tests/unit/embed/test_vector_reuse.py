"""A new version's unchanged passages take the earlier version's vectors (memo.embed.reuse),
on both backends; a text given twice is embedded once."""

import json

import numpy as np
import pytest

from memo import ops
from memo.embed.backfill import backfill, embed_records
from memo.embed.vectors import decode, pending_count
from memo.store.dialect import is_postgres
from memo.stored import RecordDraft

from .conftest import DIM, FakeEmbedder, fake_vec

SECTIONS = [f"## Part {i}\n\nPart {i} explains how widget {i} is wired to the board." for i in range(6)]


@pytest.fixture
def conn(backend_conn):
    return backend_conn


def _doc(parts: list[str]) -> str:
    return "# Guide\n\n" + "\n\n".join(parts) + "\n"


def _vectors(conn, record_id: str) -> dict[str, np.ndarray]:
    rows = conn.execute("SELECT p.section, p.text, v.vec FROM passages p JOIN vectors v ON v.passage_pk = p.pk "
                        "WHERE p.record_id = ? AND v.model_id = 'fake-model'", (record_id,)).fetchall()
    out = {}
    for section, text, vec in rows:
        out[f"{section}|{text}"] = (np.asarray(json.loads(vec), dtype=np.float32) if is_postgres(conn)
                                    else decode(vec, DIM))
    return out


def _recording() -> tuple[FakeEmbedder, list[str]]:
    emb, seen = FakeEmbedder(), []
    orig = emb.embed_passages

    def spy(texts, batch_size=64):
        seen.extend(texts)
        return orig(texts, batch_size)

    emb.embed_passages = spy
    return emb, seen


def test_a_one_section_edit_embeds_that_section_only(conn):
    old = ops.add_record(conn, RecordDraft(body=_doc(SECTIONS), kind="doc", title="Guide")).record_id
    emb, seen = _recording()
    first = embed_records(conn, [old], embedder=emb)
    n = first.embedded
    assert n >= len(SECTIONS) and first.reused == 0 and len(seen) == n
    seen.clear()
    edited = list(SECTIONS)
    edited[3] = "## Part 3\n\nPart 3 explains how widget three is soldered to the board."
    new = ops.supersede(conn, old, _doc(edited)).new_id
    rep = embed_records(conn, [new], embedder=emb)
    assert rep.embedded == n and rep.reused == n - 1 and rep.pending_after == 0
    assert len(seen) == 1 and "soldered" in seen[0]          # the model saw the edited part only
    before, after = _vectors(conn, old), _vectors(conn, new)
    assert len(after) == n
    for key, vec in after.items():                          # the copies are the old vectors
        if "soldered" not in key:
            assert np.array_equal(vec, before[key])


def test_the_backfill_reuses_too(conn):
    """`memo backfill` and a server's catch-up take the same path: an edit imported with
    --no-embed is embedded later with the earlier version's vectors copied."""
    old = ops.add_record(conn, RecordDraft(body=_doc(SECTIONS), kind="doc")).record_id
    emb, seen = _recording()
    n = backfill(conn, progress=False, embedder=emb).embedded
    seen.clear()
    new = ops.supersede(conn, old, _doc(SECTIONS[:5] + ["## Part 5\n\nA new last part."])).new_id
    rep = backfill(conn, progress=False, embedder=emb)
    assert rep.embedded == n and rep.reused == n - 1 and pending_count(conn, "fake-model") == 0
    assert len(seen) == 1 and "new last part" in seen[0]
    before, after = _vectors(conn, old), _vectors(conn, new)
    assert all(np.array_equal(vec, before[key]) for key, vec in after.items() if "new last part" not in key)


def test_the_same_text_anywhere_is_copied_but_not_across_models(conn):
    """vector_keys: a page unchanged between two versions of a library's docs (two records,
    neither superseding the other) is embedded once; another model's vectors are never taken."""
    a = ops.add_record(conn, RecordDraft(body=_doc(SECTIONS), kind="doc", library="node", version="20")).record_id
    n = embed_records(conn, [a], embedder=FakeEmbedder()).embedded
    b = ops.add_record(conn, RecordDraft(body=_doc(SECTIONS), kind="doc", library="node", version="22")).record_id
    emb, seen = _recording()
    rep = embed_records(conn, [b], embedder=emb)
    assert rep.embedded == rep.reused == n and seen == []
    before, after = _vectors(conn, a), _vectors(conn, b)
    assert set(after) == set(before) and all(np.array_equal(after[k], before[k]) for k in after)

    class OtherModel(FakeEmbedder):
        model_id = "other-model"

    emb2 = OtherModel()
    rep = embed_records(conn, [b], embedder=emb2)
    assert rep.reused == 0 and sum(emb2.calls) == rep.embedded == n   # the old vectors are the fake model's


def test_a_purged_donor_copies_nothing(conn):
    """A key whose passage is gone (forgotten and purged) is a miss: the text is embedded."""
    a = ops.add_record(conn, RecordDraft(body=_doc(SECTIONS), kind="doc")).record_id
    embed_records(conn, [a], embedder=FakeEmbedder())
    ops.forget(conn, [a])
    ops.purge(conn, confirm=True)
    b = ops.add_record(conn, RecordDraft(body=_doc(SECTIONS), kind="doc")).record_id
    emb, seen = _recording()
    rep = embed_records(conn, [b], embedder=emb)
    assert rep.reused == 0 and rep.embedded == len(seen) > 0 and rep.pending_after == 0


def test_a_text_given_twice_is_embedded_once(conn):
    ids = [ops.add_record(conn, RecordDraft(body=_doc([SECTIONS[0], f"## Own {i}\n\nOwn text {i}."]),
                                            kind="doc", title="Guide")).record_id for i in range(3)]
    emb, seen = _recording()
    rep = embed_records(conn, ids, embedder=emb)
    shared = [t for t in seen if "widget 0" in t]
    assert len(shared) == 1 and rep.embedded == len(seen) + 2   # written to all three passages
    vecs = [v for rid in ids for k, v in _vectors(conn, rid).items() if "widget 0" in k]
    assert len(vecs) == 3 and all(np.array_equal(vecs[0], v) for v in vecs)


def test_a_key_whose_passage_now_holds_other_text_copies_nothing(conn):
    """After a purge the passages' pks are given out again: a key may name a pk that now
    holds another text.  The copy asks the donor's section and text to be the passage's."""
    a = ops.add_record(conn, RecordDraft(body=_doc(SECTIONS), kind="doc")).record_id
    embed_records(conn, [a], embedder=FakeEmbedder())
    ops.forget(conn, [a])
    ops.purge(conn, confirm=True)
    other = [s.replace("widget", "gadget") for s in SECTIONS]
    b = ops.add_record(conn, RecordDraft(body=_doc(other), kind="doc")).record_id
    embed_records(conn, [b], embedder=FakeEmbedder())
    c = ops.add_record(conn, RecordDraft(body=_doc(SECTIONS), kind="doc")).record_id
    rep = embed_records(conn, [c], embedder=FakeEmbedder())
    assert rep.reused == 0 and rep.pending_after == 0
    for key, vec in _vectors(conn, c).items():
        section, text = key.split("|", 1)
        assert np.allclose(vec, fake_vec(f"{section}\n\n{text}" if section else text))


def test_a_purge_takes_the_purged_passages_keys(conn):
    """A purged text leaves no hash behind (it would tell the text was stored)."""
    a = ops.add_record(conn, RecordDraft(body=_doc(SECTIONS[:2]), kind="doc")).record_id
    b = ops.add_record(conn, RecordDraft(body="A note kept.")).record_id
    embed_records(conn, [a, b], embedder=FakeEmbedder())
    assert conn.execute("SELECT count(*) FROM vector_keys WHERE model_id = 'fake-model'").fetchone()[0] >= 3
    ops.forget(conn, [a])
    ops.purge(conn, confirm=True)
    kept = conn.execute("SELECT passage_pk FROM vector_keys WHERE model_id = 'fake-model'").fetchall()
    assert [int(r[0]) for r in kept] == [int(r[0]) for r in conn.execute("SELECT pk FROM passages")]


def test_purging_the_first_copy_leaves_the_others_as_donors(conn):
    """Copies record their key too: with the text's first record purged, a third copy takes
    the vector from the second (it was embedded all over again)."""
    a = ops.add_record(conn, RecordDraft(body=_doc(SECTIONS), kind="doc", version="20")).record_id
    n = embed_records(conn, [a], embedder=FakeEmbedder()).embedded
    b = ops.add_record(conn, RecordDraft(body=_doc(SECTIONS), kind="doc", version="22")).record_id
    assert embed_records(conn, [b], embedder=FakeEmbedder()).reused == n
    ops.forget(conn, [a])
    ops.purge(conn, confirm=True)
    c = ops.add_record(conn, RecordDraft(body=_doc(SECTIONS), kind="doc", version="24")).record_id
    emb, seen = _recording()
    rep = embed_records(conn, [c], embedder=emb)
    assert rep.reused == rep.embedded == n and seen == []
