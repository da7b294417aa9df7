"""LoCoMo observations as facts (the LoCoMo paper's "observations" retrieval setting).

Each sample holds ``observation: {"session_<n>_observation": {speaker: [[text, evidence],
...]}}`` where evidence is a turn id (``"D1:3"``), a list of them, or a joined string.  Each
entry becomes one fact in the conversation's namespace ``<prefix>/<sample_id>`` (subject =
the speaker, event date = the session's date, source ``locomo:observation``) whose evidence
are the turns, resolved as passage ext_ids in that namespace (memo.store.facts).

Evidence ids are repaired or dropped exactly as for the questions' evidence
(``normalise_evidence``, shared with eval/datasets/locomo.py): joined ids are split on
``;``, ``,`` or whitespace, ``D30:05`` -> ``D30:5``, ``D:11:26`` -> ``D11:26``, a bare
``D`` or an id naming no turn of the conversation is dropped; an observation left with no
evidence is skipped.  Every action is counted.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from memo.ingest.locomo import load_samples, parse_session_date, sessions
from memo.stored import FactDraft

_ID = re.compile(r"D:?(\d+):(\d+)")
_OBS_KEY = re.compile(r"session_(\d+)_observation")
SOURCE = "locomo:observation"


def normalise_evidence(raw: list[Any], known: set[str], counts: Counter[str]) -> list[str]:
    """Repair LoCoMo evidence ids; ``known`` is the set of turn ids of the conversation."""
    out: list[str] = []
    for item in raw:
        pieces = [p for p in re.split(r"[;,\s]+", str(item).strip()) if p]
        if len(pieces) > 1:
            counts["split"] += 1
        for piece in pieces:
            m = _ID.fullmatch(piece)
            if m is None:
                counts["dropped_bare" if piece == "D" else "dropped_malformed"] += 1
                continue
            if piece.startswith("D:"):
                counts["extra_colon"] += 1
            fixed = f"D{int(m.group(1))}:{int(m.group(2))}"
            if fixed != piece.replace("D:", "D", 1):
                counts["zero_pad"] += 1
            if fixed not in known:
                counts["dropped_unknown"] += 1
                continue
            if fixed not in out:
                out.append(fixed)
    return out


def sample_observations(sample: dict[str, Any], namespace: str, counts: Counter[str]
                        ) -> Iterator[tuple[str, FactDraft]]:
    """(where, draft) for each observation of one sample with at least one valid turn."""
    sid = str(sample.get("sample_id"))
    sess = sessions(sample.get("conversation") or {})
    known = {str(t.get("dia_id")) for _, turns, _ in sess for t in turns}
    conv = sample.get("conversation") or {}
    obs = sample.get("observation")
    if not isinstance(obs, dict):
        return
    numbered = sorted((int(m.group(1)), key) for key in obs if isinstance(key, str) and (m := _OBS_KEY.fullmatch(key)))
    for n, key in numbered:
        by_speaker = obs[key]
        if not isinstance(by_speaker, dict):
            counts["dropped_session"] += 1
            continue
        date = parse_session_date(str(conv.get(f"session_{n}_date_time", "")))
        for speaker, entries in by_speaker.items():
            for i, entry in enumerate(entries if isinstance(entries, list) else []):
                counts["observations"] += 1
                if not (isinstance(entry, list) and len(entry) == 2 and isinstance(entry[0], str)
                        and entry[0].strip()):
                    counts["dropped_observation"] += 1
                    continue
                text, ev = entry
                refs = ev if isinstance(ev, list) else [ev]
                counts["references"] += len(refs)
                evidence = normalise_evidence(refs, known, counts)
                if not evidence:
                    counts["no_evidence"] += 1
                    continue
                yield (f"#{sid}/{key}/{speaker}/{i}",
                       FactDraft(text=text.strip(), evidence=tuple(evidence), namespace=namespace,
                                 subject=str(speaker), event_at=date, author="locomo", source=SOURCE,
                                 meta={"session": n}))


def iter_observations(path: str | Path, namespace_prefix: str = "locomo",
                      counts: Counter[str] | None = None) -> Iterator[tuple[str, FactDraft]]:
    """Every observation of every sample as a fact draft (``counts`` collects the repairs)."""
    counts = counts if counts is not None else Counter()
    for sample in load_samples(path):
        sid = str(sample.get("sample_id") or "").strip()
        if sid:
            yield from sample_observations(sample, f"{namespace_prefix}/{sid}", counts)
