"""The ingest speed-ups of issue 16.4 change no answer: the seed's entity extraction (extract_seed: no record context) against the
frozen copy of the word-by-word extractor (entities_v1.py), exact-arm terms against the
token-by-token encoding, the markdown heading pre-check against the parser.  Inputs:
SciFact abstracts, LoCoMo turns, the markdown sample documents, and seeded random strings
built from the characters each rule looks at."""

from __future__ import annotations

import gzip
import json
import random
from pathlib import Path

import pytest

from memo.ingest import markdown_parse
from memo.text.entities import extract_seed as extract
from memo.text.identifiers import encode_token, exact_terms, identifier_tokens

from . import entities_v1

DATASETS = Path(__file__).resolve().parents[3] / "datasets"
_PIECES = [*"aAbBzZ019 _-./:@#+'’\n\t.,;:!?\"“”()[]{}<>ÉéßİıǅΣσς日本", "[[", "]]", "|", "The ", "of ", "the ",
           "New York ", "March ", "I ", "I'm ", "John's ", "ERR_X ", "net/http ", "@al ", "#py ", "IL-6 ", "p53 ",
           "setTimeout ", "McDonald ", "Bank of America and Wells Fargo. ", "\ud800"]


def _fuzz(n: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    return ["".join(rng.choice(_PIECES) for _ in range(rng.randint(0, 40))) for _ in range(n)]


def _real_texts() -> list[str]:
    texts: list[str] = []
    with gzip.open(DATASETS / "scifact" / "corpus.jsonl.gz", "rt", encoding="utf-8") as fh:
        for k, line in enumerate(fh):
            if k >= 1500:
                break
            doc = json.loads(line)
            texts.append(f"{doc['title']}\n{doc['text']}")
    for sample in json.loads((DATASETS / "locomo" / "locomo10.json").read_text(encoding="utf-8"))[:2]:
        for turns in sample["conversation"].values():
            if isinstance(turns, list):
                texts.extend(t.get("text", "") for t in turns)
    texts.extend(p.read_text(encoding="utf-8", errors="replace") for p in sorted(DATASETS.rglob("*.md"))[:80])
    return texts


def _as_tuples(mentions) -> list[tuple]:  # noqa: ANN001
    return [(m.key, m.name, m.kind, m.count) for m in mentions]


@pytest.fixture(scope="module")
def texts() -> list[str]:
    return _real_texts() + _fuzz(6000, 16)


def test_entities_same_as_frozen_extractor(texts):
    for t in texts:
        assert _as_tuples(extract(t)) == _as_tuples(entities_v1.extract(t)), t[:200]
    assert sum(len(extract(t)) for t in texts) > 5000          # the inputs do name things


def test_entities_with_speaker_and_explicit_same_as_frozen():
    for t in _fuzz(500, 7):
        got = extract(t, speaker="Caroline", explicit=["Acme Corp", " "], fact_terms=["Bob"])
        assert _as_tuples(got) == _as_tuples(entities_v1.extract(t, speaker="Caroline", explicit=["Acme Corp", " "],
                                                                   fact_terms=["Bob"]))


def test_exact_terms_same_as_token_by_token(texts):
    for t in texts:
        assert exact_terms(t) == " ".join(encode_token(x) for x in identifier_tokens(t)), t[:200]
    assert exact_terms("") == "" and exact_terms(" .- ") == ""


def test_heading_precheck_same_as_parser(texts):
    extra = ["Title\n===", "Title\r---", "Title\r\n  ---  ", "   # h", "a\n= =", "> q\n> ===", "- item\n  ---", "x\t\n-\t"]
    for t in texts + extra + _fuzz(4000, 3):
        parsed = any(tok.type == "heading_open" and tok.level == 0 for tok in markdown_parse._parser().parse(t))
        assert markdown_parse.has_headings(t) == parsed, repr(t[:200])
