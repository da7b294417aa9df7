"""Check nodehops.jsonl against the markdown on this machine (datasets/nodehops/SOURCE.md).

For every label ``<file>#<heading path>`` it reads the manifest's file, builds the heading
path of every ATX heading outside fenced code (``A > B > C``, backticks kept: the matcher
drops them) and counts the headings the label names under memo's own rule
(``memo_eval.index.section_matches``: the end of the path, no backticks or case, a last
heading that stops before ``(`` names a signature).  A label that names no heading is an
error; one that names several distinct headings is reported (``--strict``: an error).
It also checks the fields, unique ids, two labels per question (one of grade 2), and the
split rule (every third line ``train``).  With ``--db`` it counts, per label, the passages
of an index built over the corpus whose section the label names (the eval's own mapping).

    PYTHONPATH=<dir holding memo_eval>:. python datasets/nodehops/check_labels.py [--strict] [--db INDEX.db]
"""

from __future__ import annotations

import argparse
import json
import re
import sqlite3
import sys
from pathlib import Path

from memo_eval.datasets.fileset import resolve_source
from memo_eval.index import _norm_heading, section_matches

HERE = Path(__file__).resolve().parent
FENCE = re.compile(r"^\s{0,3}(```|~~~)")
ATX = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")


def heading_paths(text: str) -> list[str]:
    """Every ATX heading's path (``H1 > H2 > ...``), in file order, fenced code skipped."""
    out: list[str] = []
    stack: list[tuple[int, str]] = []
    fence: str | None = None
    for line in text.splitlines():
        m = FENCE.match(line)
        if m:
            fence = None if fence == m.group(1) else (fence or m.group(1))
            continue
        if fence:
            continue
        h = ATX.match(line)
        if not h:
            continue
        level = len(h.group(1))
        while stack and stack[-1][0] >= level:
            stack.pop()
        stack.append((level, h.group(2)))
        out.append(" > ".join(t for _, t in stack))
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--labels", type=Path, default=HERE / "nodehops.jsonl")
    ap.add_argument("--strict", action="store_true", help="a label naming several headings is an error")
    ap.add_argument("--db", type=Path, help="an index over the corpus: count the passages each label names")
    args = ap.parse_args()

    manifest = json.loads((HERE / "manifest.json").read_text(encoding="utf-8"))
    files = {e["label"]: e["source"] for e in manifest["entries"]}
    paths_of: dict[str, list[str]] = {}
    errors: list[str] = []
    warnings: list[str] = []
    ids: set[str] = set()
    lines = [ln for ln in args.labels.read_text(encoding="utf-8").splitlines() if ln.strip()]
    for i, line in enumerate(lines):
        q = json.loads(line)
        qid = q.get("id")
        extra = set(q) - {"id", "query", "relevant", "category", "split"}
        if extra or not all(k in q for k in ("id", "query", "relevant", "category", "split")):
            errors.append(f"{qid}: fields {sorted(q)}")
        if qid in ids:
            errors.append(f"{qid}: duplicate id")
        ids.add(qid)
        want_split = "train" if i % 3 == 2 else "test"
        if q.get("split") != want_split:
            errors.append(f"{qid}: split {q.get('split')!r}, expected {want_split!r} (line {i + 1})")
        rel = q.get("relevant", {})
        if len(rel) != 2 or 2 not in rel.values():
            errors.append(f"{qid}: expected two labels, one of grade 2: {rel}")
        for label in rel:
            path, _, section = label.partition("#")
            if path not in files or not section:
                errors.append(f"{qid}: {label!r}: no such file in the manifest, or no section")
                continue
            if path not in paths_of:
                paths_of[path] = heading_paths(Path(resolve_source(files[path], HERE)).read_text(encoding="utf-8"))
            want = [_norm_heading(s) for s in section.split(" > ")]
            hits = sorted({p for p in paths_of[path] if section_matches(p, want)})
            if not hits:
                errors.append(f"{qid}: {label!r} names no heading of {path}")
            elif len(hits) > 1:
                (errors if args.strict else warnings).append(
                    f"{qid}: {label!r} names {len(hits)} headings: " + " | ".join(h.split(" > ")[-1] for h in hits))
    if args.db:
        con = sqlite3.connect(f"file:{args.db}?mode=ro", uri=True)
        rows = con.execute("SELECT r.import_path, p.section FROM passages p JOIN records r ON r.id = p.record_id").fetchall()
        for line in lines:
            q = json.loads(line)
            for label in q["relevant"]:
                path, _, section = label.partition("#")
                want = [_norm_heading(s) for s in section.split(" > ")]
                n = sum(1 for imp, sec in rows if imp and imp.endswith("/" + path) and section_matches(sec or "", want))
                if n == 0:
                    errors.append(f"{q['id']}: {label!r} names no passage of the index")
    for w in warnings:
        print("note:", w)
    for e in errors:
        print("error:", e)
    n_train = sum(1 for ln in lines if json.loads(ln).get("split") == "train")
    print(f"{len(lines)} questions ({n_train} train, {len(lines) - n_train} test), "
          f"{len(errors)} errors, {len(warnings)} labels naming several headings")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
