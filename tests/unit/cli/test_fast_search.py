"""memo.cli.fast_search: ``memo search`` read without typer gives the command what typer gives
it, or leaves the line to typer; a real process prints the same bytes either way."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any
from unittest import mock

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

import memo.cli.search_cmds as search_cmds
from memo.cli import app, fast_search
from memo.cli.options import SEARCH_OPTIONS

ENVS = ({}, {"MEMO_DB": "env.db"}, {"MEMO_DB": "", "MEMO_PROFILE": "rrf"}, {"MEMO_PROFILE": ""})


def typer_kwargs(args: list[str], env: dict[str, str]) -> dict[str, Any] | None:
    """What typer passes to the search command for ``memo search ARGS`` (None: it refused)."""
    got: dict[str, Any] = {}

    def record(query: str, **kwargs: Any) -> None:
        got.update(kwargs, query=query)

    clean = {k: None for k in ("MEMO_DB", "MEMO_PROFILE")} | env
    with mock.patch.object(search_cmds, "run_search", record):
        res = CliRunner().invoke(app, ["search", *args], env=clean)
    return got if res.exit_code == 0 and got else None


def fast_kwargs(args: list[str], env: dict[str, str]) -> dict[str, Any] | None:
    with mock.patch.dict(os.environ, env):
        for name in ("MEMO_DB", "MEMO_PROFILE"):
            if name not in env:
                os.environ.pop(name, None)
        return fast_search.parse(args)


READ = [
    ["restore the backup"],
    ["restore", "--mode", "keyword", "--json"],
    ["--json", "restore", "--limit", "3", "--max-tokens", "120"],
    ["q", "-n", "work", "--namespace", "home", "-k", "doc", "-t", "adr", "--tag", "ops"],
    ["q", "--min-trust", "0.5", "--from", "2026-01-01", "--to", "2026-02-01", "--as-of", "2026-03-01T00:00:00"],
    ["q", "--now", "2026-12-05", "--source", "cli", "--library", "numpy", "--version", "2.0", "--explain"],
    ["q", "--db", "postgresql://u@h/db", "--profile", "rrf", "--limit", "007"],
    ["q", "--min-trust", ".5"],
    ["", "--json"],
    ["ünïcödé 検索", "--mode", "semantic"],
    ["q", "--json", "--json", "--explain", "--explain"],
    ["q", "--why"],                  # the README's word for it (a tester typed it)
]
TO_TYPER = [
    [], ["--json"], ["--help"], ["q", "--help"], ["-h"], ["q", "--limit", "-1"], ["q", "--limit", "1e3"],
    ["q", "--limit", " 3"], ["q", "--limit", "+3"], ["q", "--min-trust", "5e-1"], ["q", "--min-trust", "nan"],
    ["q", "--mode=keyword"], ["q", "--json=1"], ["q", "--", "--json"], ["-x"], ["q", "-"], ["q", "r"],
    ["q", "--mode", "keyword", "--mode", "semantic"], ["q", "--limit"], ["q", "-nwork"], ["q", "--nam", "x"],
    ["-5"], ["q", "--namespace", "-x"], ["q", "--limit", "٣"],
]


@pytest.mark.parametrize("env", ENVS, ids=lambda e: ",".join(f"{k}={v}" for k, v in e.items()) or "no-env")
@pytest.mark.parametrize("args", READ, ids=" ".join)
def test_a_line_it_reads_gives_what_typer_gives(args: list[str], env: dict[str, str]) -> None:
    fast = fast_kwargs(args, env)
    assert fast is not None, args
    assert fast == typer_kwargs(args, env)


@pytest.mark.parametrize("args", TO_TYPER, ids=lambda a: " ".join(a) or "nothing")
def test_every_other_line_is_typers(args: list[str]) -> None:
    assert fast_kwargs(args, {}) is None


_FLAGS = [f for o in SEARCH_OPTIONS for f in o.flags]
_WORD = st.one_of(st.sampled_from(_FLAGS), st.sampled_from(["3", "0", "0.25", ".5", "1e2", "-1", "--", "-", "=", ""]),
                  st.text(alphabet="ab-=.5 é", max_size=6), st.sampled_from(["--mode=keyword", "--json=1", "-nx"]))


@settings(max_examples=300, deadline=None)
@given(st.lists(_WORD, max_size=7), st.sampled_from(ENVS))
def test_any_line_it_reads_gives_what_typer_gives(args: list[str], env: dict[str, str]) -> None:
    fast = fast_kwargs(args, env)
    if fast is not None:
        assert fast == typer_kwargs(args, env), args


# --- real processes: the same bytes, the same exit code -------------------------------------
_TIMES = re.compile(r"[0-9.]+ ms$", re.M)


def untimed(out: bytes) -> object:
    """stdout without the times a search measures (``*_ms`` keys, the footer's ms)."""
    text = out.decode()
    try:
        doc = json.loads(text)
    except ValueError:
        return _TIMES.sub("", text)

    def drop(v: object) -> object:
        if isinstance(v, dict):
            return {k: drop(x) for k, x in v.items() if not k.endswith("_ms")}
        return [drop(x) for x in v] if isinstance(v, list) else v
    return drop(doc)


def memo(args: list[str | bytes], db: Path, typer_only: bool) -> subprocess.CompletedProcess:
    env = {**os.environ, "MEMO_DB": str(db)}
    env.pop(fast_search.FORCE_TYPER_ENV, None)
    if typer_only:
        env[fast_search.FORCE_TYPER_ENV] = "1"
    return subprocess.run([sys.executable, "-m", "memo", *args], capture_output=True, env=env, timeout=120)


@pytest.fixture(scope="module")
def notes_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    db = tmp_path_factory.mktemp("fast") / "memo.db"
    for text in ("The staging deploy key rotates every 30 days", "Backups run nightly from cron at 02:00"):
        added = subprocess.run([sys.executable, "-m", "memo", "add", text, "--db", str(db), "--tag", "ops", "--json"],
                               capture_output=True, timeout=120)
        assert added.returncode == 0, added.stderr.decode()[-2000:]
    return db


@pytest.mark.parametrize("args", [
    ["search", "deploy key", "--mode", "keyword", "--explain"],
    ["search", "deploy key", "--mode", "keyword", "--json", "-t", "ops"],
    ["search", "nothing like this", "--mode", "keyword"],
    ["search", "deploy", "--mode", "sideways", "--json"],                 # the library's ValidationError
    ["search", "deploy", "--mode", "keyword", "--db", "/proc/no/such.db"],  # the path's error, exit 2
    [b"search", b"deploy \xff key", b"--mode", b"keyword", b"--json"],    # argv that is not UTF-8
    ["search", "deploy", "--limit", "0", "--mode", "keyword"],
], ids=lambda a: " ".join(x if isinstance(x, str) else x.decode(errors="replace") for x in a))
def test_a_real_process_prints_the_same_either_way(args: list[str | bytes], notes_db: Path) -> None:
    args = [*args, "--now", "2026-12-05T00:00:00"]     # recency reads the clock otherwise
    fast, slow = memo(args, notes_db, False), memo(args, notes_db, True)
    assert fast.returncode == slow.returncode, (fast.stderr, slow.stderr)
    assert untimed(fast.stdout) == untimed(slow.stdout)
    assert fast.stderr == slow.stderr
    if b"--json" in [a if isinstance(a, bytes) else a.encode() for a in args]:
        json.loads(fast.stdout)


def test_the_fast_path_imports_no_typer(notes_db: Path) -> None:
    code = ("import sys, runpy; sys.argv = ['memo', 'search', 'deploy', '--mode', 'keyword', '--json'];"
            "import atexit; atexit.register(lambda: print(sorted(m for m in sys.modules if m.split('.')[0] in "
            "('typer', 'click')), file=sys.stderr)); from memo.cli import main; main()")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                         env={**os.environ, "MEMO_DB": str(notes_db)})
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout)["results"]
    assert res.stderr.strip().splitlines()[-1] == "[]", res.stderr
