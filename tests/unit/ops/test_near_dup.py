"""Near-identical records at write time (issue 32.5; memo.ops.near_dup): linked by default,
skipped when the profile says so (and reported), never checked across namespaces, exact
duplicates still skipped by the dedup index.  Real SQLite, real FTS5."""

from __future__ import annotations

from pathlib import Path

import pytest

from memo.ops import add_record
from memo.ops.near_dup import similarity, words
from memo.profile import load_profile
from memo.store.db import open_db
from memo.stored import RecordDraft

NOTE = "The staging deploy key rotates every 30 days; ask the platform team for a new one."
EDITED = "The staging deploy key rotates every 30 days, ask the platform team for the new one!"
OTHER = "The production database is backed up every night at 2am to the offsite bucket."


@pytest.fixture
def conn(tmp_path: Path):
    c = open_db(tmp_path / "m.db", write=True)
    yield c
    c.close()


def _live(conn) -> int:
    return conn.execute("SELECT count(*) FROM records WHERE forgotten_at IS NULL AND superseded_at IS NULL"
                        ).fetchone()[0]


def test_similarity_counts_words_in_order() -> None:
    assert similarity(words(NOTE), words(NOTE)) == 1.0
    assert 0.85 < similarity(words(NOTE), words(EDITED)) < 1.0
    assert similarity(words(NOTE), words(OTHER)) < 0.5


def test_a_near_identical_add_is_stored_and_linked(conn) -> None:
    first = add_record(conn, RecordDraft(body=NOTE))
    second = add_record(conn, RecordDraft(body=EDITED))
    assert second.status == "added" and second.near_duplicate_of == first.record_id
    assert second.near_similarity >= load_profile("zscore").index.near_min
    assert "near-identical to" in second.note
    meta = conn.execute("SELECT meta FROM records WHERE id = ?", (second.record_id,)).fetchone()[0]
    assert first.record_id in meta
    assert _live(conn) == 2                                    # nothing lost
    third = add_record(conn, RecordDraft(body=OTHER))
    assert third.near_duplicate_of is None and third.note is None


def test_skip_policy_reports_and_stores_nothing(conn) -> None:
    skip = load_profile("zscore").with_overrides({"index.near_duplicates": "skip"}, name="skip")
    first = add_record(conn, RecordDraft(body=NOTE), profile=skip)
    second = add_record(conn, RecordDraft(body=EDITED), profile=skip)
    assert second.status == "skipped" and second.record_id == first.record_id
    assert second.near_duplicate_of == first.record_id and "memo supersede" in second.note
    assert _live(conn) == 1


def test_off_and_other_namespaces_do_not_link(conn) -> None:
    off = load_profile("zscore").with_overrides({"index.near_duplicates": "off"}, name="off")
    add_record(conn, RecordDraft(body=NOTE))
    assert add_record(conn, RecordDraft(body=EDITED), profile=off).near_duplicate_of is None
    assert add_record(conn, RecordDraft(body=EDITED + " ", namespace="elsewhere")).near_duplicate_of is None


def test_an_exact_duplicate_is_still_skipped_by_the_dedup_index(conn) -> None:
    first = add_record(conn, RecordDraft(body=NOTE))
    again = add_record(conn, RecordDraft(body=NOTE))
    assert again.status == "skipped" and again.record_id == first.record_id and again.near_duplicate_of is None


def test_the_check_runs_the_keyword_arm_only(conn, monkeypatch) -> None:
    """The whole pipeline's fact arm read every evidence row of the facts a text matched:
    with 100 facts citing 1,000 passages each an add took 266 ms instead of 12 (probe)."""
    from memo.retrieve.arms import fact, graph, semantic

    def boom(*_a, **_k):
        raise AssertionError("the near-duplicate check ran another arm")

    for module, name in ((fact, "FactArm"), (semantic, "SemanticArm"), (graph, "GraphArm")):
        monkeypatch.setattr(getattr(module, name), "run", boom)
    first = add_record(conn, RecordDraft(body=NOTE))
    assert add_record(conn, RecordDraft(body=EDITED)).near_duplicate_of == first.record_id


ZH = "我们决定使用数据库备份策略，每天凌晨三点执行全量备份。"
ZH_EDITED = "我们决定使用数据库备份策略，每天凌晨两点执行全量备份。"     # one character changed


def test_cjk_characters_are_words(conn) -> None:
    """A Chinese or Japanese sentence has no spaces: as one \\w+ run, one character changed
    made two notes share no word (found in the new-user run, issue 32.7)."""
    assert words("使用SQLite数据库") == ["使", "用", "sqlite", "数", "据", "库"]
    assert similarity(words(ZH), words(ZH_EDITED)) > 0.9
    first = add_record(conn, RecordDraft(body=ZH))
    assert add_record(conn, RecordDraft(body=ZH_EDITED)).near_duplicate_of == first.record_id


def test_distinct_cjk_notes_are_far_apart() -> None:
    """The 36 notes of datasets/cjk (Chinese and Japanese, several on the same topics):
    no two are near-identical by the character measure (max 0.17 when written)."""
    import itertools

    notes = sorted((Path(__file__).resolve().parents[3] / "datasets" / "cjk" / "notes").glob("*.md"))
    assert len(notes) == 36
    ws = [words(p.read_text(encoding="utf-8")) for p in notes]
    assert max(similarity(a, b) for a, b in itertools.combinations(ws, 2)) < 0.5
