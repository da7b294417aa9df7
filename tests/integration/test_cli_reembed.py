"""A one-line edit re-imported embeds the edited passage only, with the real model: the
record's new version copies the earlier version's vectors of its unchanged passages
(memo.embed.reuse), and the semantic arm finds them as before."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from memo.cli import app

runner = CliRunner()


def _run(*args: str) -> str:
    res = runner.invoke(app, list(args))
    assert res.exit_code == 0, (res.stdout, res.stderr)
    return res.stdout


def _write(path: Path, swap: bool = False) -> None:
    parts = [f"## Valve {i}\n\nValve {i} of the cooling loop opens at {20 + i} degrees and closes "
             f"when the pump number {i} stops." for i in range(12)]
    if swap:
        parts[4] = "## Valve 4\n\nValve 4 of the cooling loop was removed in the spring overhaul."
    path.write_text("# Cooling loop\n\n" + "\n\n".join(parts) + "\n")


def _semantic(db: str, query: str) -> list[tuple[str, float]]:
    out = json.loads(_run("search", query, "--mode", "semantic", "--db", db, "--json"))
    return [(r["text"], r["score"]) for r in out["results"]]


def test_a_one_line_edit_embeds_one_passage(tmp_path: Path):
    db, docs = str(tmp_path / "m.db"), tmp_path / "docs"
    docs.mkdir()
    _write(docs / "loop.md")
    first = json.loads(_run("import", str(docs), "--db", db, "--json"))
    n = first["embedding"]["embedded"]
    assert n >= 12 and first["embedding"]["reused"] == 0
    before = _semantic(db, "when does valve 7 close")

    _write(docs / "loop.md", swap=True)
    again = json.loads(_run("import", str(docs), "--db", db, "--json"))
    assert again["updated"] == 1
    assert again["embedding"]["embedded"] == n and again["embedding"]["reused"] == n - 1
    assert again["embedding"]["pending_after"] == 0
    after = _semantic(db, "when does valve 7 close")
    assert [t for t, _ in after if "removed" not in t][:3] == [t for t, _ in before if "Valve 4 " not in t][:3]
    assert after[0][0] == before[0][0] and "Valve 7 " in after[0][0]

    (docs / "loop.md").write_text((docs / "loop.md").read_text().replace("spring", "autumn"))
    out = _run("import", str(docs), "--db", db)
    assert f"embedded {n} passages (" in out and f"{n - 1} of them copied from the earlier version" in out


def test_supersede_reports_the_vectors_it_copied(tmp_path: Path):
    db = str(tmp_path / "m.db")
    body = "# Loop\n\n## A\n\nValve A opens at 20 degrees.\n\n## B\n\nValve B opens at 30 degrees.\n"
    rid = json.loads(_run("add", body, "--kind", "doc", "--db", db, "--json"))["record_id"]
    rep = json.loads(_run("supersede", rid, body.replace("30 degrees", "35 degrees"), "--db", db, "--json"))
    assert rep["vectors"]["queued"] == 0 and rep["vectors"]["reused"] == rep["vectors"]["embedded"] - 1 >= 1
