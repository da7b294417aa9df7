"""Build the ``codesearch-nl`` labels: hand-written questions over the ``codesearch`` corpus.

Reads ``datasets/codesearch-nl/questions.toml`` (questions written by hand the way people
type them into a code search box, each with the standard-library functions that answer it:
qualified name -> grade, 2 = the answer, 1 = acceptable), checks every question against the
corpus that ``codesearch`` reads from the running Python's standard library, and writes, in
the same folder, ``codesearch.jsonl.gz`` (memo's JSONL label format: id, query, relevant
{name: grade}, category, split) and ``manifest.json`` (the ``codesearch`` manifest's fields,
so the harness's codesearch loader reads the folder as it is).  Usage::

    .venv/bin/python scripts/build_codesearch_nl.py            # -> datasets/codesearch-nl/
    .venv/bin/python scripts/build_codesearch_nl.py --check    # exit 1 unless byte-identical
    .venv/bin/memo eval run -d datasets/codesearch-nl --split train -p rrf

Checks (exit 1, naming each bad question): every labelled name is a corpus item (the
corpus skips private names, stubs, docstring-only functions and identical copies, so a
plausible name may be missing); ids and queries are unique; grades are 1 or 2 and each
question has a grade-2 item; the question holds no labelled item's name nor any other part of
its qualified name (module, package, class) as a whole word, case-insensitively, except the
words the file allows in ``plain_words``; it shares no run of ``QUOTE_WORDS`` words with a
labelled item's docstring.

Split: ``test`` when the first byte of sha256(question id) is below 128, else ``train``
(fixed by the ids alone, before any system output is seen).
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import re
import sys
import tempfile
import tomllib
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

try:  # the harness's package: memo_eval (the folder eval/); a checkout from before the rename: eval
    from memo_eval.datasets import codesearch as cs
except ImportError:  # pragma: no cover
    from eval.datasets import codesearch as cs  # type: ignore[no-redef]

OUT = ROOT / "datasets" / "codesearch-nl"
QUESTIONS = "questions.toml"
CATEGORIES = ("files", "text", "dates", "data", "net", "os", "archive", "serial", "concurrency", "math", "debug")
QUOTE_WORDS = 5
_TOKEN = re.compile(r"[a-z0-9_]+")
_WORD = re.compile(r"[a-z0-9]+")
_NAME_WORD = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])")


def name_words(qualname: str) -> set[str]:
    """The words of a qualified name (split at dots, underscores, digits and camelCase),
    casefolded, three letters or more: ``json.decoder.JSONDecoder.raw_decode`` -> json,
    decoder, decode, raw."""
    return {w.casefold() for w in _NAME_WORD.findall(qualname) if len(w) >= 3}


def split_of(qid: str) -> str:
    return "test" if hashlib.sha256(qid.encode()).digest()[0] < 128 else "train"


def load_questions(path: Path) -> tuple[list[dict[str, object]], set[str]]:
    doc = tomllib.loads(path.read_text(encoding="utf-8"))
    plain = {str(w).casefold() for w in doc.get("plain_words", [])}
    return list(doc.get("q", [])), plain


def _ngrams(words: list[str], n: int) -> set[tuple[str, ...]]:
    return {tuple(words[i:i + n]) for i in range(len(words) - n + 1)}


def problems_of(questions: list[dict[str, object]], plain: set[str],
                items: dict[str, cs.Function]) -> list[str]:
    """Every rule a question breaks, as '<id>: <what>' lines (empty: all good)."""
    bad: list[str] = []
    ids: Counter[str] = Counter(str(q.get("id")) for q in questions)
    texts: Counter[str] = Counter(" ".join(str(q.get("query", "")).casefold().split()) for q in questions)
    for q in questions:
        qid = str(q.get("id") or "")
        query = str(q.get("query") or "").strip()
        rel = q.get("relevant")
        if not qid or not query:
            bad.append(f"{qid or '?'}: 'id' and 'query' are required")
            continue
        if set(q) - {"id", "query", "relevant", "category"}:
            bad.append(f"{qid}: unknown field(s) {sorted(set(q) - {'id', 'query', 'relevant', 'category'})}")
        if ids[qid] > 1:
            bad.append(f"{qid}: duplicate id")
        if texts[" ".join(query.casefold().split())] > 1:
            bad.append(f"{qid}: duplicate query {query!r}")
        if q.get("category") not in CATEGORIES:
            bad.append(f"{qid}: category {q.get('category')!r} not one of {', '.join(CATEGORIES)}")
        if not isinstance(rel, dict) or not rel:
            bad.append(f"{qid}: 'relevant' must be a non-empty table name -> grade")
            continue
        if any(g not in (1, 2) for g in rel.values()):
            bad.append(f"{qid}: grades must be 1 or 2")
        if 2 not in rel.values():
            bad.append(f"{qid}: no grade-2 item")
        tokens = set(_TOKEN.findall(query.casefold()))
        qwords = _WORD.findall(query.casefold())
        for name in rel:
            f = items.get(name)
            if f is None:
                bad.append(f"{qid}: {name} is not a corpus item")
                continue
            named = sorted(p for p in {c.casefold() for c in name.split(".")} if p in tokens and p not in plain)
            if named:
                bad.append(f"{qid}: names {', '.join(named)} (part of {name})")
            if f.docstring:
                shared = _ngrams(qwords, QUOTE_WORDS) & _ngrams(_WORD.findall(f.docstring.casefold()), QUOTE_WORDS)
                if shared:
                    bad.append(f"{qid}: quotes the docstring of {name}: {' '.join(sorted(shared)[0])!r}")
    return bad


def build_labels(questions: list[dict[str, object]]) -> list[dict[str, object]]:
    """memo JSONL label lines, in the questions' order; relevant sorted by grade then name."""
    out = []
    for q in questions:
        rel = dict(sorted(q["relevant"].items(), key=lambda kv: (-kv[1], kv[0])))   # type: ignore[union-attr]
        qid = str(q["id"])
        out.append({"id": qid, "query": " ".join(str(q["query"]).split()), "relevant": rel,
                    "category": str(q["category"]), "split": split_of(qid)})
    return out


def counts_of(labels: list[dict[str, object]], built: cs.Built) -> dict[str, int]:
    c: Counter[str] = Counter(corpus_items=len(built.items), queries=len(labels))
    modules: set[str] = set()
    tops: set[str] = set()
    by_name = {f.qualname: f for f in built.items}
    for lb in labels:
        s = str(lb["split"])
        c[f"queries_{s}"] += 1
        c[f"category_{lb['category']}_{s}"] += 1
        rel: dict[str, int] = lb["relevant"]   # type: ignore[assignment]
        c["labels"] += len(rel)
        c["labels_grade2"] += sum(1 for g in rel.values() if g == 2)
        qwords = set(_WORD.findall(str(lb["query"]).casefold()))
        if any(qwords & name_words(n) for n, g in rel.items() if g == 2):
            c["queries_sharing_a_word_with_a_grade2_name"] += 1
        for name in rel:
            modules.add(by_name[name].module)
            tops.add(by_name[name].module.split(".")[0])
    c["modules"] = len(modules)
    c["top_level_modules"] = len(tops)
    return dict(sorted(c.items()))


def write(out: Path, labels: list[dict[str, object]], built: cs.Built, questions_file: Path,
          stdlib: Path | None) -> dict[str, object]:
    """``codesearch.jsonl.gz`` (gzip mtime 0: same input, same bytes) and ``manifest.json``."""
    out.mkdir(parents=True, exist_ok=True)
    text = "".join(json.dumps(lb, ensure_ascii=False, sort_keys=True) + "\n" for lb in labels)
    with (out / cs.LABELS).open("wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0, filename="") as gz:
        gz.write(text.encode())
    man = cs.manifest(built, stdlib)
    man["counts"] = counts_of(labels, built)
    man["labels_sha256"] = hashlib.sha256(text.encode()).hexdigest()
    man["questions_sha256"] = hashlib.sha256(questions_file.read_bytes()).hexdigest()
    man["split_rule"] = "test when sha256(id)[0] < 128, else train"
    (out / cs.MANIFEST).write_text(json.dumps(man, indent=1) + "\n")
    return man


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--questions", type=Path, default=OUT / QUESTIONS)
    ap.add_argument("--out", type=Path, default=OUT)
    ap.add_argument("--stdlib", type=Path, default=None, help="another stdlib folder (default: the running one)")
    ap.add_argument("--check", action="store_true", help="build into a temporary folder and compare with --out")
    args = ap.parse_args()
    questions, plain = load_questions(args.questions)
    built = cs.build(args.stdlib)
    bad = problems_of(questions, plain, {f.qualname: f for f in built.items})
    if bad:
        print("\n".join(bad), file=sys.stderr)
        print(f"{len(bad)} problem(s) in {args.questions}", file=sys.stderr)
        return 1
    labels = build_labels(questions)
    if args.check:
        with tempfile.TemporaryDirectory() as tmp:
            write(Path(tmp), labels, built, args.questions, args.stdlib)
            same = all((Path(tmp) / n).exists() and (args.out / n).exists()
                       and (Path(tmp) / n).read_bytes() == (args.out / n).read_bytes()
                       for n in (cs.LABELS, cs.MANIFEST))
        print("same" if same else "different")
        return 0 if same else 1
    man = write(args.out, labels, built, args.questions, args.stdlib)
    print(json.dumps(man, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
