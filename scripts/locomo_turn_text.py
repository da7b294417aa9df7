"""Semantic-only recall@10 on LoCoMo for different texts embedded per turn (docs/eval.md
"Speakers"): a direct MiniLM scan of each conversation's turns, no fusion, no recency, no
floor, so the only variable is the text.  Variants:

* ``loader``    - what memo embeds today: ``"session N\\n\\n<speaker>: <text>"``;
* ``prev``      - the previous turn, then the turn (no header);
* ``neighbours``- previous, turn, next (no header);
* ``no_header`` - ``"<speaker>: <text>"``;
* ``no_speaker``- ``"session N\\n\\n<text>"``;
* ``speaker``   - ``"<speaker>\\n\\n<text>"``;
* ``speaker_date`` - ``"<speaker> @ <session date>\\n\\n<text>"``;
* ``bare``      - ``<text>``.

    .venv/bin/python scripts/locomo_turn_text.py [--variants loader,prev,...] [--path locomo10.json]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from memo.embed.model import OnnxEmbedder  # noqa: E402
from memo.embed.registry import load_registry  # noqa: E402
from memo.ingest.locomo import load_samples, sessions, turn_text  # noqa: E402
from memo_eval.datasets.locomo import load_locomo  # noqa: E402

VARIANTS = ("loader", "prev", "neighbours", "no_header", "no_speaker", "speaker", "speaker_date", "bare")


def texts(sample: dict, variant: str) -> list[tuple[str, str]]:
    ns = f"locomo/{sample['sample_id']}"
    conv = sample["conversation"]
    out = []
    for n, turns, _ in sessions(conv):
        date = conv.get(f"session_{n}_date_time", "")
        for i, t in enumerate(turns):
            full = turn_text(t)
            body = full.split(": ", 1)[1]
            prev = turn_text(turns[i - 1]) if i > 0 else ""
            nxt = turn_text(turns[i + 1]) if i + 1 < len(turns) else ""
            text = {"loader": f"session {n}\n\n{full}", "prev": "\n".join(x for x in (prev, full) if x),
                    "neighbours": "\n".join(x for x in (prev, full, nxt) if x), "no_header": full,
                    "no_speaker": f"session {n}\n\n{body}", "speaker": f"{t['speaker']}\n\n{body}",
                    "speaker_date": f"{t['speaker']} @ {date}\n\n{body}", "bare": body}[variant]
            out.append((f"{ns}#{t.get('dia_id')}", text))
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--variants", default=",".join(VARIANTS))
    ap.add_argument("--path", default=str(Path(__file__).resolve().parents[1] / "datasets/locomo/locomo10.json"))
    args = ap.parse_args()
    es = load_locomo(Path(args.path))
    samples = load_samples(args.path)
    emb = OnnxEmbedder(load_registry().get())
    qs = [q for q in es.queries if q.qid in es.qrels and q.answerable]
    qv = np.stack([emb.embed_query(q.text) for q in qs])
    for variant in args.variants.split(","):
        t0 = time.time()
        ids, vecs = {}, {}
        for s in samples:
            rows = texts(s, variant)
            ns = f"locomo/{s['sample_id']}"
            ids[ns] = [r[0] for r in rows]
            vecs[ns] = emb.embed_passages([r[1] for r in rows])
        per: dict[str, list[float]] = {}
        for q, x in zip(qs, qv, strict=True):
            top = {ids[q.namespace][i] for i in np.argsort(-(vecs[q.namespace] @ x))[:10]}
            rel = es.qrels[q.qid]
            per.setdefault(q.category, []).append(len(top & set(rel)) / len(rel))
        every = [v for c in ("1", "2", "3", "4") for v in per.get(c, [])]
        cats = {c: round(float(np.mean(v)), 4) for c, v in sorted(per.items())}
        print(f"{variant:13s} recall@10 {np.mean(every):.4f} {cats} ({time.time() - t0:.0f} s)", flush=True)


if __name__ == "__main__":
    main()
