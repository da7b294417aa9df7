"""``memo export`` and ``memo import`` of its file, as a user runs them: real processes,
a knowledge base moved from one database file to another, and the errors a user meets
(one line, exit 2, nothing written)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

EXE = Path(sys.executable).with_name("memo")
CMD = [str(EXE)] if EXE.exists() else [sys.executable, "-m", "memo"]


def sub(*args: str, db: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, MEMO_DB=str(db))
    return subprocess.run([*CMD, *args], capture_output=True, text=True, timeout=180, env=env)


def test_a_knowledge_base_moves_to_another_database(tmp_path: Path) -> None:
    a, b = tmp_path / "a.db", tmp_path / "b.db"
    first = json.loads(sub("add", "Kestrel DB backups run every Friday.", "--json", db=a).stdout)["record_id"]
    assert sub("supersede", first, "Kestrel DB backups run every Monday.", db=a).returncode == 0
    assert sub("add", "Alice Moreau joined the Lighthouse project.", "-n", "work", "--tag", "team", db=a).returncode == 0
    out = sub("export", str(tmp_path / "kb.jsonl.gz"), "--json", db=a)
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout)
    assert (report["records"], report["passages"], report["facts"]) == (3, 3, 0)
    assert report["vectors"] == {"all-minilm-l6-v2-int8": 3}

    got = sub("import", str(tmp_path / "kb.jsonl.gz"), "--json", db=b)
    assert got.returncode == 0, got.stderr
    imported = json.loads(got.stdout)
    assert (imported["format"], imported["added"], imported["skipped"]) == ("memo-export", 3, 0)
    assert imported["embedding"]["embedded"] == 0          # the vectors came with it
    found = json.loads(sub("search", "when are the backups", "--json", db=b).stdout)
    assert found["results"][0]["text"] == "Kestrel DB backups run every Monday."
    old = json.loads(sub("get", first, "--json", db=b).stdout)
    assert old["superseded_by"] == found["results"][0]["record_id"]

    text = sub("export", str(tmp_path / "kb.jsonl"), db=b)
    assert text.returncode == 0 and "exported 3 records (3 passages) and 0 facts" in text.stdout
    assert "memo import" in text.stdout


def test_mistakes_are_one_line_and_write_nothing(tmp_path: Path) -> None:
    a, b = tmp_path / "a.db", tmp_path / "b.db"
    sub("add", "A note to move.", db=a)
    assert sub("export", str(tmp_path / "kb.jsonl"), db=a).returncode == 0
    again = sub("export", str(tmp_path / "kb.jsonl"), db=a)
    assert again.returncode == 2 and "exists" in again.stderr and "--force" in again.stderr
    assert "Traceback" not in again.stderr
    lines = (tmp_path / "kb.jsonl").read_text().splitlines()
    (tmp_path / "cut.jsonl").write_text("\n".join(lines[:-1]) + "\n")
    cut = sub("import", str(tmp_path / "cut.jsonl"), db=b)
    assert cut.returncode == 2 and "cut short; nothing was imported" in cut.stderr
    assert "Traceback" not in cut.stderr
    asked = sub("import", str(tmp_path / "kb.jsonl"), "-n", "other", db=b)
    assert asked.returncode == 2 and "--namespace does not apply" in asked.stderr
    assert json.loads(sub("stats", "--json", db=b).stdout)["records"] == 0
