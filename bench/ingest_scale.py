"""Index-only import at scale (issue 16.4): passages/s of ``memo import --no-embed`` next
to a floor measured in the same run on the same rows.

    nice -n 5 .venv/bin/python bench/ingest_scale.py [--n 20000 100000] [--json] [--keep DIR]

* input:  a JSONL file of ``n`` synthetic records made of SciFact sentences (seeded,
          reproducible: ``--seed``; datasets/scifact/corpus.jsonl.gz), each
          ``{"id", "title", "text"}`` with 2-7 sentences, so one passage per record
          (under the 200-word window); the title is the passage's section.
* memo:   ``memo.ops.import_path`` into a fresh database, as ``memo import --no-embed``
          runs it (batches of ``--batch`` records per BEGIN IMMEDIATE, synchronous=FULL).
          ``--cli`` also times the command line end to end (process start included).
* floor:  the same rows with no memo logic: one plain ``records`` table and one
          ``passages`` table, an external-content FTS5 table with memo's tokenizer and an
          ``ascii`` FTS5 table for the exact arm's terms, filled by ``executemany`` in
          transactions of the same batch size, same PRAGMAs (WAL, synchronous=FULL).
          Its rows are what memo stores (passage text, section, exact terms computed
          before the clock starts), so the ratio is memo's cost over SQLite's own.
* ``--rows-floor``: a second floor, ``floor_rows``: every row memo's import stored (records,
          tags, passages, both FTS5 tables, entities, aliases, mentions, the keyword
          postings' delta rows ``kw_delta``, one per word of a passage, or the base ``kw_base``
          a bulk import builds at its end instead: read back from the
          memo run's database before the clock starts) inserted by plain ``executemany``
          into a fresh database with memo's own schema and connection (its indexes, foreign
          keys, PRAGMAs), batch by batch as memo's batches hold them.  The bare floor above
          writes two plain tables and two FTS5 tables; this one is SQLite's cost of memo's
          schema, so ``rows_ratio_floor_over_memo`` is the cost of memo's logic alone
          (parsing, checks, splitting, entity extraction, exact terms) over its writes.
* ``--workers N``: memo's import workers (``ImportOptions.workers``; default memo's own choice:
          one worker process per core after the first for 5,000 records or more).
* ``--entities`` (needs ``--workers 0``): memo once more with entity extraction switched off for the bench only
          (``memo.store.records.record_mentions`` returns no mention, so no mention row
          is written): ``entity_share`` = 1 - (best without) / (best with), wall and CPU
          (issue 29.5: at most 0.2).  ``entity_direct_share``: the time spent inside
          ``record_mentions`` and ``write_passage_mentions`` during the best memo run
          (timed directly) over that run.
* ``--memo-path DIR``: import memo from DIR instead of this checkout (an archive of an
          older commit: before and after timed by the same script, same run).
The machine is shared: the two runs alternate (floor, memo, floor, memo...) and each
reports its best; the ratio is floor seconds / memo seconds, for wall time and for the
CPU time of this process and its ended children (memo's import workers; user + system,
``resource.getrusage``), which a loaded machine
inflates far less than wall time.
"""

from __future__ import annotations

import argparse
import contextlib
import gzip
import json
import os
import random
import re
import resource
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _memo_path() -> str:
    """``--memo-path DIR`` (read before memo is imported), else this checkout."""
    for k, arg in enumerate(sys.argv):
        if arg == "--memo-path" and k + 1 < len(sys.argv):
            return sys.argv[k + 1]
        if arg.startswith("--memo-path="):
            return arg.split("=", 1)[1]
    return str(ROOT)


sys.path.insert(0, _memo_path())

import memo.store.records as records_mod  # noqa: E402
from memo.ops.importer import DEFAULT_BATCH, ImportOptions, import_path  # noqa: E402
from memo.store.db import open_db  # noqa: E402
from memo.text.identifiers import exact_terms  # noqa: E402

DATA = ROOT / "datasets" / "scifact" / "corpus.jsonl.gz"
_SENT = re.compile(r"(?<=[.!?])\s+(?=[A-Z])")


def sentences(data: Path = DATA) -> tuple[list[str], list[str]]:
    """SciFact abstract sentences and titles, in file order."""
    sents: list[str] = []
    titles: list[str] = []
    with gzip.open(data, "rt", encoding="utf-8") as fh:
        for line in fh:
            doc = json.loads(line)
            titles.append(doc["title"].strip())
            sents.extend(s.strip() for s in _SENT.split(doc["text"]) if 4 <= len(s.split()) <= 45)
    return sents, titles


def build_input(path: Path, n: int, seed: int = 16) -> Path:
    """``n`` JSONL records of 2-7 random SciFact sentences (<= 200 words: one passage)."""
    sents, titles = sentences()
    rng = random.Random(seed)
    with path.open("w", encoding="utf-8") as out:
        for i in range(n):
            body: list[str] = []
            words = 0
            for s in rng.sample(sents, rng.randint(2, 7)):
                w = len(s.split())
                if words + w > 180:
                    break
                body.append(s)
                words += w
            out.write(json.dumps({"id": f"d{i}", "title": rng.choice(titles), "text": " ".join(body)}) + "\n")
    return path


def _rows(path: Path) -> list[tuple[str, str, str, str]]:
    """(id, title, text, exact terms) per line: what the floor inserts."""
    out = []
    with path.open(encoding="utf-8") as fh:
        for line in fh:
            d = json.loads(line)
            out.append((d["id"], d["title"], d["text"], exact_terms(d["title"] + "\n" + d["text"])))
    return out


FLOOR_DDL = """
PRAGMA journal_mode=WAL;
PRAGMA synchronous=FULL;
CREATE TABLE records (id TEXT PRIMARY KEY, body TEXT NOT NULL);
CREATE TABLE passages (pk INTEGER PRIMARY KEY, record_id TEXT NOT NULL, section TEXT NOT NULL, text TEXT NOT NULL);
CREATE VIRTUAL TABLE passages_fts USING fts5(text, section, content='passages', content_rowid='pk',
    tokenize='porter unicode61 remove_diacritics 2');
CREATE VIRTUAL TABLE exact_fts USING fts5(terms, tokenize='ascii');
"""


def _cpu() -> float:
    """CPU seconds of this process and of its children that ended (memo's import workers:
    the pool is shut down before the import returns)."""
    return sum(ru.ru_utime + ru.ru_stime for ru in (resource.getrusage(resource.RUSAGE_SELF),
                                                   resource.getrusage(resource.RUSAGE_CHILDREN)))


def floor_run(rows: list[tuple[str, str, str, str]], db: Path, batch: int) -> tuple[float, float]:
    conn = sqlite3.connect(db, isolation_level=None)
    conn.executescript(FLOOR_DDL)
    c0, t0 = _cpu(), time.perf_counter()
    for s in range(0, len(rows), batch):
        chunk = rows[s:s + batch]
        base = s + 1
        conn.execute("BEGIN IMMEDIATE")
        conn.executemany("INSERT INTO records VALUES (?, ?)", [(r[0], r[2]) for r in chunk])
        conn.executemany("INSERT INTO passages VALUES (?, ?, ?, ?)",
                         [(base + k, r[0], r[1], r[2]) for k, r in enumerate(chunk)])
        conn.executemany("INSERT INTO passages_fts(rowid, text, section) VALUES (?, ?, ?)",
                         [(base + k, r[2], r[1]) for k, r in enumerate(chunk)])
        conn.executemany("INSERT INTO exact_fts(rowid, terms) VALUES (?, ?)",
                         [(base + k, r[3]) for k, r in enumerate(chunk)])
        conn.execute("COMMIT")
    secs, cpu = time.perf_counter() - t0, _cpu() - c0
    conn.close()
    return secs, cpu


def stored_rows(db: Path, batch: int) -> list[dict[str, list[tuple]]]:
    """The rows a memo import stored, per import batch of ``batch`` records (records in
    rowid order; their passages; the FTS5 rows of those passages; the entities their
    mentions name first, with their aliases; the mentions), for ``rows_floor_run``."""
    from memo.text.cjk import index_form

    conn = open_db(db)
    records = [tuple(r) for r in conn.execute("SELECT rowid, * FROM records ORDER BY rowid")]
    cols = [d[0] for d in conn.execute("SELECT * FROM records LIMIT 0").description]
    tags: dict[str, list[tuple]] = {}
    for r in conn.execute("SELECT record_id, tag FROM record_tags"):
        tags.setdefault(r[0], []).append(tuple(r))
    passages: dict[str, list[tuple]] = {}
    pcols = [d[0] for d in conn.execute("SELECT * FROM passages LIMIT 0").description]
    for r in conn.execute("SELECT * FROM passages ORDER BY pk"):
        passages.setdefault(r["record_id"], []).append(tuple(r))
    exact = dict(conn.execute("SELECT rowid, terms FROM exact_fts").fetchall())
    mentions: dict[int, list[tuple]] = {}
    for r in conn.execute("SELECT passage_pk, entity_pk, count, fact_pk FROM mentions ORDER BY seq"):
        mentions.setdefault(r[0], []).append(tuple(r))
    entities = {r[0]: tuple(r) for r in conn.execute("SELECT pk, key, name, kind FROM entities")}
    aliases: dict[int, list[tuple]] = {}
    for r in conn.execute("SELECT alias, entity_pk FROM entity_aliases"):
        aliases.setdefault(r[1], []).append(tuple(r))
    delta: dict[int, list[tuple]] = {}
    base: list[tuple] = []
    if conn.execute("SELECT 1 FROM sqlite_schema WHERE name = 'kw_delta'").fetchone():
        for r in conn.execute("SELECT term, seq, pk, tf, sec, dl FROM kw_delta"):
            delta.setdefault(r[2], []).append(tuple(r))
        if not delta:   # a bulk import writes no delta and builds the base at its end (kw_postings.end_bulk)
            base = [tuple(r) for r in conn.execute("SELECT term, df, codes, pks, tfs, secs, dls FROM kw_base ORDER BY term")]
    conn.close()
    out, seen = [], set()
    ti, si = pcols.index("text"), pcols.index("section")
    for s in range(0, len(records), batch):
        chunk = records[s:s + batch]
        ps = [p for r in chunk for p in passages.get(r[1 + cols.index("id")], [])]
        ms = [m for p in ps for m in mentions.get(p[0], [])]
        new = [e for e in dict.fromkeys(m[1] for m in ms) if e not in seen]
        seen.update(new)
        out.append({"records": [r[1:] for r in chunk], "tags": [t for r in chunk for t in tags.get(r[1], [])],
                    "passages": ps, "fts": [(p[0], index_form(p[ti]), index_form(p[si])) for p in ps],
                    "exact": [(p[0], exact[p[0]]) for p in ps], "entities": [entities[e] for e in sorted(new)],
                    "aliases": [a for e in sorted(new) for a in aliases.get(e, [])], "mentions": ms,
                    "kw_delta": sorted(d for p in ps for d in delta.get(p[0], [])),   # key order: cheapest
                    "cols": cols, "pcols": pcols, "kw_base": []})
    if out:
        out[-1]["kw_base"] = base
    return out


def rows_floor_run(batches: list[dict[str, list[tuple]]], db: Path) -> tuple[float, float]:
    """Insert ``stored_rows`` into a fresh memo database by plain executemany."""
    conn = open_db(db)
    cols, pcols = batches[0]["cols"], batches[0]["pcols"]
    ins_r = f"INSERT INTO records ({','.join(cols)}) VALUES ({','.join('?' * len(cols))})"
    ins_p = f"INSERT INTO passages ({','.join(pcols)}) VALUES ({','.join('?' * len(pcols))})"
    c0, t0 = _cpu(), time.perf_counter()
    for b in batches:
        conn.execute("BEGIN IMMEDIATE")
        conn.executemany(ins_r, b["records"])
        conn.executemany("INSERT INTO record_tags(record_id, tag) VALUES (?, ?)", b["tags"])
        conn.executemany(ins_p, b["passages"])
        conn.executemany("INSERT INTO passages_fts(rowid, text, section) VALUES (?, ?, ?)", b["fts"])
        conn.executemany("INSERT INTO exact_fts(rowid, terms) VALUES (?, ?)", b["exact"])
        conn.executemany("INSERT INTO entities(pk, key, name, kind) VALUES (?, ?, ?, ?)", b["entities"])
        conn.executemany("INSERT INTO entity_aliases(alias, entity_pk) VALUES (?, ?)", b["aliases"])
        conn.executemany("INSERT INTO mentions(passage_pk, entity_pk, count, fact_pk) VALUES (?, ?, ?, ?)",
                         b["mentions"])
        if b["kw_delta"]:
            conn.executemany("INSERT INTO kw_delta(term, seq, pk, tf, sec, dl) VALUES (?, ?, ?, ?, ?, ?)",
                             b["kw_delta"])
        conn.execute("COMMIT")
        if b["kw_base"]:      # after the last batch, in a transaction of its own, as memo writes it
            conn.execute("BEGIN IMMEDIATE")
            conn.execute("DELETE FROM kw_base")
            conn.executemany("INSERT INTO kw_base(term, df, codes, pks, tfs, secs, dls) VALUES (?, ?, ?, ?, ?, ?, ?)",
                             b["kw_base"])
            conn.execute("COMMIT")
    secs, cpu = time.perf_counter() - t0, _cpu() - c0
    conn.close()
    return secs, cpu


@contextlib.contextmanager
def entities(mode: str, spent: list[float]):
    """``mode`` "off": no passage mentions anything (extraction and mention writes skipped);
    "timed": the time spent extracting and writing mentions is added to ``spent``."""
    names = ("record_mentions", "write_passage_mentions")
    real = {n: getattr(records_mod, n) for n in names}

    def timed(fn):  # noqa: ANN001, ANN202
        def wrapper(*a, **k):  # noqa: ANN002, ANN003, ANN202
            t0 = time.perf_counter()
            try:
                return fn(*a, **k)
            finally:
                spent.append(time.perf_counter() - t0)
        return wrapper

    if mode == "off":
        records_mod.record_mentions = lambda kind, title, passages, explicit=(): [[] for _ in passages]
    else:
        for n in names:
            setattr(records_mod, n, timed(real[n]))
    try:
        yield
    finally:
        for n in names:
            setattr(records_mod, n, real[n])


def memo_run(src: Path, db: Path, batch: int, mode: str = "timed",
             spent: list[float] | None = None, workers: int | None = None) -> tuple[float, float, int]:
    conn = open_db(db)
    c0, t0 = _cpu(), time.perf_counter()
    with entities(mode, spent if spent is not None else []):
        # workers only when given: an older commit's ImportOptions (``--memo-path``) has no such field
        extra = {} if workers is None else {"workers": workers}
        rep = import_path(conn, src, ImportOptions(namespace="bench", batch_size=batch, **extra))
    secs, cpu = time.perf_counter() - t0, _cpu() - c0
    conn.close()
    assert not rep.rejected, rep.rejected[:3]
    return secs, cpu, rep.passages


def cli_run(src: Path, db: Path, batch: int) -> float:
    t0 = time.perf_counter()
    subprocess.run([str(ROOT / ".venv" / "bin" / "memo"), "import", str(src), "--no-embed", "--no-progress",
                    "--json", "--namespace", "bench", "--batch-size", str(batch), "--db", str(db)],
                   check=True, capture_output=True)
    return time.perf_counter() - t0


def measure(n: int, work: Path, *, rounds: int, batch: int, seed: int, cli: bool,
            with_entities: bool = False, rows_floor: bool = False, workers: int | None = None) -> dict[str, object]:
    src = build_input(work / f"in{n}.jsonl", n, seed)
    rows = _rows(src)
    floors, memos, clis = [], [], []
    floor_cpu, memo_cpu = [], []
    spent, offs, off_cpu = [], [], []
    rfloors, rfloor_cpu = [], []
    stored = None
    passages = 0
    for r in range(rounds):
        secs, cpu = floor_run(rows, work / f"floor{n}-{r}.db", batch)
        floors.append(secs)
        floor_cpu.append(cpu)
        got: list[float] = []
        secs, cpu, passages = memo_run(src, work / f"memo{n}-{r}.db", batch, "timed", got, workers)
        memos.append(secs)
        memo_cpu.append(cpu)
        spent.append(sum(got))
        if rows_floor:
            if stored is None:
                stored = stored_rows(work / f"memo{n}-{r}.db", batch)
            secs, cpu = rows_floor_run(stored, work / f"rows{n}-{r}.db")
            rfloors.append(secs)
            rfloor_cpu.append(cpu)
        if with_entities:
            secs, cpu, _ = memo_run(src, work / f"off{n}-{r}.db", batch, "off", workers=workers)
            offs.append(secs)
            off_cpu.append(cpu)
        if cli:
            clis.append(cli_run(src, work / f"cli{n}-{r}.db", batch))
        for f in work.glob(f"*{n}-{r}.db*"):
            f.unlink()
    out: dict[str, object] = {
        "records": n, "passages": passages, "batch": batch, "memo": str(Path(records_mod.__file__).parents[2]),
        "floor_per_s": round(passages / min(floors)), "memo_per_s": round(passages / min(memos)),
        "ratio_floor_over_memo": round(min(floors) / min(memos), 3),
        "floor_cpu_per_s": round(passages / min(floor_cpu)), "memo_cpu_per_s": round(passages / min(memo_cpu)),
        "cpu_ratio_floor_over_memo": round(min(floor_cpu) / min(memo_cpu), 3),
        "floor_runs_s": [round(x, 2) for x in floors], "memo_runs_s": [round(x, 2) for x in memos],
        "floor_cpu_s": [round(x, 2) for x in floor_cpu], "memo_cpu_s": [round(x, 2) for x in memo_cpu],
        "load_avg_1m": round(os.getloadavg()[0], 1)}
    best = memos.index(min(memos))
    out["workers"] = "memo's choice" if workers is None else workers
    if workers == 0:    # the timers wrap this process's functions: a worker's extraction is not seen
        out["entity_s"] = round(spent[best], 2)
        out["entity_direct_share"] = round(spent[best] / memos[best], 3)
    if rfloors:
        out["floor_rows_per_s"] = round(passages / min(rfloors))
        out["rows_ratio_floor_over_memo"] = round(min(rfloors) / min(memos), 3)
        out["rows_cpu_ratio_floor_over_memo"] = round(min(rfloor_cpu) / min(memo_cpu), 3)
        out["floor_rows_runs_s"] = [round(x, 2) for x in rfloors]
        out["floor_rows_cpu_s"] = [round(x, 2) for x in rfloor_cpu]
    if offs:
        out["memo_without_entities_per_s"] = round(passages / min(offs))
        out["entity_share"] = round(1 - min(offs) / min(memos), 3)
        out["entity_cpu_share"] = round(1 - min(off_cpu) / min(memo_cpu), 3)
        out["memo_without_entities_runs_s"] = [round(x, 2) for x in offs]
    if clis:
        out["cli_per_s"] = round(passages / min(clis))
        out["cli_runs_s"] = [round(x, 2) for x in clis]
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, nargs="+", default=[20_000, 100_000])
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--batch", type=int, default=DEFAULT_BATCH)
    ap.add_argument("--seed", type=int, default=16)
    ap.add_argument("--cli", action="store_true", help="also time `memo import --no-embed` as a process")
    ap.add_argument("--input-only", type=Path, help="write the JSONL for --n to this path and stop")
    ap.add_argument("--entities", action="store_true",
                    help="also import with entity extraction off (same run) and report its share")
    ap.add_argument("--rows-floor", action="store_true",
                    help="also time a floor that inserts every row memo stored, into memo's own schema")
    ap.add_argument("--memo-path", type=Path, help="import memo from this directory (an archive of another commit)")
    ap.add_argument("--workers", type=int, default=None,
                    help="memo's import workers (ImportOptions.workers); default: memo's own choice "
                         "(by input size and cores); --entities needs 0")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    if args.entities and args.workers != 0:
        ap.error("--entities needs --workers 0: extraction is switched off in this process only, not in workers")
    if args.input_only:
        build_input(args.input_only, args.n[0], args.seed)
        return
    with tempfile.TemporaryDirectory() as tmp:
        for n in args.n:
            res = measure(n, Path(tmp), rounds=args.rounds, batch=args.batch, seed=args.seed, cli=args.cli,
                          with_entities=args.entities, rows_floor=args.rows_floor, workers=args.workers)
            print(json.dumps(res) if args.json else "\n".join(f"{k}: {v}" for k, v in res.items()), flush=True)


if __name__ == "__main__":
    main()
