"""The tester's session, importing code folders: a renamed file was skipped as a duplicate
of its old record, which kept naming the deleted path (and, for code, the old module) in
every result; a file emptied on disk kept its old text searchable even with --prune, and
nothing said so.  Now the record follows the file (memo.ops.file_moves) and an emptied
file's record is reported, and forgotten with --prune (memo.ops.import_missing)."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from memo.cli import app

runner = CliRunner()
CODE = 'def shared_helper():\n    """Shared pelican helper."""\n    return 42\n'


def _run(*args: str) -> tuple[str, str]:
    res = runner.invoke(app, list(args))
    assert res.exit_code == 0, (res.stdout, res.stderr)
    return res.stdout, res.stderr


def _origins(db: str, query: str) -> list[tuple[str, str]]:
    out = json.loads(_run("search", query, "--mode", "keyword", "--db", db, "--json")[0])
    return [(r["origin"], r["section"]) for r in out["results"]]


def test_a_renamed_file_moves_its_record_and_an_emptied_one_is_reported(tmp_path: Path):
    db, proj = str(tmp_path / "x.db"), tmp_path / "proj"
    (proj / "sub").mkdir(parents=True)
    (proj / "pkg").mkdir()
    (proj / "server.go").write_text('package srv\n\n// Serve answers ostrich requests.\nfunc Serve() {\n'
                                    '\tprintln("ostrich server")\n}\n')
    (proj / "sub" / "ledger.md").write_text("# Ledger\n\nThe ostrich ledger lists feathers.\n")
    (proj / "pkg" / "__init__.py").write_text("")
    out, err = _run("import", str(proj), "--db", db, "--no-embed", "--no-progress")
    assert "added 2, updated 0, skipped 0" in out and "notice" not in err      # the empty __init__.py: ignored only
    (proj / "server.go").rename(proj / "srv.go")
    out, err = _run("import", str(proj), "--db", db, "--no-embed", "--no-progress")
    assert "added 0, updated 1, skipped 1" in out and "gone" not in out
    assert "notice srv.go: moved from server.go" in err
    origins = {o for o, _ in _origins(db, "ostrich server")}
    assert (proj / "srv.go").as_posix() in origins and (proj / "server.go").as_posix() not in origins

    (proj / "sub" / "ledger.md").write_text("")
    out, err = _run("import", str(proj), "--db", db, "--no-embed", "--no-progress")
    assert "1 imported file is now empty in" in out and "  now empty sub/ledger.md" in out
    assert "notice sub/ledger.md: now empty: record " in err and "`memo import --prune` forgets it" in err
    assert (proj / "sub" / "ledger.md").as_posix() in {o for o, _ in _origins(db, "ostrich ledger")}
    rep = json.loads(_run("import", str(proj), "--prune", "--db", db, "--no-embed", "--json")[0])
    assert (rep["missing"], rep["emptied"], rep["pruned"]) == (["sub/ledger.md"], ["sub/ledger.md"], 1)
    assert (proj / "sub" / "ledger.md").as_posix() not in {o for o, _ in _origins(db, "ostrich ledger")}
    out, err = _run("import", str(proj), "--prune", "--db", db, "--no-embed", "--no-progress")
    assert "now empty" not in out + err                                       # forgotten: nothing more to say


def test_prune_after_deleting_one_of_two_identical_files(tmp_path: Path):
    db, dup = str(tmp_path / "x.db"), tmp_path / "dup"
    for sub in ("a", "b"):
        (dup / sub).mkdir(parents=True)
        (dup / sub / "x.py").write_text(CODE)
    out, _ = _run("import", str(dup), "--db", db, "--no-embed", "--no-progress")
    assert "added 1, updated 0, skipped 1" in out
    (dup / "a" / "x.py").unlink()
    out, err = _run("import", str(dup), "--prune", "--db", db, "--no-embed", "--no-progress")
    assert "added 0, updated 1, skipped 0" in out and "gone" not in out and "forgot" not in out
    assert "notice b/x.py: moved from a/x.py" in err
    assert _origins(db, "pelican helper") == [((dup / "b" / "x.py").as_posix(), "b.x.shared_helper")]
