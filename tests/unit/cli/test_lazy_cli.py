"""The lazy root of ``memo`` (memo/cli/__init__.py, issue 31.2): the command table names
exactly what each module registers, and a fresh ``memo search --mode keyword`` process,
served by the persistent postings, imports the search skin only: not the other command
modules, numpy, onnxruntime, prometheus_client, pydantic (typer's coercion), rich's
progress bars or the markdown parser; nor typer (memo.cli.fast_search reads the line)."""

from __future__ import annotations

import importlib
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import typer.main
from typer.testing import CliRunner

import memo.cli
from memo.cli import COMMAND_MODULES, app, plugins
from memo.cli.common import memo_typer
from memo.store.connect import write_tx
from memo.store.db import open_db
from memo.store.records import insert_record
from memo.stored import PassageDraft, RecordDraft

CLI_DIR = Path(memo.cli.__file__).parent

# Runs `memo ARGS` in this interpreter, then writes the modules it imported and the
# keyword arm's path counters to the file named by MEMO_TEST_MODULES.
HARNESS = """
import atexit, json, os, sys
def _dump():
    stats = sys.modules.get("memo.retrieve.impact")
    with open(os.environ["MEMO_TEST_MODULES"], "w") as out:
        json.dump({"modules": sorted(sys.modules), "stats": dict(stats.STATS) if stats else {}}, out)
atexit.register(_dump)
sys.argv = ["memo", *sys.argv[1:]]
from memo.cli import main
main()
"""

HEAVY = ("typer", "numpy", "onnxruntime", "tokenizers", "prometheus_client", "pydantic", "scipy", "markdown_it",
         "rich.progress", "starlette", "uvicorn", "mcp", "http.server", "memo.ops", "memo.ingest", "memo.embed.service",
         # stdlib modules that one rare use each used to bring into every search (issue 31.2):
         # hashlib (a PostgreSQL index name), secrets (a write's random step), logging (a
         # repair's warning), importlib.resources (the shipped profiles' folder)
         "hashlib", "secrets", "hmac", "logging", "importlib.resources")


def test_the_table_names_what_each_module_registers() -> None:
    modules = {p.stem for p in CLI_DIR.glob("*_cmds.py")}
    assert set(COMMAND_MODULES.values()) == modules
    for module in modules:
        sub = memo_typer()
        importlib.import_module(f"memo.cli.{module}").register(sub)
        names = set(typer.main.get_group(sub).commands)
        assert names == {n for n, m in COMMAND_MODULES.items() if m == module}, module
    assert not set(COMMAND_MODULES) & set(plugins.SLOTS)


def test_help_lists_every_command_in_table_order() -> None:
    out = CliRunner().invoke(app, ["--help"], terminal_width=200).stdout
    panel = out[out.index("Commands"):]
    listed = [m.group(1) for line in panel.splitlines() if (m := re.match(r"│ (\S+) ", line))]
    assert listed == [*COMMAND_MODULES, *plugins.SLOTS]


def test_a_cold_keyword_search_imports_the_search_skin_only(tmp_path: Path) -> None:
    db = tmp_path / "memo.db"
    conn = open_db(db)
    with write_tx(conn):
        for i in range(40):
            insert_record(conn, RecordDraft(body=f"record {i}", id=f"r{i}"),
                          (PassageDraft(text=f"gene w{i % 7} cells binding {'protein ' * (i % 3)}"),))
    conn.close()
    # From the first passage on the postings answer (base.toml: from 20,000), as at 100k.
    profile = tmp_path / "small.toml"
    profile.write_text('extends = "zscore"\n\n[index]\nimpact_min_passages = 1\n')
    dump = tmp_path / "modules.json"
    env = dict(os.environ, MEMO_DB=str(db), MEMO_TEST_MODULES=str(dump))
    res = subprocess.run([sys.executable, "-c", HARNESS, "search", "w3 gene", "--mode", "keyword", "--json",
                          "--profile", str(profile)], env=env, capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout)["results"], res.stdout
    seen = json.loads(dump.read_text())
    assert seen["stats"].get("postings") == 1, seen["stats"]       # the persistent postings answered
    modules = set(seen["modules"])
    loaded = sorted(m for m in modules for heavy in HEAVY if m == heavy or m.startswith(heavy + "."))
    assert not loaded, loaded
    others = {f"memo.cli.{m}" for m in COMMAND_MODULES.values()} - {"memo.cli.search_cmds"}
    assert not modules & others, sorted(modules & others)
