"""`memo fact list` and `memo entities list` say when more rows exist, as `memo list` does:
`--json` carries `next_offset` (null on the last page) and the text output ends with a
`-- facts 1-3 shown, more exist: --offset 3 ...` line (docs/cli-json.md)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from memo.cli import app

runner = CliRunner()
WORDS = ("apple", "bridge", "canyon", "dolphin", "ember", "falcon", "glacier")


def run(*args: str, code: int = 0):
    res = runner.invoke(app, list(args))
    assert res.exit_code == code, (res.exit_code, res.stdout, res.stderr)
    return res


def js(*args: str, code: int = 0) -> dict:
    return json.loads(run(*args, "--json", code=code).stdout)


@pytest.fixture
def seven(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """Seven records, each naming one explicit entity, and seven facts citing them."""
    monkeypatch.setenv("MEMO_MODELS", str(tmp_path / "no-models"))
    db = str(tmp_path / "seven.db")
    lines = tmp_path / "seven.jsonl"
    rows = [{"id": f"n{i}", "text": f"note about the {w}", "entities": [f"Thing{w}"]} for i, w in enumerate(WORDS)]
    rows += [{"type": "fact", "text": f"the {w} is mentioned in note {i}", "evidence": [f"n{i}"]}
             for i, w in enumerate(WORDS)]
    lines.write_text("".join(json.dumps(r) + "\n" for r in rows))
    js("import", str(lines), "--no-embed", "--no-progress", "--db", db)
    return db


def _pages(cmd: tuple[str, ...], key: str, db: str, limit: int) -> list[str]:
    first = js(*cmd, "--limit", str(limit), "--db", db)
    assert len(first[key]) == limit and first["next_offset"] == limit, first
    ids = [r.get("id") or r.get("key") for r in first[key]]
    offset = first["next_offset"]
    while offset is not None:
        page = js(*cmd, "--limit", str(limit), "--offset", str(offset), "--db", db)
        ids += [r.get("id") or r.get("key") for r in page[key]]
        offset = page["next_offset"]
    return ids


def test_fact_list_json_pages_with_next_offset(seven: str) -> None:
    first = js("fact", "list", "--limit", "3", "--db", seven)
    assert first["count"] == 3 and first["next_offset"] == 3
    ids = _pages(("fact", "list"), "facts", seven, 3)
    assert len(ids) == len(set(ids)) == 7
    exact = js("fact", "list", "--limit", "4", "--offset", "3", "--db", seven)      # exactly the rest
    assert exact["count"] == 4 and exact["next_offset"] is None
    everything = js("fact", "list", "--limit", "7", "--db", seven)                  # exactly the limit
    assert everything["count"] == 7 and everything["next_offset"] is None
    assert js("fact", "list", "--db", seven)["next_offset"] is None                 # default limit 50


def test_fact_list_text_says_how_to_see_more(seven: str) -> None:
    lines = run("fact", "list", "--limit", "3", "--db", seven).stdout.splitlines()
    assert len(lines) == 4 and lines[-1].startswith("-- facts 1-3 shown, more exist: --offset 3"), lines
    assert "--limit" in lines[-1]
    lines = run("fact", "list", "--limit", "3", "--offset", "3", "--db", seven).stdout.splitlines()
    assert len(lines) == 4 and "facts 4-6 shown" in lines[-1] and "--offset 6" in lines[-1], lines
    lines = run("fact", "list", "--limit", "7", "--db", seven).stdout.splitlines()
    assert len(lines) == 7 and not any(line.startswith("--") for line in lines), lines   # exactly the limit
    assert run("fact", "list", "--offset", "7", "--db", seven).stdout == "no facts past --offset 7\n"


def test_fact_list_text_says_when_there_are_none(seven: str, tmp_path: Path) -> None:
    """An empty list prints a line, as `memo list` and `memo entities list` do (not nothing)."""
    empty = str(tmp_path / "empty.db")
    js("add", "a note without facts", "--db", empty)
    assert run("fact", "list", "--db", empty).stdout == \
        "no live facts (--all lists the superseded and forgotten ones)\n"
    assert run("fact", "list", "--all", "--db", empty).stdout == "no facts\n"
    assert run("fact", "list", "--namespace", "elsewhere", "--db", seven).stdout == "no facts match these filters\n"
    assert js("fact", "list", "--db", empty) == {"facts": [], "count": 0, "next_offset": None}


def test_entities_list_json_pages_with_next_offset(seven: str) -> None:
    everything = js("entities", "list", "--db", seven)
    total = len(everything["entities"])
    assert total >= 7 and everything["next_offset"] is None
    assert {f"thing{w}" for w in WORDS} <= {e["key"] for e in everything["entities"]}
    keys = _pages(("entities", "list"), "entities", seven, 3)
    assert len(keys) == len(set(keys)) == total
    exact = js("entities", "list", "--limit", str(total), "--db", seven)            # exactly the limit
    assert len(exact["entities"]) == total and exact["next_offset"] is None
    rest = js("entities", "list", "--limit", str(total - 3), "--offset", "3", "--db", seven)
    assert len(rest["entities"]) == total - 3 and rest["next_offset"] is None
    assert [e["key"] for e in rest["entities"]] == [e["key"] for e in everything["entities"]][3:]


def test_entities_list_text_says_how_to_see_more(seven: str) -> None:
    total = len(js("entities", "list", "--db", seven)["entities"])
    lines = run("entities", "list", "--limit", "3", "--db", seven).stdout.splitlines()
    assert len(lines) == 4 and lines[-1].startswith("-- entities 1-3 shown, more exist: --offset 3"), lines
    lines = run("entities", "list", "--limit", str(total), "--db", seven).stdout.splitlines()
    assert len(lines) == total and not any(line.startswith("--") for line in lines), lines
    out = run("entities", "list", "--offset", str(total), "--db", seven).stdout
    assert out == f"no entities past --offset {total}\n"


@pytest.mark.parametrize("cmd", [("fact", "list"), ("entities", "list")])
@pytest.mark.parametrize("bad", [["--limit", "0"], ["--offset", "-1"], ["--limit", str(2**63)]])
def test_bad_limit_or_offset_is_a_validation_error(seven: str, cmd: tuple[str, ...], bad: list[str]) -> None:
    err = js(*cmd, *bad, "--db", seven, code=2)
    assert err["error"] == "ValidationError" and "limit must be" in err["message"], err
