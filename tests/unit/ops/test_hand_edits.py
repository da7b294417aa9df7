"""A version written with ``memo supersede`` over an imported file survives importing the
unchanged file again, and a changed file replaces it with a note (memo.ops.hand_edits).
Before, re-importing an unchanged folder silently took back every such correction."""

from __future__ import annotations

from pathlib import Path

from memo import ops
from memo.ops.hand_edits import HAND_EDIT, HAND_EDIT_KEY
from memo.stored import RecordDraft

TEXT = "# Pump\n\nThe pump runs at 40 psi.\n"
FIXED = "# Pump\n\nThe pump runs at 45 psi (corrected after the audit).\n"


def _imported(conn, tmp_path: Path) -> tuple[Path, str]:  # noqa: ANN001
    root = tmp_path / "notes"
    root.mkdir()
    (root / "pump.md").write_text(TEXT)
    rep = ops.import_path(conn, root)
    return root, rep.record_ids[0]


def _current(conn, rid: str):  # noqa: ANN001, ANN202
    rec = ops.get(conn, rid)
    while rec.superseded_by:
        rec = ops.get(conn, rec.superseded_by)
    return rec


def test_reimporting_an_unchanged_file_keeps_the_hand_edit(fresh_db, tmp_path: Path) -> None:
    root, rid = _imported(fresh_db, tmp_path)
    edit = ops.supersede(fresh_db, rid, FIXED).new_id
    assert ops.get(fresh_db, edit).meta.get(HAND_EDIT_KEY) == HAND_EDIT
    again = ops.import_path(fresh_db, root)
    assert (again.added, again.updated, again.skipped) == (0, 0, 1)
    assert _current(fresh_db, rid).id == edit and "45 psi" in _current(fresh_db, rid).body
    (note,) = [n.reason for n in again.notices]
    assert f"kept {edit}, written with `memo supersede`" in note and f"`memo forget {edit}`" in note


def test_two_hand_edits_in_a_row_are_kept_too(fresh_db, tmp_path: Path) -> None:
    root, rid = _imported(fresh_db, tmp_path)
    first = ops.supersede(fresh_db, rid, FIXED).new_id
    second = ops.supersede(fresh_db, first, FIXED.replace("45", "46")).new_id
    again = ops.import_path(fresh_db, root)
    assert again.skipped == 1 and _current(fresh_db, rid).id == second


def test_a_changed_file_replaces_the_hand_edit_and_says_so(fresh_db, tmp_path: Path) -> None:
    root, rid = _imported(fresh_db, tmp_path)
    edit = ops.supersede(fresh_db, rid, FIXED).new_id
    (root / "pump.md").write_text(TEXT.replace("40", "50"))
    again = ops.import_path(fresh_db, root)
    assert again.updated == 1
    now = _current(fresh_db, rid)
    assert "50 psi" in now.body and HAND_EDIT_KEY not in now.meta
    (note,) = [n.reason for n in again.notices]
    assert f"the file changed since {edit} was written with `memo supersede`" in note


def test_forgetting_the_hand_edit_takes_the_files_text_again(fresh_db, tmp_path: Path) -> None:
    root, rid = _imported(fresh_db, tmp_path)
    edit = ops.supersede(fresh_db, rid, FIXED).new_id
    ops.forget(fresh_db, [edit])
    again = ops.import_path(fresh_db, root)
    assert again.added == 1 and "40 psi" in ops.get(fresh_db, again.record_ids[0]).body


def test_a_file_changed_back_by_imports_is_no_hand_edit(fresh_db, tmp_path: Path) -> None:
    root, rid = _imported(fresh_db, tmp_path)
    (root / "pump.md").write_text(FIXED)
    assert ops.import_path(fresh_db, root).updated == 1
    (root / "pump.md").write_text(TEXT)          # back to the first text: the file is newer
    back = ops.import_path(fresh_db, root)
    assert back.updated == 1 and "40 psi" in _current(fresh_db, rid).body and not back.notices


def test_a_note_without_a_file_is_not_marked(fresh_db) -> None:
    rid = ops.add_record(fresh_db, RecordDraft(body="the pump runs at 40 psi")).record_id
    edit = ops.supersede(fresh_db, rid, "the pump runs at 45 psi").new_id
    assert HAND_EDIT_KEY not in ops.get(fresh_db, edit).meta


def test_the_record_by_record_store_decides_the_same(fresh_db, tmp_path: Path) -> None:
    """``store_draft(..., replace_previous=True)``, the form ``store_items`` is checked against
    (tests/unit/ops/test_store_batch.py), keeps and replaces a hand edit as the batch does."""
    from memo.ops.add import prepare, store_draft
    from memo.store.connect import write_tx

    _, rid = _imported(fresh_db, tmp_path)
    edit = ops.supersede(fresh_db, rid, FIXED).new_id
    draft = ops.get(fresh_db, rid)      # the imported version: what the file holds
    same = RecordDraft(body=draft.body, kind=draft.kind, namespace=draft.namespace, title=draft.title,
                       import_path=draft.import_path, meta=draft.meta)
    with write_tx(fresh_db):
        kept = store_draft(fresh_db, same, prepare(same), replace_previous=True)
    assert (kept.status, kept.record_id) == ("skipped", edit) and f"kept {edit}" in kept.note
    changed = RecordDraft(body=draft.body.replace("40", "50"), kind=draft.kind, namespace=draft.namespace,
                          title=draft.title, import_path=draft.import_path, meta=draft.meta)
    with write_tx(fresh_db):
        rep = store_draft(fresh_db, changed, prepare(changed), replace_previous=True)
    assert rep.status == "updated" and rep.superseded == edit and "memo supersede" in rep.note
