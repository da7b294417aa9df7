"""The tester's session: markdown chats with front matter imported with ``--kind
conversation`` (front matter was stored as turns by speakers 'title', 'date', 'tags'),
date lines memo did not read (``[8 May 2023]``, offsets, ``UTC``), ``memo add`` ignoring
front matter, and a re-import with another ``--kind`` that changed nothing and said
nothing."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from memo.cli import app

runner = CliRunner()
CHAT = ("---\ntitle: Call with Tom about the road trip\ndate: March 3, 2025\ntags: [tom, travel]\n---\n"
        "Tom: I think we should leave on Friday.\nAna: Friday works, I can drive the first leg.\n")


def _run(*args: str, input: str | None = None) -> tuple[str, str]:
    res = runner.invoke(app, [*args, "--no-embed"] if args[0] == "import" else list(args), input=input)
    assert res.exit_code == 0, (res.stdout, res.stderr)
    return res.stdout, res.stderr


def _js(*args: str, input: str | None = None) -> dict:
    return json.loads(_run(*args, "--json", input=input)[0])


def _folder(tmp_path: Path) -> Path:
    root = tmp_path / "convmd"
    root.mkdir()
    (root / "tom.md").write_text(CHAT)
    (root / "ana.md").write_text(CHAT.replace("Tom", "Ben").replace("road trip", "dinner"))
    return root


def test_front_matter_of_a_markdown_chat_is_the_records_never_turns(tmp_path: Path):
    db = str(tmp_path / "m.db")
    rep = _js("import", str(_folder(tmp_path)), "--kind", "conversation", "--db", db)
    assert rep["added"] == 2 and rep["passages"] == 4
    rec = _js("get", rep["record_ids"][1], "--db", db)
    assert (rec["title"], rec["event_at"], rec["tags"]) == ("Call with Tom about the road trip", "2025-03-03",
                                                            ["tom", "travel"])
    assert [(p["speaker"], p["text"]) for p in rec["passages"]] == [
        ("Tom", "I think we should leave on Friday."), ("Ana", "Friday works, I can drive the first leg.")]
    names = {e["name"] for e in _js("entities", "list", "--db", db)["entities"]}
    assert not names & {"title", "date", "tags"} and {"Tom", "Ana", "Ben"} <= names


def test_add_reads_front_matter_as_import_does(tmp_path: Path):
    db = str(tmp_path / "m.db")
    rep = _js("add", "--db", db, input="---\ntitle: Trip plan\ndate: 2025-03-04\ntags: [trip]\n---\nWe leave Friday.\n")
    rec = _js("get", rep["record_id"], "--db", db)
    assert (rec["title"], rec["event_at"], rec["tags"]) == ("Trip plan", "2025-03-04", ["trip"])


def test_date_lines_the_tester_wrote_date_the_turns(tmp_path: Path):
    db = str(tmp_path / "m.db")
    for line, stored in (("[8 May 2023]", "2023-05-08"), ("2025-11-20T09:00:00-05:00", "2025-11-20T14:00:00.000000Z"),
                         ("2023-05-08 14:00 UTC", "2023-05-08T14:00:00.000000Z"), ("## 8 Nov 2025", "2025-11-08")):
        rep = _js("add", "--kind", "conversation", "--db", db, input=f"{line}\nTom: hi there {line}\n")
        (turn,) = _js("get", rep["record_id"], "--db", db)["passages"]
        assert (turn["speaker"], turn["event_at"]) == ("Tom", stored), line


def test_import_with_another_kind_re_splits_and_a_held_text_is_a_notice(tmp_path: Path):
    db = str(tmp_path / "m.db")
    root = _folder(tmp_path)
    assert _js("import", str(root), "--db", db)["added"] == 2
    rep = _js("import", str(root), "--kind", "conversation", "--db", db)
    assert (rep["added"], rep["updated"], rep["skipped"], rep["notices"]) == (0, 2, 0, [])
    kinds = {r["kind"] for r in _js("list", "--db", db)["records"]}
    assert kinds == {"conversation"}
    # The same texts at another path, asked for as docs: held by the conversations above.
    copy = tmp_path / "copy"
    copy.mkdir()
    for f in root.iterdir():
        (copy / f.name).write_text(f.read_text())
    rep = _js("import", str(copy), "--kind", "doc", "--db", db)
    assert rep["skipped"] == 2 and [n["path"] for n in rep["notices"]] == ["ana.md", "tom.md"]
    assert all("already stored as a conversation" in n["reason"] and "memo forget" in n["reason"]
               for n in rep["notices"])
    _, err = _run("import", str(copy), "--kind", "doc", "--db", db)
    assert "notice tom.md: its text is already stored as a conversation" in err
