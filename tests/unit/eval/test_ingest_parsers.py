"""memo.ingest.beir / memo.ingest.locomo: the corpus parsers `memo import` and the eval use."""

from __future__ import annotations

import gzip
import json

import pytest

from memo.errors import DatasetError
from memo.ingest.beir import iter_corpus
from memo.ingest.locomo import iter_conversations, parse_session_date


def _write_corpus(path, docs, gz=False):
    data = "".join(json.dumps(d) + "\n" for d in docs).encode()
    path.write_bytes(gzip.compress(data) if gz else data)


@pytest.mark.parametrize("gz", [False, True])
def test_beir_corpus(tmp_path, gz):
    p = tmp_path / ("corpus.jsonl.gz" if gz else "corpus.jsonl")
    _write_corpus(p, [{"_id": "d1", "title": "T one", "text": "body one", "metadata": {}},
                      {"_id": "d2", "title": "", "text": "only text"},
                      {"_id": "d3", "title": "", "text": ""}], gz=gz)
    drafts = list(iter_corpus(p, namespace="sf"))
    assert [d.ext_id for d in drafts] == ["d1", "d2"]
    d1 = drafts[0]
    assert d1.kind == "doc" and d1.namespace == "sf" and d1.title == "T one"
    assert d1.body == "T one\n\nbody one"
    assert len(d1.passages) == 1
    assert d1.passages[0].section == "T one" and d1.passages[0].text == "body one"
    assert drafts[1].body == "only text"


def test_beir_bad_line(tmp_path):
    p = tmp_path / "corpus.jsonl"
    p.write_text('{"_id": "a", "text": "x"}\nnot json\n')
    with pytest.raises(DatasetError, match=":2:"):
        list(iter_corpus(p))


def test_session_date():
    assert parse_session_date("1:56 pm on 8 May, 2023") == "2023-05-08T13:56:00Z"
    assert parse_session_date("12:09 am on 13 September, 2023") == "2023-09-13T00:09:00Z"
    assert parse_session_date("whenever") is None


def test_locomo_sessions(tmp_path):
    sample = {"sample_id": "conv-1", "qa": [], "conversation": {
        "speaker_a": "A", "speaker_b": "B",
        "session_2_date_time": "9:00 am on 2 June, 2023",
        "session_2": [{"speaker": "B", "dia_id": "D2:1", "text": "later"}],
        "session_1_date_time": "1:56 pm on 8 May, 2023",
        "session_1": [{"speaker": "A", "dia_id": "D1:1", "text": "hi"},
                      {"speaker": "B", "dia_id": "D1:2", "text": "look", "blip_caption": "a dog"}],
        "session_3_date_time": "9:00 am on 3 June, 2023", "session_3": []}}
    p = tmp_path / "locomo.json"
    p.write_text(json.dumps([sample]))
    drafts = list(iter_conversations(p, namespace_prefix="lc"))
    assert [d.title for d in drafts] == ["conv-1 session 1", "conv-1 session 2"]
    s1 = drafts[0]
    assert s1.kind == "conversation" and s1.namespace == "lc/conv-1"
    assert s1.event_at == "2023-05-08T13:56:00Z"
    assert [p.text for p in s1.passages] == ["A: hi", "B: look [image: a dog]"]
    assert [p.ext_id for p in s1.passages] == ["D1:1", "D1:2"]
    assert s1.passages[1].speaker == "B" and s1.passages[1].section == "session 1"
    assert s1.passages[1].event_at == s1.event_at
