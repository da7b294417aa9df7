"""Choose stage 4d's heading rules on the TRAIN splits (issue 28.2).

Two rules of ``memo.retrieve.heading`` were written after reading test misses (docs/eval.md
"Headings"): a heading that goes on in words after its name names nothing (``prose``), and a
heading that is exactly the query's identifier wins over dotted suffixes (``exact_wins``).
This script replays the documentation and code domains' train splits under the default
profile with each combination of the two rules (the rules switched in this process only;
one worker, so the switch reaches every search) and prints nDCG@10 per domain and the
macro-average.  The rule set kept is the best on train; ties go to the fewer rules.

    .venv/bin/python scripts/choose_heading_rules.py [--domain nodedocs --domain codesearch ...]
"""

from __future__ import annotations

import argparse
import itertools
import json

import memo.retrieve.heading as heading
from memo_eval.grid import RunSpec
from memo_eval.run import EvalOptions, run_eval
from memo_eval.suite import domains, resolve_dataset

DOC_DOMAINS = ("nodedocs", "relnotes", "codesearch", "codesearch-nl")
_NAME_OF, _NAMED = heading.name_of, heading.named_headings


def _variant(prose: bool, exact_wins: bool) -> None:
    def name_of(h: str) -> str:
        if prose:
            return _NAME_OF(h)
        text = heading._LABEL.sub("", h.replace("`", "").strip(), count=1).strip("'\"")
        m = heading._NAME.match(text)
        return heading._folded(m) if m else ""

    def named(headings: set[str], names: frozenset[str]) -> dict[str, str]:
        if exact_wins:
            return _NAMED(headings, names)
        out = {h: h for h in headings if h in names}
        for h in headings:
            n = next((n for n in sorted(names) if h.endswith("." + n)), None)
            if n is not None and h not in out:
                out[h] = n
        return out

    heading.name_of = name_of
    heading.named_headings = named


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--domain", action="append", default=None)
    args = ap.parse_args()
    chosen = [d for d in domains() if d.name in (args.domain or DOC_DOMAINS)]
    table: dict[str, dict[str, float]] = {}
    for prose, exact_wins in itertools.product((True, False), repeat=2):
        _variant(prose, exact_wins)
        label = f"prose={prose},exact_wins={exact_wins}"
        for d in chosen:
            res = run_eval(EvalOptions(dataset=resolve_dataset(d.dataset), split=d.choose,
                                       specs=[RunSpec("zscore")], workers=1, write=False))
            table.setdefault(label, {})[d.name] = res["runs"][0]["metrics"]["ndcg_10"]
    for row in table.values():
        row["macro"] = sum(row.values()) / len(row)
    print(json.dumps(table, indent=1))


if __name__ == "__main__":
    main()
