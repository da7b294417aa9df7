import pytest

from memo import ops
from memo.errors import ConfirmationRequired, NotFound, ValidationError
from memo.store.dialect import is_postgres
from memo.stored import RecordDraft
from tests.unit.ops.index_rows import keyword_rows


def _add(conn, body, **kw):
    return ops.add_record(conn, RecordDraft(body=body, **kw))


def test_add_then_duplicate_is_skipped(fresh_db):
    first = _add(fresh_db, "# Title\nSome text", namespace="a")
    again = _add(fresh_db, "# Title\nSome text  \n", namespace="a")
    other_ns = _add(fresh_db, "# Title\nSome text", namespace="b")
    assert first.status == "added" and first.passages == 1
    assert again.status == "skipped" and again.record_id == first.record_id
    assert other_ns.status == "added"


@pytest.mark.parametrize("kw", [dict(body=" "), dict(body="x", kind="blog"), dict(body="x", trust=-0.1),
                                dict(body="x", event_at="yesterday")])
def test_add_rejects_bad_fields(fresh_db, kw):
    with pytest.raises(ValidationError):
        ops.add_record(fresh_db, RecordDraft(**kw))
    assert fresh_db.execute("SELECT count(*) FROM records").fetchone()[0] == 0


def test_get_and_list_filters(fresh_db):
    a = _add(fresh_db, "alpha", namespace="w", kind="doc", source="s1", library="lib", version="2",
             tags=("x", "y")).record_id
    b = _add(fresh_db, "beta", namespace="w", kind="note", tags=("x",)).record_id
    c = _add(fresh_db, "gamma", namespace="p", kind="note").record_id
    ids = lambda **kw: [r.id for r in ops.list_records(fresh_db, ops.ListFilter(**kw))]  # noqa: E731
    assert set(ids()) == {a, b, c}
    assert set(ids(namespaces=("w",))) == {a, b}
    assert ids(kinds=("doc",)) == [a]
    assert ids(sources=("s1",)) == [a] and ids(library="lib") == [a] and ids(version="2") == [a]
    assert set(ids(tags=("x",))) == {a, b} and ids(tags=("x", "y")) == [a]
    assert ids(tags=(" y ",)) == [a]                   # tags are stored stripped: the filter strips too
    assert len(ids(limit=1)) == 1
    row = ops.list_records(fresh_db, ops.ListFilter(kinds=("doc",)))[0]
    assert row.tags == ("x", "y") and row.passages == 1
    assert ops.get(fresh_db, a).body == "alpha"
    with pytest.raises(ValidationError):
        ops.list_records(fresh_db, ops.ListFilter(kinds=("blog",)))


def test_supersede_keeps_old_version(fresh_db):
    old = _add(fresh_db, "v1 text", namespace="n", tags=("t",), library="lib").record_id
    rep = ops.supersede(fresh_db, old, "v2 text", version="2.0")
    new = ops.get(fresh_db, rep.new_id)
    assert new.body == "v2 text" and new.tags == ("t",) and new.library == "lib" and new.version == "2.0"
    prev = ops.get(fresh_db, old)
    assert prev.superseded_by == rep.new_id and prev.superseded_at == rep.superseded_at
    assert len(prev.passages) == 1  # kept for as_of queries
    assert [r.id for r in ops.list_records(fresh_db)] == [rep.new_id]
    assert {r.id for r in ops.list_records(fresh_db, ops.ListFilter(include_superseded=True))} == {old, rep.new_id}
    with pytest.raises(ValidationError, match="already superseded"):
        ops.supersede(fresh_db, old, "v3")
    with pytest.raises(ValidationError, match="same as the current"):
        ops.supersede(fresh_db, rep.new_id, "v2 text")
    with pytest.raises(NotFound):
        ops.supersede(fresh_db, "nope", "x")
    back = _add(fresh_db, "v1 text", namespace="n", library="lib")
    assert back.status == "skipped" and back.record_id == old and rep.new_id in back.note
    # the same text without the library is another record (memo.store.records.record_hash)
    assert _add(fresh_db, "v1 text", namespace="n").status == "added"


def test_forget_needs_confirmation_for_several(fresh_db):
    a = _add(fresh_db, "one").record_id
    b = _add(fresh_db, "two").record_id
    with pytest.raises(ConfirmationRequired):
        ops.forget(fresh_db, [a, b])
    assert ops.forget(fresh_db, [a]).forgotten == (a,)
    rep = ops.forget(fresh_db, [a, b], confirm=True)
    assert rep.forgotten == (b,) and rep.already_forgotten == (a,) and rep.forgotten_at is not None
    again = ops.forget(fresh_db, [a])          # nothing forgotten now: no time of this call's
    assert again.forgotten == () and again.already_forgotten == (a,) and again.forgotten_at is None
    assert ops.list_records(fresh_db) == ()
    assert len(ops.list_records(fresh_db, ops.ListFilter(include_forgotten=True))) == 2
    with pytest.raises(NotFound):
        ops.forget(fresh_db, ["nope"])
    # Forgotten content can be added again (it is a new record).
    assert _add(fresh_db, "one").status == "added"


def test_purge_removes_rows_and_index_entries(fresh_db):
    a = _add(fresh_db, "purge me please").record_id
    b = _add(fresh_db, "and me").record_id
    keep = _add(fresh_db, "keep me").record_id
    ops.forget(fresh_db, [a, b], confirm=True)
    with pytest.raises(ConfirmationRequired):
        ops.purge(fresh_db)
    rep = ops.purge(fresh_db, confirm=True)
    assert rep.records == 2 and rep.passages == 2 and set(rep.record_ids) == {a, b}
    assert [r[0] for r in fresh_db.execute("SELECT id FROM records")] == [keep]
    assert keyword_rows(fresh_db, "passages_fts", "purge") == []
    assert fresh_db.execute("SELECT count(*) FROM exact_fts").fetchone()[0] == 1
    if not is_postgres(fresh_db):   # FTS5's own consistency check
        assert fresh_db.execute("INSERT INTO passages_fts(passages_fts) VALUES ('integrity-check')") is not None


def test_purge_of_a_superseding_version(fresh_db):
    old = _add(fresh_db, "old").record_id
    new = ops.supersede(fresh_db, old, "new").new_id
    ops.forget(fresh_db, [new])
    assert ops.purge(fresh_db).records == 1
    prev = ops.get(fresh_db, old)
    assert prev.superseded_at is not None and prev.superseded_by is None


def test_previous_version_is_found_by_import_path_and_external_id(fresh_db):
    from memo.ops.add import find_previous_version

    a = _add(fresh_db, "first text", import_path="/x/a.md").record_id
    b = _add(fresh_db, "other text", import_path="/x/a.md", ext_id="e1").record_id
    assert find_previous_version(fresh_db, RecordDraft(body="new", import_path="/x/a.md")) == a   # NULL ext_id
    assert find_previous_version(fresh_db, RecordDraft(body="new", import_path="/x/a.md", ext_id="e1")) == b
    assert find_previous_version(fresh_db, RecordDraft(body="new", import_path="/x/a.md", ext_id="e2")) is None


@pytest.mark.parametrize(("field", "value"), [("tags", "abc"), ("tags", ("a", 1)), ("meta", [1, 2])])
def test_the_library_refuses_what_no_surface_would_send(fresh_db, field, value):
    """A string for tags was stored as one tag per character, a list for meta as it is."""
    with pytest.raises(ValidationError, match=field):
        ops.add_record(fresh_db, RecordDraft(body="a note", **{field: value}))
    assert ops.list_records(fresh_db) == ()
