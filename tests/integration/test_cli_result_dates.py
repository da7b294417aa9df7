"""Every result says when its event happened and who said it (``event_at``, ``speaker``),
without --explain: an agent answering "when did ..." from memory_search had only the text
and a heading to go on (why held the date, and only when asked for)."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

import memo
from memo.cli import app

runner = CliRunner()
CHAT = ("---\ntitle: Catch-up\ndate: 2023-05-08\n---\n"
        "Caroline: I went to the LGBTQ support group yesterday and it was great.\n"
        "Melanie: That sounds wonderful, how did the group go?\n")


def _run(*args: str) -> str:
    res = runner.invoke(app, list(args))
    assert res.exit_code == 0, (res.stdout, res.stderr)
    return res.stdout


def test_results_carry_the_event_date_and_the_speaker(tmp_path: Path):
    db = str(tmp_path / "m.db")
    (tmp_path / "chat.md").write_text(CHAT)
    _run("import", str(tmp_path / "chat.md"), "--kind", "conversation", "--db", db, "--no-embed")
    _run("add", "The standup moves to 10am from Monday on", "--event-date", "2026-11-30", "--db", db)
    _run("add", "The wifi password is on the fridge", "--db", db)

    out = json.loads(_run("search", "LGBTQ support group", "--mode", "keyword", "--db", db, "--json"))
    top = out["results"][0]
    assert top["speaker"] == "Caroline" and top["event_at"] == "2023-05-08" and top["why"] is None
    note = json.loads(_run("search", "standup", "--mode", "keyword", "--db", db, "--json"))["results"][0]
    assert (note["event_at"], note["speaker"]) == ("2026-11-30", None)
    undated = json.loads(_run("search", "wifi password", "--mode", "keyword", "--db", db, "--json"))["results"][0]
    assert (undated["event_at"], undated["speaker"]) == (None, None)

    # the library gives the same fields (the MCP tool and the web API return this object)
    res = memo.search("standup", db=db, mode="keyword").results[0]
    assert (res.event_at, res.speaker) == ("2026-11-30", None)

    text = _run("search", "standup", "--mode", "keyword", "--db", db)
    assert "    dated 2026-11-30\n" in text
    turn = _run("search", "LGBTQ support group", "--mode", "keyword", "--db", db)
    assert "Caroline @ 2023-05-08" in turn and "said by" not in turn and "dated" not in turn   # the heading says it
    assert "dated" not in _run("search", "wifi password", "--mode", "keyword", "--db", db)

    # a turn dated with a time: its heading shows the date as written, the stored one is UTC
    (tmp_path / "timed.md").write_text("---\ndate: 2024-04-07T15:30:00+02:00\n---\nErin: the puffinbeak deploy is done.\n")
    _run("import", str(tmp_path / "timed.md"), "--kind", "conversation", "--db", db, "--no-embed")
    timed = _run("search", "puffinbeak", "--mode", "keyword", "--db", db)
    assert "Erin @ 2024-04-07T15:30:00+02:00" in timed and "dated" not in timed, timed
    got = json.loads(_run("search", "puffinbeak", "--mode", "keyword", "--db", db, "--json"))["results"][0]
    assert got["event_at"].startswith("2024-04-07T13:30:00") and got["speaker"] == "Erin"



def test_a_period_with_no_memory_is_said(tmp_path: Path):
    """'What did Caroline do in May 2023?' over July turns: the results came from July and
    nothing said that May held nothing."""
    db = str(tmp_path / "m.db")
    (tmp_path / "chat.md").write_text("---\ndate: 2023-07-02\n---\nCaroline: I painted the lake at sunrise.\n"
                                      "Melanie: Lovely, the lake is beautiful then.\n")
    _run("import", str(tmp_path / "chat.md"), "--kind", "conversation", "--db", db, "--no-embed")
    res = runner.invoke(app, ["search", "What did Caroline paint in May 2023?", "--mode", "keyword", "--db", db])
    assert res.exit_code == 0 and "Caroline" in res.stdout
    assert "note: the query names 2023-05; none of the" in res.stderr and "results come from other dates" in res.stderr
    doc = json.loads(_run("search", "What did Caroline paint in July 2023?", "--mode", "keyword", "--db", db, "--json"))
    assert not any("other dates" in n for n in doc["trace"]["notes"])       # July holds them: nothing to say


def test_list_shows_a_records_date_unless_its_title_does(tmp_path: Path):
    """``memo list`` printed the title alone: a daily note titled 2024-03-06 but dated
    2024-02-20 by its front matter was listed under --from 2024-02 with nothing saying why."""
    db = str(tmp_path / "m.db")
    (tmp_path / "v").mkdir()
    (tmp_path / "v" / "2024-03-05.md").write_text("Fixed the garden hose.\n")
    (tmp_path / "v" / "2024-03-06.md").write_text("---\ndate: 2024-02-20\n---\nCalled the plumber.\n")
    _run("import", str(tmp_path / "v"), "--db", db, "--no-embed")
    lines = _run("list", "--db", db).splitlines()
    assert any("2024-03-06  dated 2024-02-20  (1 passages)" in line for line in lines), lines
    assert any(line.endswith("2024-03-05  (1 passages)") for line in lines), lines
