"""The same file in two versions of a library's docs is stored once per version
(memo.store.records.record_hash): the second import skipped it as a duplicate of the first,
so `--version 22` found nothing of a page that did not change between versions."""

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


def _origins(db: str, *scope: str) -> list[str]:
    out = json.loads(_run("search", "Buffer.alloc zero-filled", "--mode", "keyword", "--db", db, "--json", *scope))
    return [r["origin"] for r in out["results"]]


def test_an_unchanged_page_is_stored_for_each_version(tmp_path: Path):
    db = str(tmp_path / "m.db")
    for v in ("v20", "v22"):
        (tmp_path / v).mkdir()
        (tmp_path / v / "buffer.md").write_text("# Buffer\n\nBuffer.alloc(size) allocates a zero-filled buffer.\n")
    (tmp_path / "v22" / "fetch.md").write_text("# Fetch\n\nfetch() is stable.\n")
    first = json.loads(_run("import", str(tmp_path / "v20"), "--library", "node", "--version", "20",
                            "--db", db, "--no-embed", "--json"))
    second = json.loads(_run("import", str(tmp_path / "v22"), "--library", "node", "--version", "22",
                             "--db", db, "--no-embed", "--json"))
    assert (first["added"], second["added"], second["skipped"]) == (1, 2, 0)
    assert _origins(db, "--version", "22") == [(tmp_path / "v22" / "buffer.md").as_posix()]
    assert _origins(db, "--version", "20") == [(tmp_path / "v20" / "buffer.md").as_posix()]
    assert len(_origins(db)) == 2

    # the same version again: unchanged, skipped as before
    again = json.loads(_run("import", str(tmp_path / "v22"), "--library", "node", "--version", "22",
                            "--db", db, "--no-embed", "--json"))
    assert (again["added"], again["updated"], again["skipped"]) == (0, 0, 2)
    # without a library or version the text is the text: the same note twice is stored once
    _run("add", "the deploy key rotates weekly", "--db", db)
    dup = json.loads(_run("add", "the deploy key rotates weekly", "--db", db, "--json"))
    assert dup["status"] == "skipped"


def test_dropping_the_version_on_a_re_import_says_so(tmp_path: Path):
    db, v20 = str(tmp_path / "m.db"), tmp_path / "v20"
    v20.mkdir()
    (v20 / "buffer.md").write_text("# Buffer\n\nBuffer.alloc(size) allocates a zero-filled buffer.\n")
    _run("import", str(v20), "--library", "node", "--version", "20", "--db", db, "--no-embed")
    res = runner.invoke(app, ["import", str(v20), "--library", "node", "--db", db, "--no-embed"])
    assert res.exit_code == 0 and "updated 1" in res.stdout
    assert ("notice buffer.md: text unchanged, stored again as library node (was library node version 20); "
            "give --library/--version as before to keep them") in res.stderr


def test_a_record_keyed_by_its_text_alone_is_not_stored_again(tmp_path: Path):
    """A versioned record an older memo keyed by its text only: re-imported with the same
    library and version it is unchanged (skipped), not a new version of the same text."""
    import sqlite3

    from memo.store.records import content_hash

    db, v20 = str(tmp_path / "m.db"), tmp_path / "v20"
    v20.mkdir()
    body = "# Buffer\n\nBuffer.alloc(size) allocates a zero-filled buffer.\n"
    (v20 / "buffer.md").write_text(body)
    _run("import", str(v20), "--library", "node", "--version", "20", "--db", db, "--no-embed")
    raw = sqlite3.connect(db)
    raw.execute("UPDATE records SET content_hash = ?", (content_hash(body),))
    raw.commit()
    raw.close()
    again = json.loads(_run("import", str(v20), "--library", "node", "--version", "20", "--db", db,
                            "--no-embed", "--json"))
    assert (again["added"], again["updated"], again["skipped"]) == (0, 0, 1)


def test_results_say_their_library_and_version(tmp_path: Path):
    db = str(tmp_path / "m.db")
    for v in ("20", "22"):
        (tmp_path / v).mkdir()
        (tmp_path / v / "buffer.md").write_text("# Buffer\n\nBuffer.alloc(size) allocates a zero-filled buffer.\n")
        _run("import", str(tmp_path / v), "--library", "node", "--version", v, "--db", db, "--no-embed")
    _run("add", "Buffer.alloc zero-filled notes of mine", "--db", db)
    out = json.loads(_run("search", "Buffer.alloc zero-filled", "--mode", "keyword", "--db", db, "--json"))
    assert {(r["library"], r["version"]) for r in out["results"]} == {(None, None), ("node", "20"), ("node", "22")}
    text = _run("search", "Buffer.alloc zero-filled", "--mode", "keyword", "--db", db)
    assert "[doc/default · node 20]" in text and "[doc/default · node 22]" in text and "[note/default]" in text
