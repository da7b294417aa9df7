"""Precision and recall of entity extraction on a hand-labelled sample (issue 29.1).

bench/entity_extraction/sample.jsonl: 124 passages from five domains, labelled by hand
(``gold``: the case-folded keys of the entities worth linking in the passage):

* hotpotqa (35): the first two sentences of a paragraph of datasets/hotpotqa/corpus.jsonl,
  with its title (the article's subject);
* locomo (35): turns of datasets/locomo/locomo10.json (conversations 2 and 5), with the speaker;
* notes (9): paragraphs of datasets/sample/notes/*.md, with the file stem as title and
  the heading path;
* scifact (25): the first two sentences of a SciFact abstract, with its (sentence) title;
* nodedocs (20): the Node.js API docs, every 203rd (in pk order) of the 4,067 passages of
  120-500 characters of the nodedocs eval index, with its document's title and heading path.

Worth linking: a proper name (person, place, organisation, work, event, product, named
group), a record's subject, a specific named thing in acronym or identifier form (HPV,
PD-1, ERR_CONN_RESET, ADR-2, docs/mcp.md; in code docs an API, class, module or option
name: stream.Readable, fs.open, node:crypto, highWaterMark, not an example's variables).
Not: demonyms and languages (American, Albanian), generic terms and their abbreviations (BP, EVs, Tregs), section labels
(BACKGROUND), months and weekdays, positions (Prime Minister).  A speaker is an entity of
its turn.  Keys compare after entity_key, a leading "the " and a final "." removed.

Extractors:
* ``seed``: memo.text.entities.extract_seed (passage text and speaker only: the seed read
  neither title nor heading);
* ``record``: memo.text.entities.extract_record with the title, the speaker and (notes) the
  heading path; entities of kind ``initial`` count only when another passage of the same
  domain confirms them (what the store does: memo.store.mentions.confirm).

Usage: PYTHONPATH=. python bench/entity_extraction/score.py [--errors]
"""

from __future__ import annotations

import json
import sys
from collections import defaultdict
from pathlib import Path

from memo.text.entities import entity_key, extract_record, extract_seed

SAMPLE = Path(__file__).with_name("sample.jsonl")


def norm(key: str) -> str:
    k = entity_key(key)
    if k.startswith("the ") and len(k) > 4:
        k = k[4:]
    return k.rstrip(".")


def seed(rows: list[dict]) -> list[set[str]]:
    return [{norm(m.key) for m in extract_seed(r["text"], speaker=r.get("speaker"))} for r in rows]


def record(rows: list[dict]) -> list[set[str]]:
    found = [extract_record([r["text"]], speakers=[r.get("speaker")], title=r.get("title"),
                            headings=[r["heading"]] if r.get("heading") else None)[0] for r in rows]
    confirmed: dict[str, set[str]] = defaultdict(set)
    for r, ms in zip(rows, found, strict=True):
        confirmed[r["domain"]].update(m.key for m in ms if m.kind != "initial")
    return [{norm(m.key) for m in ms if m.kind != "initial" or m.key in confirmed[r["domain"]]}
            for r, ms in zip(rows, found, strict=True)]


def score(rows: list[dict], got: list[set[str]]) -> dict[str, tuple[float, float, int, int, int]]:
    by: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0])
    for r, g in zip(rows, got, strict=True):
        gold = {norm(k) for k in r["gold"]}
        for d in (r["domain"], "all"):
            by[d][0] += len(gold & g)
            by[d][1] += len(g)
            by[d][2] += len(gold)
    return {d: (tp / n_got if n_got else 1.0, tp / n_gold if n_gold else 1.0, tp, n_got, n_gold)
            for d, (tp, n_got, n_gold) in by.items()}


def main() -> None:
    rows = [json.loads(line) for line in SAMPLE.read_text(encoding="utf-8").splitlines() if line.strip()]
    print(f"{len(rows)} passages, {sum(len(r['gold']) for r in rows)} labelled entities")
    print(f"{'extractor':10} {'domain':9} {'P':>6} {'R':>6} {'F1':>6}  tp/found/gold")
    results = {"seed": seed(rows), "record": record(rows)}
    for name, got in results.items():
        for d, (p, r, tp, n_got, n_gold) in sorted(score(rows, got).items()):
            f1 = 2 * p * r / (p + r) if p + r else 0.0
            print(f"{name:10} {d:9} {p:6.3f} {r:6.3f} {f1:6.3f}  {tp}/{n_got}/{n_gold}")
    if "--errors" in sys.argv:
        for name, got in results.items():
            for r, g in zip(rows, got, strict=True):
                gold = {norm(k) for k in r["gold"]}
                if g != gold:
                    print(name, r["id"], "FP", sorted(g - gold), "FN", sorted(gold - g))


if __name__ == "__main__":
    main()
