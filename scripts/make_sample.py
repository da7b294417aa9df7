"""Rebuild datasets/sample/ from the full SciFact copy (deterministic; run from the repo root).

    python scripts/make_sample.py [/work/shared/datasets/scifact]

Takes the first 20 test queries (qrels/test.tsv order), every document relevant to them,
and fills up to 300 documents with the documents whose sha256(id) sorts first (a fixed,
topic-neutral choice), in corpus order.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import sys
from pathlib import Path

N_QUERIES, N_DOCS = 20, 300


def main(src: Path, dest: Path) -> None:
    lines = (src / "qrels" / "test.tsv").read_text().splitlines()[1:]
    qrels: list[tuple[str, str]] = []
    queries: list[str] = []
    for line in lines:
        qid, did, _ = line.strip().split("\t")
        if qid not in queries:
            if len(queries) == N_QUERIES:
                continue
            queries.append(qid)
        qrels.append((qid, did))
    relevant = {d for _, d in qrels}
    with gzip.open(src / "corpus.jsonl.gz", "rt", encoding="utf-8") as fh:
        corpus = [json.loads(x) for x in fh]
    filler = sorted((d["_id"] for d in corpus if d["_id"] not in relevant),
                    key=lambda i: hashlib.sha256(i.encode()).hexdigest())
    keep = relevant | set(filler[: N_DOCS - len(relevant)])
    dest.mkdir(parents=True, exist_ok=True)
    with (dest / "corpus.jsonl").open("w", encoding="utf-8") as out:
        for d in corpus:
            if d["_id"] in keep:
                out.write(json.dumps(d) + "\n")
    qtext = {}
    for line in (src / "queries.jsonl").read_text().splitlines():
        q = json.loads(line)
        qtext[q["_id"]] = q
    with (dest / "queries.jsonl").open("w", encoding="utf-8") as out:
        for qid in queries:
            out.write(json.dumps({"_id": qid, "text": qtext[qid]["text"], "metadata": {}}) + "\n")
    (dest / "qrels").mkdir(exist_ok=True)
    (dest / "qrels" / "test.tsv").write_text(
        "query-id\tcorpus-id\tscore\n" + "".join(f"{q}\t{d}\t1\n" for q, d in qrels))
    print(f"{len(keep)} docs, {len(queries)} queries, {len(qrels)} qrels -> {dest}", file=sys.stderr)


if __name__ == "__main__":
    main(Path(sys.argv[1] if len(sys.argv) > 1 else "/work/shared/datasets/scifact"),
         Path(__file__).resolve().parent.parent / "datasets" / "sample" / "scifact")
