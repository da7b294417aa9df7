"""What the CLI prints for people and the options it accepts: stored control characters
never reach the terminal, `memo list` says when more records exist, `memo profiles show`
keeps names and paths apart, `memo import` refuses nonsense sizes, `memo web --json`
prints where it listens (docs/cli-json.md)."""

from __future__ import annotations

import json
import os
import pty
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from memo.cli import app

runner = CliRunner()
HOSTILE = "invoice total \x1b[2J\x1b[H\x1b[8mhidden\x1b[0m and \x1b]0;pwned-title\x07 osc \x9b31m c1"
CONTROL = [chr(c) for c in (*range(0, 9), *range(11, 32), *range(0x7F, 0xA0))]


def run(*args: str, code: int = 0):
    res = runner.invoke(app, list(args))
    assert res.exit_code == code, (res.exit_code, res.stdout, res.stderr)
    return res


def js(*args: str, code: int = 0) -> dict:
    return json.loads(run(*args, "--json", code=code).stdout)


def _memo() -> list[str]:
    exe = Path(sys.executable).with_name("memo")
    return [str(exe)] if exe.exists() else [sys.executable, "-m", "memo"]


# --- issue 7: stored escape sequences --------------------------------------------------------
@pytest.fixture
def hostile_db(tmp_path: Path) -> tuple[str, str]:
    db = str(tmp_path / "hostile.db")
    rid = js("add", HOSTILE, "--title", "t\x1b]0;title\x07", "--db", db)["record_id"]
    return db, rid


def test_text_output_in_a_pipe_shows_control_characters(hostile_db: tuple[str, str]) -> None:
    db, rid = hostile_db
    for args in (["search", "invoice total", "--mode", "keyword"], ["get", rid], ["list"]):
        out = run(*args, "--db", db).stdout
        assert not [c for c in out if c in CONTROL], (args, out)
        assert "\\x1b" in out, (args, out)
    assert "\\x1b]0;pwned-title\\x07" in run("get", rid, "--db", db).stdout
    # --json is unchanged: the text as stored (JSON escapes it)
    assert js("get", rid, "--db", db)["body"] == HOSTILE


def test_text_output_on_a_terminal_shows_control_characters(hostile_db: tuple[str, str]) -> None:
    """A real process on a pseudo-terminal (the fast search path and typer's)."""
    db, rid = hostile_db
    for args in (["search", "invoice total", "--mode", "keyword"], ["get", rid]):
        leader, follower = pty.openpty()
        proc = subprocess.Popen([*_memo(), *args, "--db", db], stdin=subprocess.DEVNULL, stdout=follower,
                                stderr=subprocess.PIPE, env={**os.environ, "MEMO_MODELS": "/nonexistent"})
        os.close(follower)
        chunks = []
        while True:
            try:
                chunk = os.read(leader, 65536)
            except OSError:         # EIO: the process closed the terminal
                break
            if not chunk:
                break
            chunks.append(chunk)
        os.close(leader)
        assert proc.wait(timeout=120) == 0, proc.stderr.read() if proc.stderr else ""
        out = b"".join(chunks).decode("utf-8").replace("\r\n", "\n")
        assert "pwned-title" in out, out
        assert not [c for c in out if c in CONTROL], (args, out)


# --- issue 5: memo list says when more records exist -----------------------------------------
@pytest.fixture
def seven(tmp_path: Path) -> str:
    db = str(tmp_path / "seven.db")
    lines = tmp_path / "seven.jsonl"
    lines.write_text("".join(json.dumps({"text": f"note number {i}"}) + "\n" for i in range(7)))
    js("import", str(lines), "--no-embed", "--no-progress", "--db", db)
    return db


def test_list_json_pages_with_next_offset(seven: str) -> None:
    first = js("list", "--limit", "3", "--db", seven)
    assert first["count"] == 3 and first["next_offset"] == 3
    ids = [r["id"] for r in first["records"]]
    offset = first["next_offset"]
    while offset is not None:
        page = js("list", "--limit", "3", "--offset", str(offset), "--db", seven)
        ids += [r["id"] for r in page["records"]]
        offset = page["next_offset"]
    assert len(ids) == len(set(ids)) == 7
    exact = js("list", "--limit", "4", "--offset", "3", "--db", seven)      # exactly the rest: last page
    assert exact["count"] == 4 and exact["next_offset"] is None
    assert js("list", "--db", seven)["next_offset"] is None                  # default limit 50


def test_list_text_says_how_many_and_how_to_see_more(seven: str) -> None:
    lines = run("list", "--limit", "3", "--db", seven).stdout.splitlines()
    assert len(lines) == 4 and "--offset 3" in lines[-1] and "--limit" in lines[-1], lines
    assert len(run("list", "--db", seven).stdout.splitlines()) == 7        # all shown: no footer
    assert run("list", "--namespace", "elsewhere", "--db", seven).stdout == "no records match these filters\n"
    assert run("list", "--offset", "7", "--db", seven).stdout == "no records past --offset 7\n"


def test_list_on_a_database_without_live_records_says_so(tmp_path: Path) -> None:
    db = str(tmp_path / "one.db")
    rid = js("add", "soon forgotten", "--db", db)["record_id"]
    js("forget", rid, "--db", db)
    assert run("list", "--db", db).stdout.startswith("no live records")


# --- issue 6: profiles show ------------------------------------------------------------------
def test_profiles_show_keeps_long_names_apart_from_their_path() -> None:
    listed = js("profiles", "show")["profiles"]
    assert any(len(p["name"]) >= 12 for p in listed)        # tuned-scifact-zscore: the case that ran together
    lines = run("profiles", "show").stdout.splitlines()
    assert [line.split()[0] for line in lines] == [p["name"] for p in listed]
    assert [line.split()[1] for line in lines] == [p["source"] for p in listed]


def test_profiles_show_lists_the_valid_profiles_beside_an_invalid_file(tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """One broken TOML file in $MEMO_PROFILES_DIR was exit 2 and no list at all."""
    monkeypatch.setenv("MEMO_PROFILES_DIR", str(tmp_path))
    (tmp_path / "mine.toml").write_text('extends = "zscore"\n')
    (tmp_path / "broken.toml").write_text("this is = = not toml\n")
    doc = js("profiles", "show")
    names = [p["name"] for p in doc["profiles"]]
    assert "mine" in names and "zscore" in names and "broken" not in names
    assert [(b["name"], b["path"]) for b in doc["invalid"]] == [("broken", str(tmp_path / "broken.toml"))]
    assert "not valid TOML" in doc["invalid"][0]["error"]
    res = run("profiles", "show")
    assert [line.split()[0] for line in res.stdout.splitlines()] == names
    assert res.stderr.startswith("warning: profile broken is not usable: ") and str(tmp_path / "broken.toml") in \
        res.stderr and "not valid TOML" in res.stderr, res.stderr
    assert js("profiles", "show", "mine")["name"] == "mine"                 # a valid one still shows
    err = js("profiles", "show", "broken", code=2)                        # the invalid one: its error
    assert err["error"] == "ProfileError" and "not valid TOML" in err["message"]


# --- issue 4: import options -----------------------------------------------------------------
@pytest.mark.parametrize("option", [("--batch-size", "0"), ("--batch-size", "-1"), ("--max-bytes", "0"),
                                    ("--max-bytes", "-1"), ("--max-bytes", str(10**20))], ids=" ".join)
def test_import_refuses_nonsense_sizes(option: tuple[str, str], tmp_path: Path) -> None:
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "a.md").write_text("hello")
    db = tmp_path / "i.db"
    doc = js("import", str(folder), *option, "--no-embed", "--db", str(db), code=2)
    assert doc["error"] == "ValidationError" and option[0] in doc["message"], doc
    assert not db.exists()


# --- issue 8: memo web --json ----------------------------------------------------------------
def test_web_json_prints_where_it_listens(tmp_path: Path) -> None:
    """A script starts `memo web --port 0 --json` and reads the address from stdout: one
    JSON document, printed once the socket listens (the server then runs on)."""
    db = str(tmp_path / "w.db")
    js("add", "hello web", "--db", db)
    proc = subprocess.Popen([sys.executable, "-m", "memo", "web", "--port", "0", "--json", "--db", db],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        lines = []
        while True:
            line = proc.stdout.readline()
            assert line, proc.stderr.read()
            lines.append(line)
            if line.startswith("}"):
                break
        doc = json.loads("".join(lines))
        assert doc["host"] == "127.0.0.1" and doc["port"] > 0 and doc["pid"] == proc.pid
        assert doc["url"] == f"http://127.0.0.1:{doc['port']}/#token={doc['token']}"
    finally:
        proc.terminate()
        proc.wait(timeout=30)
