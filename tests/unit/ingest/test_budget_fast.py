"""count_pieces' word-by-word path (issue 31.3) gives the tokenizer's
own count of the whole text, and the splitters cut the same passages with it as with the
tokenizer on every text (the path before the change)."""

import gzip
import json
import random
import re
import sysconfig
from pathlib import Path

import pytest

from memo.ingest import budget
from memo.ingest.split import split_record
from memo.stored import RecordDraft
from memo.text.folding import scrub_surrogates

ROOT = Path(__file__).resolve().parents[3]
SCIFACT = ROOT / "datasets" / "scifact" / "corpus.jsonl.gz"
STDLIB = Path(sysconfig.get_paths()["stdlib"])

pytest.importorskip("tokenizers")


def _oracle():
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(budget.TOKENIZER))
    tok.no_truncation()
    tok.no_padding()
    return lambda text: (0 if not text or text.isspace()
                         else len(tok.encode(scrub_surrogates(text), add_special_tokens=False).ids))


def _scifact(n: int) -> list[dict]:
    out = []
    with gzip.open(SCIFACT, "rt", encoding="utf-8") as fh:
        for line in fh:
            out.append(json.loads(line))
            if len(out) >= n:
                break
    return out


# Characters BERT's normaliser deletes, maps, splits or decomposes, and str.split's whitespace.
_ODD = ["\x0b", "\x0c", "\x1c", "\x1f", "\x85", "\x00", "\x07", "\x7f", "\ufffd", "\u200b", "\u00ad", "é", " É",
        "e\u0301", " \u0301x", "ß", "İ", "ﬁ", "Σσς", "日本", "語x", "\u00a0", "\u1680", "\u2002", "\u2028", "\u2029",
        "\u202f", "\u3000", "β-cell", "µg", "–", "“q”", "😀", "\ud83d\ude00", "\ud800"]


def _fuzz(rng: random.Random) -> str:
    """Printable ASCII with every kind of character the fast path must get right: runs of
    punctuation, digits, tabs, CR/LF, words over WordPiece's 100-character limit, and
    now and then a character that sends the text to the tokenizer (control, non-ASCII)."""
    alphabet = ("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789" * 3
                + "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~" + "    \t\n\r")
    parts = []
    for _ in range(rng.randint(0, 40)):
        k = rng.random()
        if k < 0.05:
            parts.append("x" * rng.randint(95, 130))
        elif k < 0.15:
            parts.append(rng.choice(_ODD))
        else:
            parts.append("".join(rng.choice(alphabet) for _ in range(rng.randint(1, 12))))
        parts.append(rng.choice([" ", "", "\n", "\t", "  "]))
    return "".join(parts)


def test_counts_equal_the_tokenizers_on_real_and_fuzzed_text():
    oracle = _oracle()
    texts = []
    for d in _scifact(400):
        texts += [d["title"], d["text"], *d["text"].split(". ")]
    for f in sorted(STDLIB.glob("*.py"))[:40]:
        src = f.read_text(encoding="utf-8", errors="replace")
        texts += [src[i:i + 700] for i in range(0, min(len(src), 20_000), 700)]
    rng = random.Random(31)
    texts += [_fuzz(rng) for _ in range(3000)]
    texts += ["", " ", "\n\n", "a", "A.B", "well-being", "e.g.", "x" * 100, "x" * 101, "don't stop", "a\x0bb", "a\x1cb"]
    budget._WORD_PIECES.clear()
    fast = sum(1 for t in texts if not budget._JOINING.search(t))
    assert fast > len(texts) * 0.8          # the word path is what is tested
    for t in texts:
        assert budget.count_pieces(t) == oracle(t), repr(t[:80])
    assert budget.count_many(texts[:200]) == [oracle(t) for t in texts[:200]]


def test_full_cache_starts_afresh_with_the_same_counts(monkeypatch):
    oracle = _oracle()
    monkeypatch.setattr(budget, "WORD_CACHE_MAX", 5)
    budget._WORD_PIECES.clear()
    text = "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda"
    assert budget.count_pieces(text) == oracle(text)
    assert len(budget._WORD_PIECES) <= 5
    budget._WORD_PIECES.clear()


def test_splits_are_those_of_the_tokenizer_path(monkeypatch):
    """The passages split_record cuts (texts, sections) on SciFact abstracts, long
    standard-library sources as text and markdown, are those cut with every count made by
    the tokenizer (a pattern that matches everything turns the fast path off)."""
    drafts = [RecordDraft(body=d["text"], title=d["title"], namespace="t", kind="note") for d in _scifact(300)]
    for f in sorted(STDLIB.glob("*.py"))[:12]:
        src = f.read_text(encoding="utf-8", errors="replace")[:30_000]
        drafts.append(RecordDraft(body=src, title=f.name, namespace="t", kind="note"))
        drafts.append(RecordDraft(body=re.sub(r"^def ", "# def ", src, flags=re.M), title=f.stem, namespace="t",
                                  kind="doc"))
    budget._WORD_PIECES.clear()
    fast = [split_record(d) for d in drafts]
    monkeypatch.setattr(budget, "_JOINING", re.compile(r"[\s\S]"))
    slow = [split_record(d) for d in drafts]
    assert sum(len(p) for p in fast) > len(drafts)
    assert fast == slow
