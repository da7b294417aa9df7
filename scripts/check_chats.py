"""Check the ``chats`` labelled conversation set (datasets/chats/SOURCE.md); exit 1 on a problem.

The file is in LoCoMo's JSON shape (``memo.ingest.locomo`` reads it) plus two fields the
LoCoMo loader ignores: a sample-level ``split`` (``train`` | ``test``) and a per-question
``question_date`` (the question's reference time, same format as the session dates).
Checks:

* shape: a list of samples, each with a unique ``sample_id``, a ``split``, ``speaker_a`` /
  ``speaker_b``, ``session_<n>`` (n = 1, 2, ... without gaps) with a parseable
  ``session_<n>_date_time``; every turn has ``speaker`` (one of the two), ``text`` and
  ``dia_id`` = ``D<n>:<position>``;
* dates: parsed by memo's own parser (``memo.ingest.locomo.parse_session_date``; a copy of
  its formats when memo cannot be imported, with a warning), strictly increasing within a
  conversation; a ``question_date`` not before the last session;
* size (the brief of issue 28.1): 8-15 sessions per conversation, 6-20 turns per session;
* questions: a known category; an answerable one has an answer and 1+ evidence ids, each
  naming a turn of its own conversation (no duplicates); an unanswerable one (category 5,
  LoCoMo's convention) has none; no question names a speaker (any word of a speaker's
  name, as a whole word, any case, also with 's) or says "user" / "assistant"; no
  question is asked twice in a conversation.

Prints turns, questions per category and per split.  Usage::

    .venv/bin/python scripts/check_chats.py [datasets/chats/chats.json] [--quiet]
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections import Counter
from datetime import datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

try:
    from memo.ingest.locomo import parse_session_date
except ImportError as exc:  # memo not installed or mid-edit: the same formats, copied
    print(f"warning: memo.ingest.locomo not importable ({exc}); using a copy of its date formats",
          file=sys.stderr)

    def parse_session_date(value: str) -> str | None:
        text = " ".join(str(value).split())
        for fmt in ("%I:%M %p on %d %B, %Y", "%I:%M %p on %d %b, %Y", "%I:%M%p on %d %B, %Y"):
            try:
                return datetime.strptime(text, fmt).strftime("%Y-%m-%dT%H:%M:%SZ")
            except ValueError:
                continue
        return None

DEFAULT = Path(__file__).resolve().parents[1] / "datasets" / "chats" / "chats.json"
CATEGORIES = {"single", "multi", "temporal", "update", "preference"}
UNANSWERABLE = "5"
SPLITS = {"train", "test"}
SESSIONS = (8, 15)
TURNS = (6, 20)
FORBIDDEN = ("user", "assistant")
_SESSION = re.compile(r"session_(\d+)")
_DIA = re.compile(r"D(\d+):(\d+)")


def _names_word(question: str, word: str) -> bool:
    return re.search(rf"(?<!\w){re.escape(word)}s?(?:'s|\u2019s)?(?!\w)", question, re.IGNORECASE) is not None


def check_sample(sample: object, index: int, problems: list[str], stats: Counter[str]) -> None:
    if not isinstance(sample, dict):
        problems.append(f"#{index}: a sample must be an object")
        return
    sid = sample.get("sample_id")
    where = f"{sid}" if isinstance(sid, str) and sid else f"#{index}"
    if not isinstance(sid, str) or not sid.strip():
        problems.append(f"{where}: no sample_id")
    split = sample.get("split")
    if split not in SPLITS:
        problems.append(f"{where}: split {split!r} is not one of {sorted(SPLITS)}")
    conv = sample.get("conversation")
    if not isinstance(conv, dict):
        problems.append(f"{where}: no conversation object")
        return
    speakers = [conv.get("speaker_a"), conv.get("speaker_b")]
    if not all(isinstance(s, str) and s.strip() for s in speakers) or speakers[0] == speakers[1]:
        problems.append(f"{where}: speaker_a / speaker_b must be two different non-empty strings")
        return
    numbers = sorted(int(m.group(1)) for k in conv if (m := _SESSION.fullmatch(k)))
    if numbers != list(range(1, len(numbers) + 1)):
        problems.append(f"{where}: sessions must be numbered 1..n without gaps, got {numbers}")
    if not SESSIONS[0] <= len(numbers) <= SESSIONS[1]:
        problems.append(f"{where}: {len(numbers)} sessions (want {SESSIONS[0]}-{SESSIONS[1]})")
    known: set[str] = set()
    previous: tuple[int, str] | None = None
    last_date = None
    for n in numbers:
        key = f"session_{n}"
        raw_date = conv.get(f"{key}_date_time")
        date = parse_session_date(raw_date) if isinstance(raw_date, str) else None
        if date is None:
            problems.append(f"{where}/{key}: date {raw_date!r} does not parse")
        elif previous is not None and date <= previous[1]:
            problems.append(f"{where}/{key}: date {raw_date!r} is not after session {previous[0]}'s")
        if date is not None:
            previous = (n, date)
            last_date = date
        turns = conv[key]
        if not isinstance(turns, list):
            problems.append(f"{where}/{key}: turns must be a list")
            continue
        if not TURNS[0] <= len(turns) <= TURNS[1]:
            problems.append(f"{where}/{key}: {len(turns)} turns (want {TURNS[0]}-{TURNS[1]})")
        for pos, turn in enumerate(turns, start=1):
            if not isinstance(turn, dict):
                problems.append(f"{where}/{key}: turn {pos} is not an object")
                continue
            if turn.get("dia_id") != f"D{n}:{pos}":
                problems.append(f"{where}/{key}: turn {pos} has dia_id {turn.get('dia_id')!r}, want D{n}:{pos}")
            if turn.get("speaker") not in speakers:
                problems.append(f"{where}/{key}: turn {pos} speaker {turn.get('speaker')!r} is neither speaker")
            if not isinstance(turn.get("text"), str) or not turn["text"].strip():
                problems.append(f"{where}/{key}: turn {pos} has no text")
            known.add(str(turn.get("dia_id")))
            stats["turns"] += 1
        stats["sessions"] += 1
    words = {w for s in speakers for w in re.findall(r"\w+", s)} | set(FORBIDDEN)
    qa = sample.get("qa")
    if not isinstance(qa, list) or not qa:
        problems.append(f"{where}: no qa list")
        return
    seen: set[str] = set()
    for i, item in enumerate(qa):
        at = f"{where}/qa[{i}]"
        if not isinstance(item, dict):
            problems.append(f"{at}: not an object")
            continue
        question = item.get("question")
        if not isinstance(question, str) or not question.strip():
            problems.append(f"{at}: no question")
            continue
        folded = " ".join(question.casefold().split())
        if folded in seen:
            problems.append(f"{at}: asked twice: {question!r}")
        seen.add(folded)
        for w in sorted(words):
            if _names_word(question, w):
                problems.append(f"{at}: names {w!r}: {question!r}")
        category = str(item.get("category"))
        evidence = item.get("evidence")
        if not isinstance(evidence, list) or not all(isinstance(e, str) for e in evidence):
            problems.append(f"{at}: evidence must be a list of turn ids")
            continue
        if category == UNANSWERABLE:
            if evidence:
                problems.append(f"{at}: unanswerable question with evidence {evidence}")
        elif category not in CATEGORIES:
            problems.append(f"{at}: unknown category {category!r}")
        else:
            if not evidence:
                problems.append(f"{at}: answerable question without evidence")
            if not isinstance(item.get("answer"), str) or not item["answer"].strip():
                problems.append(f"{at}: no answer")
        if len(set(evidence)) != len(evidence):
            problems.append(f"{at}: duplicate evidence {evidence}")
        for e in evidence:
            if not _DIA.fullmatch(e) or e not in known:
                problems.append(f"{at}: evidence {e!r} names no turn of {where}")
        if category == "multi" and len(evidence) < 2:
            problems.append(f"{at}: a multi question needs 2+ evidence turns")
        qdate = item.get("question_date")
        if qdate is not None:
            parsed = parse_session_date(qdate) if isinstance(qdate, str) else None
            if parsed is None:
                problems.append(f"{at}: question_date {qdate!r} does not parse")
            elif last_date is not None and parsed < last_date:
                problems.append(f"{at}: question_date {qdate!r} is before the last session")
        name = "unanswerable" if category == UNANSWERABLE else category
        stats[f"q:{split}:{name}"] += 1
        stats[f"evidence:{split}"] += len(evidence)
    stats[f"conversations:{split}"] += 1


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("path", nargs="?", type=Path, default=DEFAULT)
    ap.add_argument("--quiet", action="store_true", help="print only the problems")
    args = ap.parse_args()
    try:
        data = json.loads(args.path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        print(f"{args.path}: {exc}", file=sys.stderr)
        return 1
    problems: list[str] = []
    stats: Counter[str] = Counter()
    if not isinstance(data, list) or not data:
        problems.append("expected a non-empty JSON list of samples")
        data = []
    ids = Counter(s.get("sample_id") for s in data if isinstance(s, dict))
    problems += [f"sample_id {k!r} appears {n} times" for k, n in ids.items() if n > 1]
    for index, sample in enumerate(data):
        check_sample(sample, index, problems, stats)
    if not args.quiet:
        cats = sorted({k.split(":")[2] for k in stats if k.startswith("q:")})
        print(f"{len(data)} conversations, {stats['sessions']} sessions, {stats['turns']} turns")
        print(f"{'category':<14}" + "".join(f"{s:>8}" for s in sorted(SPLITS)) + f"{'all':>8}")
        for c in cats:
            row = [stats[f"q:{s}:{c}"] for s in sorted(SPLITS)]
            print(f"{c:<14}" + "".join(f"{v:>8}" for v in row) + f"{sum(row):>8}")
        totals = [sum(v for k, v in stats.items() if k.startswith(f"q:{s}:")) for s in sorted(SPLITS)]
        print(f"{'questions':<14}" + "".join(f"{v:>8}" for v in totals) + f"{sum(totals):>8}")
        conv = [stats[f"conversations:{s}"] for s in sorted(SPLITS)]
        print(f"{'conversations':<14}" + "".join(f"{v:>8}" for v in conv) + f"{sum(conv):>8}")
    for p in problems:
        print(f"problem: {p}", file=sys.stderr)
    if problems:
        print(f"{len(problems)} problem(s)", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
