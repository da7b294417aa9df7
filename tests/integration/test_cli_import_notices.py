"""`memo import` says when a file was imported with part of it left out: a front matter
date memo cannot read is a notice (text and --json) naming the file, the key and the
value, and the record is stored without an event date (exit 0: nothing was rejected)."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from memo.cli import app

runner = CliRunner()


def test_an_unreadable_front_matter_date_is_a_notice_and_the_file_is_imported(tmp_path: Path) -> None:
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "iso.md").write_text("---\ndate: 2024-05-01\n---\n# ISO\nthe pump was serviced\n")
    (notes / "named.md").write_text("---\ndate: March 3, 2024\n---\n# Named\nthe filter was changed\n")
    (notes / "vague.md").write_text("---\ndate: someday\n---\n# Vague\nthe valve will be replaced\n")
    db = str(tmp_path / "m.db")

    res = runner.invoke(app, ["import", str(notes), "--db", db, "--json", "--no-embed", "--no-progress"])
    assert res.exit_code == 0, (res.stdout, res.stderr)
    doc = json.loads(res.stdout)
    assert doc["added"] == 3 and doc["rejected"] == [] and doc["ignored_files"] == []
    (notice,) = doc["notices"]
    assert notice["path"] == "vague.md"
    assert "front matter 'date' value 'someday' is not a date memo reads" in notice["reason"]
    assert "ISO 8601 date or date-time" in notice["reason"]

    records = json.loads(runner.invoke(app, ["list", "--db", db, "--json"]).stdout)
    dates = {r["title"]: r["event_at"] for r in records["records"]}
    assert dates == {"ISO": "2024-05-01", "Named": "2024-03-03", "Vague": None}

    (notes / "vague.md").write_text("---\ndate: 03/04/2024\n---\n# Vague\nthe valve was replaced\n")
    text = runner.invoke(app, ["import", str(notes), "--db", db, "--no-embed", "--no-progress"])
    assert text.exit_code == 0, (text.stdout, text.stderr)
    assert "notice vague.md: front matter 'date' value '03/04/2024' is not a date memo reads" in text.stderr
