"""Not a test (pytest does not collect it): the extraction CPU of two copies of
memo/text/entities.py, loaded side by side in one process and timed interleaved, on the
records the import benchmarks write (issue 29.5).

    git show dee5b3a:memo/text/entities.py > /tmp/entities_before.py
    .venv/bin/python bench/entity_extraction/extract_cpu_ab.py /tmp/entities_before.py memo/text/entities.py [--reps 7]

Corpora, each passed as ``memo.store.mentions.record_mentions`` passes it to ``extract_record``:

* ``scale``: the first 3,000 records of bench/ingest_scale.py's input (seed 16: 2-7 SciFact
  sentences under a random SciFact title; kind ``note``, so no heading);
* ``scifact``: the first 2,000 SciFact documents as bench/ingest_throughput.py reads them
  (``memo.ingest.beir``: kind ``doc``, the title as the title and as the passage's heading);
* ``locomo``: the LoCoMo turns, eight turns (with their speakers) a record, kind ``chat``.

Per corpus: CPU (``time.process_time``) per 1,000 passages of each copy, best and median of
``--reps`` interleaved rounds, and after / before.  Both copies' answers are compared first
(they must be equal).

``--import N``: instead, bench/ingest_scale.py's index-only import of its first N records
(``memo.ops.import_path``, fresh SQLite file each time), per round three times: with the
before copy's ``extract_record`` (``memo.store.mentions`` calls it), with the after copy's,
and with extraction off as ingest_scale.py ``--entities`` switches it off.  Per side: the
process's CPU for the import (best round), the CPU inside ``record_mentions`` (extraction)
and ``write_passage_mentions`` (mention rows) in it, ``entity_cpu_share`` = 1 - off / with
(best rounds, as the bench computes it) and the direct share (extraction and mention writes
over the import, best round).  The rest of the import is the same code for both sides."""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from memo.ingest.beir import iter_corpus  # noqa: E402
from memo.store.mentions import HEADED_KINDS  # noqa: E402

Record = tuple[str, "str | None", list[tuple[str, "str | None", str]]]   # kind, title, (text, speaker, section)


def load(path: str, name: str):  # noqa: ANN201
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


def scale_records(n: int = 3000) -> list[Record]:
    import ingest_scale  # bench/ingest_scale.py: its own input, same seed

    with tempfile.TemporaryDirectory() as tmp:
        path = ingest_scale.build_input(Path(tmp) / "in.jsonl", n)
        lines = path.read_text(encoding="utf-8").splitlines()
    out = []
    for line in lines:
        d = json.loads(line)
        out.append(("note", d["title"], [(d["text"], None, d["title"])]))
    return out


def scifact_records(n: int = 2000) -> list[Record]:
    out = []
    for d in iter_corpus(ROOT / "datasets" / "scifact" / "corpus.jsonl.gz"):
        out.append((d.kind, d.title, [(p.text, p.speaker, p.section) for p in d.passages]))
        if len(out) >= n:
            break
    return out


def locomo_records() -> list[Record]:
    out = []
    for sample in json.loads((ROOT / "datasets" / "locomo" / "locomo10.json").read_text(encoding="utf-8")):
        for turns in sample["conversation"].values():
            if isinstance(turns, list):
                ps = [(t.get("text", ""), t.get("speaker"), "") for t in turns if isinstance(t, dict)]
                out.extend(("chat", None, ps[i:i + 8]) for i in range(0, len(ps), 8))
    return out


def run(mod, records: list[Record]) -> tuple[float, list]:  # noqa: ANN001
    extract_record, got = mod.extract_record, []
    t0 = time.process_time()
    for kind, title, ps in records:
        heads = [sec or "" for _, _, sec in ps] if kind in HEADED_KINDS else None
        got.append(extract_record([t for t, _, _ in ps], speakers=[sp for _, sp, _ in ps], title=title,
                                  headings=heads))
    return time.process_time() - t0, got


def import_ab(before, after, n: int, reps: int) -> None:  # noqa: ANN001
    import ingest_scale

    import memo.store.mentions as mentions_mod
    import memo.store.records as records_mod

    acc = {"record_mentions": 0.0, "write_passage_mentions": 0.0}
    real = {k: getattr(records_mod, k) for k in acc}
    real_extract = mentions_mod.extract_record

    def timed(name: str):  # noqa: ANN202
        fn = real[name]

        def wrapper(*a, **k):  # noqa: ANN002, ANN003, ANN202
            t0 = time.process_time()
            try:
                return fn(*a, **k)
            finally:
                acc[name] += time.process_time() - t0
        return wrapper

    rows: dict[str, list[tuple[float, float, float]]] = {"before": [], "after": [], "off": []}
    passages = 0
    with tempfile.TemporaryDirectory() as tmp:
        src = ingest_scale.build_input(Path(tmp) / "in.jsonl", n)
        for r in range(reps):
            for side in ("before", "after", "off"):
                for k in acc:
                    acc[k] = 0.0
                if side == "off":
                    records_mod.record_mentions = lambda kind, title, passages, explicit=(): [[] for _ in passages]
                else:
                    mentions_mod.extract_record = (before if side == "before" else after).extract_record
                    for k in acc:
                        setattr(records_mod, k, timed(k))
                conn = ingest_scale.open_db(Path(tmp) / f"{side}{r}.db")
                c0 = time.process_time()
                try:
                    rep = ingest_scale.import_path(conn, src, ingest_scale.ImportOptions(namespace="bench",
                                                                                         batch_size=500))
                finally:
                    cpu = time.process_time() - c0
                    conn.close()
                    mentions_mod.extract_record = real_extract
                    for k in acc:
                        setattr(records_mod, k, real[k])
                for f in Path(tmp).glob(f"{side}{r}.db*"):
                    f.unlink()
                passages = rep.passages
                rows[side].append((cpu, acc["record_mentions"], acc["write_passage_mentions"]))
    off = min(c for c, _, _ in rows["off"])
    for side in ("before", "after"):
        best = min(rows[side])
        print(json.dumps({"side": side, "records": n, "passages": passages,
                          "import_cpu_s": [round(c, 2) for c, _, _ in rows[side]],
                          "off_cpu_s": [round(c, 2) for c, _, _ in rows["off"]],
                          "extract_cpu_s": [round(x, 2) for _, x, _ in rows[side]],
                          "mention_write_cpu_s": [round(w, 2) for _, _, w in rows[side]],
                          "extract_cpu_ms_per_1k_best": round(min(x for _, x, _ in rows[side]) / passages * 1e6, 1),
                          "entity_cpu_share": round(1 - off / best[0], 3),
                          "direct_share_of_best": round((best[1] + best[2]) / best[0], 3)}), flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("before", help="a copy of memo/text/entities.py (the old code)")
    ap.add_argument("after", help="another copy (the new code)")
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--corpus", nargs="+", default=["scale", "scifact", "locomo"])
    ap.add_argument("--import", dest="records", type=int, help="time bench/ingest_scale.py's import of N records")
    args = ap.parse_args()
    before, after = load(args.before, "entities_before"), load(args.after, "entities_after")
    if args.records:
        import_ab(before, after, args.records, args.reps)
        return
    corpora = {"scale": scale_records, "scifact": scifact_records, "locomo": locomo_records}
    for name in args.corpus:
        records = corpora[name]()
        n = sum(len(ps) for _, _, ps in records)
        _, want = run(before, records)
        _, got = run(after, records)
        same = [[(m.key, m.name, m.kind, m.count) for m in ms] for r in want for ms in r] == \
               [[(m.key, m.name, m.kind, m.count) for m in ms] for r in got for ms in r]
        times: dict[str, list[float]] = {"before": [], "after": []}
        for _ in range(args.reps):
            times["before"].append(run(before, records)[0])
            times["after"].append(run(after, records)[0])
        out: dict[str, object] = {"corpus": name, "records": len(records), "passages": n, "same_answers": same}
        for k, v in times.items():
            v = sorted(v)
            out[f"{k}_cpu_ms_per_1k_best"] = round(v[0] / n * 1e6, 1)
            out[f"{k}_cpu_ms_per_1k_median"] = round(v[len(v) // 2] / n * 1e6, 1)
        out["after_over_before_best"] = round(min(times["after"]) / min(times["before"]), 3)
        out["after_over_before_median"] = round(sorted(times["after"])[args.reps // 2]
                                                / sorted(times["before"])[args.reps // 2], 3)
        print(json.dumps(out), flush=True)


if __name__ == "__main__":
    main()
