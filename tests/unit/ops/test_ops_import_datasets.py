"""--format beir / locomo go through the eval helper's parsers (memo.ingest.beir/locomo)."""

import gzip
import json

from memo import ops
from memo.ops.importer import ImportOptions


def _beir(path, docs):
    with gzip.open(path, "wt", encoding="utf-8") as fh:
        for d in docs:
            fh.write(json.dumps(d) + "\n")


def test_beir_corpus_import_reimport_and_update(fresh_db, tmp_path):
    corpus = tmp_path / "corpus.jsonl.gz"
    docs = [{"_id": "d1", "title": "Aspirin", "text": "Aspirin reduces fever.", "metadata": {}},
            {"_id": "d2", "title": "Statins", "text": "Statins lower cholesterol.", "metadata": {}}]
    _beir(corpus, docs)
    events = []
    rep = ops.import_path(fresh_db, corpus, ImportOptions(format="beir", namespace="sf", author="beir"),
                          progress=events.append)
    assert (events[-1].done, events[-1].total) == (2, 2)
    assert (rep.added, rep.format) == (2, "beir")
    recs = {r.import_path for r in ops.list_records(fresh_db)}
    assert recs == {corpus.resolve().as_posix()}   # the input file's absolute path
    rec = ops.get(fresh_db, rep.record_ids[0])
    assert rec.ext_id == "d1" and rec.namespace == "sf" and rec.kind == "doc" and rec.author == "beir"
    assert rec.passages[0].section == "Aspirin" and rec.passages[0].ext_id == "d1"
    assert ops.import_path(fresh_db, corpus, ImportOptions(format="beir", namespace="sf")).skipped == 2
    docs[1]["text"] = "Statins lower LDL cholesterol."
    _beir(corpus, docs)
    rep3 = ops.import_path(fresh_db, corpus, ImportOptions(format="beir", namespace="sf"))
    assert (rep3.added, rep3.updated, rep3.skipped) == (0, 1, 1)


def test_locomo_import_dated_turns(fresh_db, tmp_path):
    data = [{"sample_id": "conv-1", "conversation": {
        "speaker_a": "Ann", "speaker_b": "Bob",
        "session_1_date_time": "1:56 pm on 8 May, 2023",
        "session_1": [{"speaker": "Ann", "dia_id": "D1:1", "text": "I adopted a dog."},
                      {"speaker": "Bob", "dia_id": "D1:2", "text": "Nice! What breed?"}],
        "session_2_date_time": "10:00 am on 9 June, 2023",
        "session_2": [{"speaker": "Bob", "dia_id": "D2:1", "text": "How is the dog?"}]},
        "qa": []}]
    path = tmp_path / "locomo.json"
    path.write_text(json.dumps(data))
    rep = ops.import_path(fresh_db, path, ImportOptions(format="locomo"))
    assert rep.added == 2 and rep.passages == 3
    rec = ops.get(fresh_db, rep.record_ids[0])
    assert rec.namespace == "locomo/conv-1" and rec.kind == "conversation"
    p = rec.passages[0]
    assert (p.speaker, p.event_at, p.ext_id) == ("Ann", "2023-05-08T13:56:00.000000Z", "D1:1")   # stored as its UTC moment (memo.text.when)
    assert ops.import_path(fresh_db, path, ImportOptions(format="locomo")).skipped == 2
