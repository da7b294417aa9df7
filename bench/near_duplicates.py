"""Near-duplicate detection at write time on planted duplicates (issue 32.5).

The set: LoCoMo's observations (the facts an agent distils from a conversation: short,
one per statement, many about the same person in the same words), each added as a note
in its conversation's namespace through ``memo.ops.add_record`` -- the path of ``memo
add`` and MCP ``memory_add``.  Then, for a random sample of them, a planted duplicate:
the same statement with one or two small edits an agent or a person makes when it writes
the same thing again (case and punctuation, a word dropped, a word added, a word replaced,
two words swapped, a typo), added the same way.

Printed: how many planted duplicates were linked to their original (recall) and to
another record (wrong link); how many of the original observations -- all different
statements, many near each other ("Caroline went to ...", "Caroline is planning to ...")
-- were linked to an earlier one (false links); per kind of edit; and the add's time
(median and p90 over the base adds, with and without the check: ``index.near_duplicates``
= off in the same run).

    python bench/near_duplicates.py [--per-conversation 60] [--planted 200] [--seed 7] [--facts]

``--cjk``: the base set is instead every sentence of at least 10 characters of the notes of
datasets/cjk (Chinese and Japanese, namespace per language), and the planted duplicates get
one or two character edits (a character replaced, dropped, inserted, two swapped, the
closing punctuation changed): near-identity of texts written without spaces.

``--facts``: the same observations and planted duplicates added as facts (``memo.ops.facts.
add_fact``, the path of ``memo fact add`` and MCP ``memory_fact_add``), each citing one note
of its conversation's namespace; the check is ``memo.ops.near_dup.find_near_fact``.

Vectors are not computed (a fake background queue takes them): the check reads only the
keyword index, and embedding would only add the model's time to every add.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import statistics
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

from memo.ops.add import add_record
from memo.ops.facts import add_fact
from memo.profile import load_profile
from memo.store.db import open_db
from memo.stored import FactDraft, RecordDraft

REPO = Path(__file__).resolve().parents[1]
EXTRA_WORDS = ("also", "really", "recently", "still", "now", "again")
SWAPS = {"went": "headed", "said": "mentioned", "likes": "enjoys", "big": "large", "new": "recent",
         "happy": "glad", "started": "began", "help": "support", "job": "work", "friends": "pals"}


class NoEmbedding:
    """Takes the vectors off the add's path (the bench measures the check, not ONNX)."""

    model_id = None

    def submit(self, record_ids: Sequence[str] = (), fact_pks: Sequence[int] = ()) -> bool:
        return True


def observations(path: Path, per_conversation: int) -> list[tuple[str, str]]:
    out = []
    for sample in json.loads(path.read_text()):
        texts = []
        for session in sample["observation"].values():
            for facts in session.values():
                texts += [f[0] for f in facts if isinstance(f, list) and f and isinstance(f[0], str)]
        seen = list(dict.fromkeys(t.strip() for t in texts if t.strip()))
        out += [(f"locomo/{sample['sample_id']}", t) for t in seen[:per_conversation]]
    return out


def cjk_sentences(folder: Path) -> list[tuple[str, str]]:
    out = []
    for path in sorted(folder.glob("*.md")):
        lang = path.name.split("-")[0]
        text = path.read_text(encoding="utf-8")
        for piece in re.split(r"[。！？\n]+", text):
            piece = piece.strip(" #-")
            if len(piece) >= 10:
                out.append((f"cjk/{lang}", piece + "。"))
    return list(dict.fromkeys(out))


def edit_cjk(text: str, rng: random.Random) -> tuple[str, str]:
    chars = list(text.rstrip("。"))
    kind = rng.choice(["replace", "drop", "insert", "swap", "punct"])
    i = rng.randrange(len(chars))
    if kind == "replace":
        chars[i] = rng.choice("的了是在有和也就都而及与")
    elif kind == "drop":
        del chars[i]
    elif kind == "insert":
        chars.insert(i, rng.choice("的了是在也就都"))
    elif kind == "swap" and len(chars) > 2:
        i = min(i, len(chars) - 2)
        chars[i], chars[i + 1] = chars[i + 1], chars[i]
    else:
        kind = "punct"
        return kind, "".join(chars) + "！"
    return kind, "".join(chars) + "。"


def edit(text: str, rng: random.Random) -> tuple[str, str]:
    words = text.split()
    kind = rng.choice(["case+punct", "drop", "add", "replace", "swap", "typo"])
    if kind == "case+punct":
        out = text.rstrip(".") + ("!" if text.endswith(".") else ".")
        out = out[0].lower() + out[1:] if out[0].isupper() else out[0].upper() + out[1:]
        return kind, out
    i = rng.randrange(len(words))
    if kind == "drop" and len(words) > 3:
        del words[i]
    elif kind == "add":
        words.insert(i, rng.choice(EXTRA_WORDS))
    elif kind == "replace":
        j = next((k for k, w in enumerate(words) if w.lower() in SWAPS), i)
        words[j] = SWAPS.get(words[j].lower(), "things")
    elif kind == "swap" and len(words) > 2:
        i = min(i, len(words) - 2)
        words[i], words[i + 1] = words[i + 1], words[i]
    else:
        kind = "typo"
        w = words[i]
        if len(w) > 3:
            k = rng.randrange(1, len(w) - 1)
            words[i] = w[:k] + w[k + 1] + w[k] + w[k + 2:]
        else:
            words[i] = w + w[-1]
    return kind, " ".join(words)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--per-conversation", type=int, default=60)
    ap.add_argument("--planted", type=int, default=200)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--near-min", type=float, default=None, help="override index.near_min (choosing it)")
    ap.add_argument("--locomo", type=Path, default=REPO / "datasets" / "locomo" / "locomo10.json")
    ap.add_argument("--facts", action="store_true", help="add the observations and duplicates as facts")
    ap.add_argument("--cjk", action="store_true", help="sentences of datasets/cjk with character edits")
    args = ap.parse_args(argv)
    rng = random.Random(args.seed)
    base = cjk_sentences(REPO / "datasets" / "cjk" / "notes") if args.cjk else \
        observations(args.locomo, args.per_conversation)
    edit_one = edit_cjk if args.cjk else edit
    prof = load_profile("zscore")
    if args.near_min is not None:
        prof = prof.with_overrides({"index.near_min": args.near_min}, name=f"zscore-near-{args.near_min}")
    threshold = prof.index.near_min
    off = prof.with_overrides({"index.near_duplicates": "off"}, name="zscore-no-near-check")
    queue = NoEmbedding()
    with tempfile.TemporaryDirectory() as tmp:
        conn = open_db(Path(tmp) / "near.db", write=True)
        evidence: dict[str, str] = {}

        def add(ns: str, text: str, profile) -> tuple[str, str | None]:
            """(id of the stored or matched item, the item it was linked to)."""
            if not args.facts:
                rep = add_record(conn, RecordDraft(body=text, namespace=ns), background=queue, profile=profile)
                return rep.record_id, rep.near_duplicate_of
            if ns not in evidence:      # one note per namespace for the facts to cite
                evidence[ns] = add_record(conn, RecordDraft(body=f"conversation notes of {ns}", namespace=ns),
                                          background=queue, profile=off).record_id
            frep = add_fact(conn, FactDraft(text=text, evidence=(evidence[ns],), namespace=ns), embed=False,
                            profile=profile)
            return frep.fact_id, frep.near_duplicate_of

        ids: dict[tuple[str, str], str] = {}
        false_links, times = 0, []
        for ns, text in base:
            t0 = time.perf_counter()
            ids[(ns, text)], near_of = add(ns, text, prof)
            times.append(time.perf_counter() - t0)
            if near_of is not None:
                false_links += 1
        times_off = []
        for ns, text in rng.sample(base, min(200, len(base))):
            t0 = time.perf_counter()
            add(ns + "-off", text + " (timing copy)", off)
            times_off.append(time.perf_counter() - t0)
        found, wrong, by_kind = 0, 0, Counter()
        kinds = Counter()
        for ns, text in rng.sample(base, min(args.planted, len(base))):
            kind, dup = edit_one(text, rng)
            if rng.random() < 0.3:               # some get a second edit
                kind2, dup = edit_one(dup, rng)
                kind = f"{kind}+{kind2}"
            kinds[kind] += 1
            _, near_of = add(ns, dup, prof)
            if near_of == ids[(ns, text)]:
                found += 1
                by_kind[kind] += 1
            elif near_of is not None:
                wrong += 1
        conn.close()
    n = sum(kinds.values())
    what = "facts" if args.facts else "notes"
    source = "datasets/cjk sentences" if args.cjk else "LoCoMo observations"
    print(f"near-duplicate check (index.near_duplicates = link, near_min = {threshold}) on {len(base)} {source} "
          f"added as {what} in {len({ns for ns, _ in base})} namespaces, {n} planted duplicates (seed {args.seed})")
    print(f"  planted duplicates linked to their original: {found}/{n} = {found / n:.3f}; to another one: {wrong}")
    print(f"  original observations linked to an earlier one (false links): {false_links}/{len(base)} "
          f"= {false_links / len(base):.4f}")
    for kind in sorted(kinds):
        print(f"    {kind:<22} {by_kind[kind]:>3}/{kinds[kind]:<3}")
    p90 = statistics.quantiles(times, n=10)[-1]
    print(f"  add time with the check: median {statistics.median(times) * 1000:.1f} ms, p90 {p90 * 1000:.1f} ms")
    if times_off:
        print(f"  add time without it (same run): median {statistics.median(times_off) * 1000:.1f} ms; "
              f"ratio {statistics.median(times) / statistics.median(times_off):.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
