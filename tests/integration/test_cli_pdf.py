"""A folder of PDFs imported and searched as a user runs memo: real processes, real PDF
files (tests/pdf_files.py), what the import says about the ones it cannot read."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.pdf_files import make_pdf

EXE = Path(sys.executable).with_name("memo")
CMD = [str(EXE)] if EXE.exists() else [sys.executable, "-m", "memo"]


def sub(*args: str, db: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, MEMO_DB=str(db))
    return subprocess.run([*CMD, *args], capture_output=True, text=True, timeout=180, env=env)


def test_a_folder_of_pdfs_is_searchable_by_section(tmp_path: Path) -> None:
    papers = tmp_path / "papers"
    papers.mkdir()
    header = "Kestrel DB Operations Guide"
    (papers / "kestrel.pdf").write_bytes(make_pdf([
        [header, "1 Backups", "Backups run every Friday at noon and keep thirty days of snapshots.", "1"],
        [header, "2 Replication", "Every write goes to two standby servers before it is acknowledged.", "2"],
        [header, "2.1 Failover", "A standby is promoted when the primary misses three heartbeats.", "3"],
    ], outline=[(1, "Backups", 0), (1, "Replication", 1), (2, "Failover", 2)], title=header))
    (papers / "scan.pdf").write_bytes(make_pdf([[]]))
    (papers / "locked.pdf").write_bytes(make_pdf([["secret"]], password="pw"))
    db = tmp_path / "kb.db"

    out = sub("import", str(papers), "--json", db=db)
    assert out.returncode == 5, out.stderr          # one input refused: the others are stored
    report = json.loads(out.stdout)
    assert report["added"] == 1
    assert [(r["path"], r["reason"].split(":")[0]) for r in report["rejected"]] == [
        ("locked.pdf", "encrypted PDF that needs a password")]
    assert [i["path"] for i in report["ignored_files"]] == ["scan.pdf"]
    assert "OCR" in report["ignored_files"][0]["reason"]

    found = json.loads(sub("search", "what happens when the primary stops answering", "--json", db=db).stdout)
    top = found["results"][0]
    assert (Path(top["origin"]).name, top["section"]) == ("kestrel.pdf", "Replication > Failover")
    assert top["text"] == "A standby is promoted when the primary misses three heartbeats."
    # Running header and page numbers are not text of any passage.
    rec = json.loads(sub("get", top["record_id"], "--json", db=db).stdout)
    assert (rec["title"], rec["meta"]["converted_from"], rec["meta"]["pages"]) == (header, "pdf", 3)
    assert all(header not in p["text"] and p["text"] not in ("1", "2", "3") for p in rec["passages"])
