"""Everything a memo export must carry over, read from either backend (tests only),
keyed by public ids: pks differ between two databases holding the same knowledge base."""

from __future__ import annotations

import json

import numpy as np

from memo.store.dialect import is_postgres

DERIVED = ("entities", "mentions")     # written again by an import, as memo reindex writes them
CANONICAL = ("records", "tags", "passages", "facts", "evidence", "vectors", "fact_vectors")


def canonical(conn) -> dict[str, list]:
    """Everything an export must reproduce, keyed by public ids (pks differ between bases)."""
    pg = is_postgres(conn)
    vec = "vec::text" if pg else "vec"

    def rows(sql: str) -> list:
        return sorted((tuple(r) for r in conn.execute(sql)), key=repr)

    def vectors(table: str, key: str, parent: str) -> list:
        out = []
        for pid, model, v in conn.execute(f"SELECT p.id, t.model_id, t.{vec} FROM {table} t "
                                          f"JOIN {parent} p ON p.pk = t.{key}"):
            arr = np.asarray(json.loads(v), dtype="<f4") if pg else np.frombuffer(bytes(v), dtype="<f4")
            out.append((pid, model, arr.tobytes()))
        return sorted(out)

    records = [(*r[:-1], json.loads(r[-1]) if isinstance(r[-1], str) else r[-1]) for r in rows(
        "SELECT id, namespace, kind, title, source, library, version, event_at, recorded_at, superseded_at, "
        "superseded_by, forgotten_at, trust, author, import_path, ext_id, content_hash, body, meta FROM records")]
    facts = [(*r[:-1], json.loads(r[-1]) if isinstance(r[-1], str) else r[-1]) for r in rows(
        "SELECT id, namespace, text, subject, predicate, object, event_at, recorded_at, superseded_at, "
        "superseded_by, forgotten_at, trust, author, source, content_hash, meta FROM facts")]
    return {
        "records": records,
        "tags": rows("SELECT record_id, tag FROM record_tags"),
        "passages": rows("SELECT id, record_id, ord, section, text, speaker, event_at, ext_id, tokens FROM passages"),
        "facts": facts,
        "evidence": rows("SELECT f.id, p.id FROM fact_evidence e JOIN facts f ON f.pk = e.fact_pk "
                         "JOIN passages p ON p.pk = e.passage_pk"),
        "vectors": vectors("vectors", "passage_pk", "passages"),
        "fact_vectors": vectors("fact_vectors", "fact_pk", "facts"),
        # an entity no mention names any more (its record forgotten) is left behind by forget
        # and not written by an import: the ones in use are the same
        "entities": rows("SELECT key, name, kind FROM entities e WHERE EXISTS "
                         "(SELECT 1 FROM mentions m WHERE m.entity_pk = e.pk)"),
        "mentions": rows("SELECT p.id, e.key, m.count, f.id FROM mentions m JOIN passages p ON p.pk = m.passage_pk "
                         "JOIN entities e ON e.pk = m.entity_pk LEFT JOIN facts f ON f.pk = m.fact_pk"),
    }
