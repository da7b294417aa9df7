"""A tiny labelled data set in BEIR layout, for tests, the notebook and trying the harness.

Twelve short documents about four topics, train and test queries with qrels, and one
query whose topic is absent (for abstention, in the user-JSONL variant).  Small enough
that a full replay (index build included) takes well under a second in keyword mode.
"""

from __future__ import annotations

import json
from pathlib import Path

DOCS = {
    "d01": ("Rotating API keys", "Rotate the API keys every 90 days with the vault rotate command."),
    "d02": ("Key rotation runbook", "The runbook for key rotation: revoke the old key after the new one works."),
    "d03": ("Vault setup", "Vault stores secrets; the root token is kept offline in the safe."),
    "d04": ("Postgres backups", "Nightly pg_dump backups are copied to object storage and kept 30 days."),
    "d05": ("Restoring a backup", "To restore, download the dump and run pg_restore into a fresh database."),
    "d06": ("Backup monitoring", "An alert fires when the nightly backup job has not finished by 6 am."),
    "d07": ("Deploying the web app", "Deploys go through the CI pipeline; merge to main and the app ships."),
    "d08": ("Rollback procedure", "Roll back a bad deploy by re-running the previous pipeline build."),
    "d09": ("Feature flags", "Risky changes ship behind feature flags that can be turned off at once."),
    "d10": ("Team lunch", "The team lunch is on Fridays at the Italian place near the office."),
    "d11": ("Office plants", "Water the office plants on Mondays; the cactus only once a month."),
    "d12": ("Parking", "Visitor parking is behind the building; ask reception for a pass."),
}
QUERIES = {
    # qid: (text, split, {doc: grade})
    "q1": ("how do we rotate api keys", "test", {"d01": 2, "d02": 1}),
    "q2": ("restore the postgres database from a backup", "test", {"d05": 2, "d04": 1}),
    "q3": ("roll back a deploy", "test", {"d08": 2, "d07": 1}),
    "q4": ("when is team lunch", "test", {"d10": 1}),
    "q5": ("where are secrets stored", "train", {"d03": 1}),
    "q6": ("backup job alert", "train", {"d06": 1}),
    "q7": ("turn off a risky change", "train", {"d09": 1}),
    "q8": ("visitor parking pass", "train", {"d12": 1}),
    "q9": ("watering plants", "train", {"d11": 1}),
}
UNANSWERABLE = {"u1": "quarterly revenue forecast spreadsheet"}


def write_beir(folder: Path) -> Path:
    """Write corpus.jsonl, queries.jsonl and qrels/{train,test}.tsv into ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "qrels").mkdir(exist_ok=True)
    with (folder / "corpus.jsonl").open("w", encoding="utf-8") as fh:
        for did, (title, text) in DOCS.items():
            fh.write(json.dumps({"_id": did, "title": title, "text": text, "metadata": {}}) + "\n")
    with (folder / "queries.jsonl").open("w", encoding="utf-8") as fh:
        for qid, (text, _, _) in QUERIES.items():
            fh.write(json.dumps({"_id": qid, "text": text, "metadata": {}}) + "\n")
    for split in ("train", "test"):
        lines = ["query-id\tcorpus-id\tscore"]
        lines += [f"{qid}\t{d}\t{g}" for qid, (_, s, rel) in QUERIES.items() if s == split for d, g in rel.items()]
        (folder / "qrels" / f"{split}.tsv").write_text("\r\n".join(lines) + "\r\n", encoding="utf-8")
    return folder


def write_user_queries(path: Path) -> Path:
    """The same queries in the user JSONL format (relevant = BEIR doc ids = record ext_ids),
    plus one unanswerable query."""
    with path.open("w", encoding="utf-8") as fh:
        for qid, (text, split, rel) in QUERIES.items():
            fh.write(json.dumps({"id": qid, "query": text, "relevant": rel, "split": split}) + "\n")
        for qid, text in UNANSWERABLE.items():
            fh.write(json.dumps({"id": qid, "query": text, "unanswerable": True, "split": "test"}) + "\n")
    return path
