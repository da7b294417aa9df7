"""The tester's session: memo as an assistant's memory, a Claude export imported, then a
newer export unzipped to a new folder and imported too.  The conversation that grew was
stored a second time ("added 1, skipped 1"): two live records, every old turn found twice.
Now the newer export supersedes it, and the older export imported again changes nothing
and says why (memo.ops.chat_versions)."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from memo.cli import app
from tests.unit.ops.chat_export_files import claude_export, message

runner = CliRunner()


def _run(*args: str) -> tuple[str, str]:
    res = runner.invoke(app, list(args))
    assert res.exit_code == 0, (res.stdout, res.stderr)
    return res.stdout, res.stderr


def test_a_newer_export_in_a_new_folder_supersedes_and_an_older_one_is_skipped(tmp_path: Path):
    db = str(tmp_path / "x.db")
    other = {"c2": [message(0, topic="tide tables")]}
    exp1 = claude_export(tmp_path / "exp1" / "conversations.json", {"c1": [message(k) for k in range(3)], **other})
    exp2 = claude_export(tmp_path / "exp2" / "conversations.json", {"c1": [message(k) for k in range(4)], **other})
    out, _ = _run("import", str(exp1), "--db", db, "--no-embed")
    assert "added 2, updated 0, skipped 0" in out
    out, _ = _run("import", str(exp2), "--db", db, "--no-embed")
    assert "added 0, updated 1, skipped 1" in out
    records = json.loads(_run("list", "--db", db, "--json")[0])["records"]      # live records
    assert sorted(r["title"] for r in records) == ["Chat c1", "Chat c2"]        # one per conversation
    [conv] = [r for r in records if r["title"] == "Chat c1"]
    assert conv["import_path"] == exp2.as_posix() and conv["passages"] == 4
    found = json.loads(_run("search", "message 0 about the heron migration", "--mode", "keyword",
                            "--db", db, "--json")[0])["results"]
    assert [r["record_id"] for r in found if r["text"].endswith("message 0 about the heron migration")] == [conv["id"]]
    out, err = _run("import", str(exp1), "--db", db, "--no-embed")           # the older export again
    assert "added 0, updated 0, skipped 2" in out
    assert "an older export of this conversation" in err and conv["id"] in err
    rep = json.loads(_run("import", str(exp1), "--db", db, "--no-embed", "--json")[0])
    assert [n["path"] for n in rep["notices"]] == ["claude:c1"] and rep["skipped_record_ids"] == sorted(
        [conv["id"], next(r["id"] for r in records if r["title"] == "Chat c2")])
