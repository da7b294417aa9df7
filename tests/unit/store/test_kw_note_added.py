"""``kw_postings.note_added`` writes its delta rows by one INSERT ... SELECT over a temp
FTS5 table of the writer's connection (issue 31.3): the rows and counts are those of
``tokenize_rows`` (the in-memory tokenizer the removals and the differential test use),
over writes of one row and of many, text with diacritics, CJK, empty columns, repeated
words, and after a rolled-back transaction took the temp tables away."""

from __future__ import annotations

import random

from memo.store import kw_postings
from memo.store.db import open_db
from memo.text.cjk import index_form

_WORDS = ["alpha", "Beta", "beta", "running", "runs", "café", "Cafe", "naïve", "日本語の", "テキスト", "x1", "ERR_X",
          "net/http", "the", "a", "", "  ", "über", "Ωmega", "1984", "co-op", "it's"]


def _rows(rng: random.Random, first: int, n: int) -> list[tuple[int, str, str]]:
    out = []
    for k in range(n):
        text = " ".join(rng.choice(_WORDS) for _ in range(rng.randint(0, 30)))
        section = " ".join(rng.choice(_WORDS) for _ in range(rng.randint(0, 4)))
        out.append((first + k, index_form(text), index_form(section)))
    return out


def _expected(conn, rows, seq):  # noqa: ANN001, ANN202
    toks = kw_postings.tokenize_rows(kw_postings.table_tokenizer(conn), rows)
    return ([(term, seq, pk, tf, sec, dl) for pk, (dl, terms) in toks.items() for term, (tf, sec) in terms.items()],
            sum(dl for dl, _ in toks.values()))


def test_note_added_rows_are_tokenize_rows(tmp_path):
    conn = open_db(tmp_path / "m.db")
    rng = random.Random(31)
    pk = 1
    for size in (1, 7, 1, 200, 3, 1):
        rows = _rows(rng, pk, size)
        pk += size
        before = dict(conn.execute("SELECT key, value FROM kw_meta").fetchall())
        conn.execute("BEGIN IMMEDIATE")
        kw_postings.note_added(conn, rows)
        conn.execute("COMMIT")
        after = dict(conn.execute("SELECT key, value FROM kw_meta").fetchall())
        seq = after["seq"]
        want, tokens = _expected(conn, rows, seq)
        got = [tuple(r) for r in conn.execute("SELECT term, seq, pk, tf, sec, dl FROM kw_delta WHERE seq = ?"
                                              " ORDER BY term, pk", (seq,))]
        assert got == sorted(want)
        assert after["rows"] - before["rows"] == size
        assert after["tokens"] - before["tokens"] == tokens
        assert after["delta"] - before["delta"] == len(want)
        # the temp tables are left empty for the next write
        assert conn.execute("SELECT count(*) FROM temp.memo_kw_tok_dl").fetchone()[0] == 0
        assert conn.execute("SELECT count(*) FROM temp.memo_kw_tok_docsize").fetchone()[0] == 0


def test_note_added_after_a_rollback_took_the_temp_tables(tmp_path):
    conn = open_db(tmp_path / "m.db")
    rng = random.Random(7)
    conn.execute("BEGIN IMMEDIATE")
    kw_postings.note_added(conn, _rows(rng, 1, 5))      # creates the temp tables in this transaction
    conn.execute("ROLLBACK")                           # ... and this takes them away again
    assert conn.execute("SELECT count(*) FROM kw_delta").fetchone()[0] == 0
    rows = _rows(rng, 1, 5)
    conn.execute("BEGIN IMMEDIATE")
    kw_postings.note_added(conn, rows)
    conn.execute("COMMIT")
    seq = conn.execute("SELECT value FROM kw_meta WHERE key = 'seq'").fetchone()[0]
    want, _ = _expected(conn, rows, seq)
    assert [tuple(r) for r in conn.execute("SELECT term, seq, pk, tf, sec, dl FROM kw_delta ORDER BY term, pk")] \
        == sorted(want)
