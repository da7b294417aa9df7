"""Write ``nodedocs-html``: the ``nodedocs`` labelled set over Node's API pages as HTML.

The same questions and the same files as ``datasets/nodedocs`` (its ``manifest.json`` and
``nodedocs.jsonl``), with each ``/usr/share/doc/nodejs/api/X.md`` replaced by the page Node
ships beside it, ``X.html``, and every label ``api/X.md#<section>`` by ``api/X.html#<section>``
(the standard-library files stay as they are).  Replayed against ``nodedocs`` it measures
what ``memo import`` makes of HTML (``memo.ingest.html_text``) against the markdown the
pages were generated from (docs/results-log.md "HTML pages")::

    .venv/bin/python scripts/nodedocs_html.py --out /tmp/nodedocs-html
    .venv/bin/memo eval run -d datasets/nodedocs --split test
    .venv/bin/memo eval run -d /tmp/nodedocs-html --split test

The corpus is read from this machine and never copied; the manifest pins each page's
sha256, as ``nodedocs``' does.
"""

from __future__ import annotations

import argparse
import hashlib
import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SOURCE = ROOT / "datasets" / "nodedocs"


def _html(entry: dict) -> dict | None:
    """The HTML twin of a markdown entry (None when the page is not on this machine)."""
    if not entry["source"].endswith(".md"):
        return entry
    page = Path(entry["source"][:-3] + ".html")
    if not page.is_file():
        return None
    return {"label": entry["label"][:-3] + ".html", "source": str(page),
            "sha256": hashlib.sha256(page.read_bytes()).hexdigest()}


def _label(key: str) -> str:
    path, sep, section = key.partition("#")
    return (path[:-3] + ".html" if path.endswith(".md") else path) + sep + section


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, required=True, help="The folder to write (created).")
    args = ap.parse_args()
    manifest = json.loads((SOURCE / "manifest.json").read_text(encoding="utf-8"))
    entries = [_html(e) for e in manifest["entries"]]
    missing = [e["source"] for e, h in zip(manifest["entries"], entries, strict=True) if h is None]
    if missing:
        raise SystemExit(f"no HTML page beside {missing[0]} (and {len(missing) - 1} more): is Node's doc package here?")
    args.out.mkdir(parents=True, exist_ok=True)
    doc = {k: v for k, v in manifest.items() if k not in ("entries", "corpus_sha256")}
    (args.out / "manifest.json").write_text(json.dumps({**doc, "entries": entries}, indent=1) + "\n", encoding="utf-8")
    lines = []
    for raw in (SOURCE / "nodedocs.jsonl").read_text(encoding="utf-8").splitlines():
        if not raw.strip():
            continue
        q = json.loads(raw)
        rel = q.get("relevant")
        if isinstance(rel, dict):
            q["relevant"] = {_label(k): v for k, v in rel.items()}
        elif isinstance(rel, list):
            q["relevant"] = [_label(k) for k in rel]
        lines.append(json.dumps(q, ensure_ascii=False))
    (args.out / f"{args.out.name}.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    print(f"{args.out}: {len(entries)} files, {len(lines)} questions")


if __name__ == "__main__":
    main()
