"""Entity extraction gives the answers it gave before issue 31.3: ``extract``,
``extract_record`` and ``extract_seed`` against ``entities_v2.py``, the extractor of
9fadf36 frozen, on SciFact abstracts, LoCoMo turns with speakers, the markdown sample
documents with heading paths, standard-library source, and seeded random strings built
from the characters each rule looks at.  (31.3's extraction caches were dropped again, see
docs/scale.md; this guards the next speed-up.)"""

from __future__ import annotations

import random
import sysconfig
from pathlib import Path

import pytest

from memo.text import entities

from . import entities_v2
from .test_extract_fast import _fuzz, _real_texts


def _tuples(mentions) -> list[tuple]:  # noqa: ANN001
    return [(m.key, m.name, m.kind, m.count) for m in mentions]


@pytest.fixture(scope="module")
def texts() -> list[str]:
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    code = [p.read_text(encoding="utf-8", errors="replace")[:6000] for p in sorted(stdlib.glob("*.py"))[:60]]
    return _real_texts() + code + _fuzz(6000, 31)


def test_extract_same_as_before(texts):
    n = 0
    for t in texts:
        got = _tuples(entities.extract(t))
        assert got == _tuples(entities_v2.extract(t)), t[:200]
        n += len(got)
    assert n > 10_000                      # the inputs do name things


def test_extract_record_same_as_before(texts):
    rng = random.Random(31)
    for k in range(0, len(texts) - 6, 3):
        parts = texts[k:k + rng.randint(1, 6)]
        title = rng.choice([None, "Alice Moreau", "The Flower of Hawaii", texts[k][:60], "net/http"])
        speakers = [rng.choice([None, "Caroline", "Mel"]) for _ in parts]
        heads = [rng.choice(["", "Install > Linux", "Memo of the Day > API: ERR_X", parts[0][:40]]) for _ in parts]
        explicit = rng.choice([(), ("Acme Corp", " "), ("Bob",)])
        got = entities.extract_record(parts, speakers=speakers, title=title, headings=heads, explicit=explicit)
        want = entities_v2.extract_record(parts, speakers=speakers, title=title, headings=heads, explicit=explicit)
        assert [_tuples(g) for g in got] == [_tuples(w) for w in want], (title, [p[:80] for p in parts])


def test_seed_and_speaker_forms_same_as_before(texts):
    for t in texts[::5]:
        kw = {"speaker": "Caroline", "explicit": ["Acme Corp", " "], "fact_terms": ["Bob"]}
        assert _tuples(entities.extract(t, **kw)) == _tuples(entities_v2.extract(t, **kw))
        assert _tuples(entities.extract_seed(t)) == _tuples(entities_v2.extract_seed(t))
