"""bench/keyword_rank.py runs on a real database and checks its rankings against each other:
the sample's claims over the sample's abstracts (imported without vectors), JSON out."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_keyword_rank_bench_ranks_the_sample(tmp_path) -> None:
    db = tmp_path / "memo.db"
    sample = ROOT / "datasets" / "sample" / "scifact" / "corpus.jsonl"
    subprocess.run([sys.executable, "-m", "memo", "import", str(sample), "--format", "beir", "--no-embed",
                    "--db", str(db), "--json"], check=True, capture_output=True, cwd=ROOT)
    out = subprocess.run([sys.executable, str(ROOT / "bench" / "keyword_rank.py"), "--db", str(db),
                          "--queries", "6", "--depth", "10", "--json"], check=True, capture_output=True, text=True,
                         cwd=ROOT)
    doc = json.loads(out.stdout)
    assert doc["queries"] == 6 and doc["rows"] > 300
    assert set(doc["rankings"]) == {"python", "dense", "pruned"}
    assert all(st["median_ms"] > 0 for st in doc["rankings"].values())
    assert doc["postings_held_median"] > 0 and doc["python_visited_median"] > 0
