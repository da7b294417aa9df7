"""A fact keeps its evidence across a new version of the record it cites
(``memo.store.facts.carry_evidence``): a file re-imported with one line changed, or a
record superseded, used to leave every fact about its unchanged passages citing a version
no search shows (``live`` false, the fact arm silent).  Now the new version's passage of
the same section and text is cited too; a changed passage carries nothing; the old row
stays for ``as_of``.  On both backends (``fresh_db``)."""

from __future__ import annotations

from memo import ops
from memo.ops import facts as fops
from memo.ops.importer import ImportOptions
from memo.retrieve import search
from memo.retrieve.types import SearchRequest
from memo.stored import FactDraft, RecordDraft

DOC = "# Shell\n\n## join\n\nshlex.join quotes each argument for a POSIX shell.\n\n## split\n\nshlex.split splits like a shell.\n"


def _passage(conn, record_id: str, section_end: str) -> str:
    return next(r[0] for r in conn.execute("SELECT id, section FROM passages WHERE record_id = ? ORDER BY ord",
                                           (record_id,)) if r[1].endswith(section_end))


def _live(conn, fact_id: str) -> list[tuple[str, bool]]:
    return [(e.passage_id, e.live) for e in fops.get_fact(conn, fact_id).evidence]


def test_a_reimported_file_keeps_the_facts_about_its_unchanged_passages(fresh_db, tmp_path):
    root = tmp_path / "d"
    root.mkdir()
    (root / "shlex.md").write_text(DOC)
    old = ops.import_path(fresh_db, root, ImportOptions()).record_ids[0]
    join_old, split_old = _passage(fresh_db, old, "join"), _passage(fresh_db, old, "split")
    kept = fops.add_fact(fresh_db, FactDraft(text="shlex.join quotes arguments for a POSIX shell",
                                             evidence=(join_old,)), embed=False).fact_id
    changed = fops.add_fact(fresh_db, FactDraft(text="shlex.split splits like a shell",
                                                evidence=(split_old,)), embed=False).fact_id
    (root / "shlex.md").write_text(DOC.replace("splits like a shell.", "splits like a POSIX shell.")
                                   + "\n# trailing comment\n")
    rep = ops.import_path(fresh_db, root, ImportOptions())
    assert rep.updated == 1
    new = rep.record_ids[0]
    join_new = _passage(fresh_db, new, "join")
    assert _live(fresh_db, kept) == [(join_old, False), (join_new, True)]
    assert _live(fresh_db, changed) == [(split_old, False)]       # its passage changed: nothing carried
    # the fact arm votes for the new version's passage again
    res = search(fresh_db, SearchRequest("POSIX shell quoting", response_format="explain", limit=10), "zscore", {})
    voted = {r.passage_id for r in res.results if "fact" in r.why.arms}
    assert voted == {join_new}


def test_supersede_carries_the_evidence_of_unchanged_passages(fresh_db):
    rid = ops.add_record(fresh_db, RecordDraft(body=DOC)).record_id
    join_old = _passage(fresh_db, rid, "join")
    fid = fops.add_fact(fresh_db, FactDraft(text="join quotes", evidence=(join_old,)), embed=False).fact_id
    new = ops.supersede(fresh_db, rid, DOC + "\n## quote\n\nshlex.quote quotes one string.\n").new_id
    assert _live(fresh_db, fid) == [(join_old, False), (_passage(fresh_db, new, "join"), True)]
    # a superseded or forgotten fact carries nothing
    gone = fops.add_fact(fresh_db, FactDraft(text="split splits", evidence=(_passage(fresh_db, new, "split"),)),
                         embed=False).fact_id
    fops.forget_facts(fresh_db, [gone])
    newer = ops.supersede(fresh_db, new, DOC + "\n## quote\n\nshlex.quote quotes a string.\n").new_id
    assert [e.passage_id for e in fops.get_fact(fresh_db, gone).evidence] == [_passage(fresh_db, new, "split")]
    assert _live(fresh_db, fid)[-1] == (_passage(fresh_db, newer, "join"), True)


def test_a_moved_code_file_keeps_the_facts_about_its_passages(fresh_db, tmp_path):
    """A code file moved to another folder supersedes its record (memo.ops.file_moves) and
    its sections name the new module (a.shlex_util.join -> b.shlex_util.join): the facts
    citing its passages follow them by their text."""
    root = tmp_path / "proj"
    (root / "a").mkdir(parents=True)
    (root / "a" / "shlex_util.py").write_text(
        'def join(args):\n    """Quote each argument for a POSIX shell."""\n    return " ".join(args)\n')
    old = ops.import_path(fresh_db, root, ImportOptions()).record_ids[0]
    cited = _passage(fresh_db, old, "a.shlex_util.join")
    fid = fops.add_fact(fresh_db, FactDraft(text="join quotes arguments for a POSIX shell", evidence=(cited,)),
                        embed=False).fact_id
    (root / "b").mkdir()
    (root / "a" / "shlex_util.py").rename(root / "b" / "shlex_util.py")
    rep = ops.import_path(fresh_db, root, ImportOptions())
    assert rep.updated == 1
    assert _live(fresh_db, fid) == [(cited, False), (_passage(fresh_db, rep.record_ids[0], "b.shlex_util.join"), True)]
