"""What a user waits for after editing one line of an imported document: ``memo import`` of
the folder again, embedding included, next to the same re-import with ``--no-embed`` (the
floor: reading, splitting and storing the new version, timed in the same run on a copy of
the same database).

    .venv/bin/python bench/reimport_edit.py [--docs FILE ...] [--runs 5] [--memo-path DIR] [--json]

* corpus: Node.js API docs from the machine (``/usr/share/doc/nodejs/api/fs.md`` by
  default; ``--docs`` for others), copied into a temporary folder and imported once with
  the real model (not timed).
* each run: the first document gets one word changed in a different paragraph; the database
  is copied (file and WAL) and ``memo import --no-embed`` times the floor on the copy, then
  ``memo import`` (embedding) times the re-import on the original.  Processes start fresh
  (``python -m memo``, working directory a temporary folder, so ``--memo-path`` decides
  which memo runs).
* prints the medians of both, their ratio, and the embedding report's ``embedded`` /
  ``reused`` of the last run.  ``--memo-path DIR``: the same with memo from DIR (an older
  checkout: before and after in one run).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

DEFAULT_DOCS = ["/usr/share/doc/nodejs/api/fs.md"]


def _memo(args: list[str], env: dict[str, str], cwd: Path) -> tuple[float, dict]:
    t = time.perf_counter()
    out = subprocess.run([sys.executable, "-m", "memo", *args, "--json"], env=env, cwd=cwd,
                         capture_output=True, text=True, check=True).stdout
    return time.perf_counter() - t, json.loads(out)


def _copy_db(src: Path, dst: Path) -> None:
    for suffix in ("", "-wal", "-shm"):
        s = Path(f"{src}{suffix}")
        d = Path(f"{dst}{suffix}")
        if d.exists():
            d.unlink()
        if s.exists():
            shutil.copyfile(s, d)


def _edit(path: Path, run: int) -> None:
    """Change one word of the run-th prose paragraph (a different one each run)."""
    paras = path.read_text().split("\n\n")
    prose = [i for i, p in enumerate(paras) if p[:1].isalpha() and len(p.split()) > 8]
    i = prose[(run * 7) % len(prose)]
    words = paras[i].split(" ")
    words[len(words) // 2] = words[len(words) // 2] + "-edited"
    paras[i] = " ".join(words)
    path.write_text("\n\n".join(paras))


def measure(docs: list[Path], runs: int, memo_path: str | None) -> dict:
    env = dict(os.environ)
    if memo_path:
        env["PYTHONPATH"] = os.pathsep.join([str(Path(memo_path).resolve()), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    with tempfile.TemporaryDirectory(prefix="memo-reimport-") as tmp:
        root = Path(tmp)
        folder = root / "docs"
        folder.mkdir()
        for d in docs:
            shutil.copyfile(d, folder / d.name)
        db, floor_db = root / "m.db", root / "floor.db"
        _, first = _memo(["import", str(folder), "--db", str(db), "--no-progress"], env, root)
        timed, floor, report = [], [], {}
        for run in range(runs):
            _edit(folder / docs[0].name, run)
            _copy_db(db, floor_db)
            f, _ = _memo(["import", str(folder), "--db", str(floor_db), "--no-embed", "--no-progress"], env, root)
            t, out = _memo(["import", str(folder), "--db", str(db), "--no-progress"], env, root)
            floor.append(f)
            timed.append(t)
            report = out.get("embedding") or {}
    med, fmed = statistics.median(timed), statistics.median(floor)
    return {"passages": first.get("passages"), "runs": runs,
            "reimport_s": round(med, 3), "floor_no_embed_s": round(fmed, 3), "ratio": round(med / fmed, 2),
            "embedded": report.get("embedded"), "reused": report.get("reused", 0)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--docs", nargs="+", default=DEFAULT_DOCS)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--memo-path", help="also time memo from this checkout (an older commit)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    docs = [Path(d) for d in args.docs]
    missing = [str(d) for d in docs if not d.is_file()]
    if missing:
        print(f"error: no such file: {', '.join(missing)} (give --docs FILE ...)", file=sys.stderr)
        return 2
    out = {"this": measure(docs, args.runs, None)}
    if args.memo_path:
        out["before"] = measure(docs, args.runs, args.memo_path)
    if args.json:
        print(json.dumps(out, indent=1))
    else:
        for name, r in out.items():
            print(f"{name}: {r['passages']} passages; re-import after a one-word edit {r['reimport_s']} s "
                  f"(median of {r['runs']}), --no-embed floor {r['floor_no_embed_s']} s, ratio {r['ratio']}x; "
                  f"embedded {r['embedded']}, of them reused {r['reused']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
