"""``memo import`` of a file ``memo export`` wrote: the records and facts as they were.

An export is read twice.  The first pass (``export_lines.scan``) checks every line and the
end line's counts, so a file cut short or damaged is refused before anything is written.
The second writes, in batches of records per write transaction as any import does:

* each record version keeps its id, its recorded, superseded and forgotten times, its tags
  and its passages as stored (not split again: a fact's evidence ids ``<record>:<ord>`` stay
  valid); its keyword, exact and entity rows are derived as for any write (a forgotten
  version gets no mentions, as ``forget`` leaves it); ``superseded_by`` is linked once the
  newer version is in;
* a record whose id the database holds already is skipped (the same export imported again:
  nothing changes); one holding other text under that id is skipped with a notice;
* a current record whose text a current record of the database holds under another id is
  skipped with a notice naming it, and the facts citing its passages cite that record's
  passages of the same section and text instead (two bases merged keep one copy);
* vectors are copied for every model the export carries (``vector_keys`` too, so a later
  text embedded before is copied, not computed); a model whose vectors here have another
  length is left out with a notice, and its passages are embedded as any new ones;
* facts follow the records, each with its evidence passages found here (a passage
  missing here is left out of it, with a notice; a fact whose records were all purged
  had none and keeps none), its content hash as written, and its versions linked as the
  records'.

A bulk restore holds the keyword postings' bulk lease as a bulk import does
(``memo.store.kw_postings.hold_bulk``) and builds them once at its end.  A database error
stops the import with that batch rolled back; re-running it skips what is stored.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memo.errors import MemoError, StoreError, ValidationError
from memo.ops import export_lines as fmt
from memo.ops.add import storable_nul
from memo.ops.reports import ImportReport, Rejection
from memo.ops.store_batch import chunks, live_duplicates
from memo.store import kw_postings
from memo.store.connect import write_tx
from memo.store.facts import find_live_fact, insert_fact
from memo.store.mentions import drop_fact_mentions, drop_record_mentions
from memo.store.records import DerivedPassage, NewRecord, derive_passages, insert_records, record_hash
from memo.stored import FactDraft, PassageDraft, RecordDraft

BATCH_CHARS = 16 << 20     # as memo.ops.importer's: a batch of large records ends sooner
NOTICES_MAX = 1000         # notices kept in the report (the count of the rest is one more notice)


@dataclass
class _State:
    name: str
    added: int = 0
    skipped: int = 0
    passages: int = 0
    batches: int = 0
    facts_added: int = 0
    facts_skipped: int = 0
    ids: list[str] = field(default_factory=list)
    matched: set[str] = field(default_factory=set)         # records of the database the skipped ones matched
    notices: list[Rejection] = field(default_factory=list)
    dropped_notices: int = 0
    moved: dict[str, str] = field(default_factory=dict)     # exported passage id -> this database's passage id
    links: dict[str, str] = field(default_factory=dict)     # version id -> the id of its successor, not linked yet
    dims: dict[str, int | None] = field(default_factory=dict)   # model id -> vector length here (None: refused)
    bulk: bool = False
    nul_ok: bool = True                  # the database stores U+0000 (SQLite); else NULs are dropped, said
    models: frozenset[str] = frozenset()  # the models this memo knows: only their vectors are copied

    def notice(self, where: str, what: str) -> None:
        if len(self.notices) < NOTICES_MAX:
            self.notices.append(Rejection(where, what))
        else:
            self.dropped_notices += 1


def import_export(conn: Any, real: Path, *, batch_size: int, progress: Callable[[int, int | None, str], None] | None,
                  given: tuple[str, ...] = ()) -> ImportReport:
    """Import the export at ``real``; ``given``: the options the caller was asked for that
    an export cannot take (its records keep their own namespaces, kinds, tags...)."""
    if given:
        raise ValidationError(f"{real.name} is a memo export, imported as it was written: "
                              f"{', '.join(given)} {'does' if len(given) == 1 else 'do'} not apply",
                              hint="import it without those options (its records keep their own namespaces, "
                                   "kinds and tags)")
    if not real.is_file():
        raise ValidationError(f"{real} is not a file: a memo export is one file (`memo export` writes it)")
    started = time.monotonic()
    scanned = fmt.scan(real)
    from memo.embed.registry import load_registry

    st = _State(real.name, nul_ok=storable_nul(conn), models=frozenset(load_registry().models))
    total = scanned.records + scanned.facts
    meta = kw_postings.read_meta(conn)
    base_rows = None if meta is None else (meta.rows if meta.built else 0)
    done = 0
    try:
        batch: list[tuple[int, dict[str, Any]]] = []
        chars = 0
        facts: list[tuple[int, dict[str, Any]]] = []
        for lineno, obj in fmt.lines(real):
            if not st.nul_ok and obj["type"] != "end":
                obj = _without_nul(st, lineno, obj)
            if obj["type"] == "record":
                batch.append((lineno, obj))
                chars += len(obj["body"])
                if len(batch) >= batch_size or chars >= BATCH_CHARS:
                    done += len(batch)
                    _records(conn, st, batch, base_rows)
                    batch, chars = [], 0
                    _tell(progress, done, total, "records")
            elif obj["type"] == "fact":
                facts.append((lineno, obj))
                if len(facts) >= batch_size:
                    done += len(facts)
                    _facts(conn, st, facts)
                    facts = []
                    _tell(progress, done, total, "facts")
        if batch:
            done += len(batch)
            _records(conn, st, batch, base_rows)
        if facts:
            done += len(facts)
            _facts(conn, st, facts)
    except BaseException:
        if st.bulk:
            kw_postings.end_bulk(conn, build=False)
        raise
    if st.bulk:
        _tell(progress, done, total, "building the keyword index")
        kw_postings.end_bulk(conn)
    _tell(progress, total, total, "done")
    if st.dropped_notices:
        st.notices.append(Rejection(st.name, f"... and {st.dropped_notices} more notices"))
    return ImportReport(root=str(real), format="memo-export", added=st.added, updated=0, skipped=st.skipped,
                        rejected=(), ignored=0, batches=st.batches, passages=st.passages, record_ids=tuple(st.ids),
                        skipped_record_ids=tuple(sorted(st.matched)), facts_added=st.facts_added,
                        facts_skipped=st.facts_skipped, notices=tuple(st.notices),
                        seconds=round(time.monotonic() - started, 3))


def _without_nul(st: _State, lineno: int, obj: dict[str, Any]) -> dict[str, Any]:
    """``obj`` with every U+0000 removed from its text (PostgreSQL's text cannot hold one;
    SQLite stores it, so a base moved there refused the whole import half way), said once
    per record or fact: a NUL is never a character a reader sees."""
    found = False

    def clean(value: Any) -> Any:
        nonlocal found
        if isinstance(value, str):
            if "\x00" in value:
                found = True
                return value.replace("\x00", "")
            return value
        if isinstance(value, list):
            return [clean(v) for v in value]
        if isinstance(value, dict):
            return {k: (v if k == "vectors" else clean(v)) for k, v in value.items()}
        return value

    out = clean(obj)
    if found:
        st.notice(f"{st.name}:{lineno}", f"{obj['type']} {obj.get('id')}: NUL characters (U+0000) removed, "
                                         "which this database cannot store")
    return out


def _tell(progress: Callable[[int, int | None, str], None] | None, done: int, total: int, what: str) -> None:
    if progress is not None:
        progress(done, total, what)


def _draft(obj: dict[str, Any]) -> RecordDraft:
    return RecordDraft(body=obj["body"], kind=obj["kind"], namespace=obj["namespace"], title=obj.get("title"),
                       source=obj.get("source"), library=obj.get("library"), version=obj.get("version"),
                       tags=tuple(obj.get("tags") or ()), event_at=obj.get("event_at"),
                       trust=float(obj["trust"]) if obj.get("trust") is not None else 1.0,
                       author=obj.get("author"), import_path=obj.get("import_path"), ext_id=obj.get("ext_id"),
                       meta=obj.get("meta") or {}, id=obj["id"])


def _passages(obj: dict[str, Any]) -> tuple[PassageDraft, ...]:
    return tuple(PassageDraft(text=p["text"], section=p.get("section") or "", speaker=p.get("speaker"),
                              event_at=p.get("event_at"), ext_id=p.get("ext_id")) for p in obj["passages"])


def _records(conn: Any, st: _State, batch: list[tuple[int, dict[str, Any]]], base_rows: int | None) -> None:
    prepared: list[tuple[int, dict[str, Any], RecordDraft, str, tuple[DerivedPassage, ...]]] = []
    for lineno, obj in batch:
        draft = _draft(obj)
        passages = _passages(obj)
        try:
            derived = derive_passages(draft, passages)
        except (ValueError, TypeError) as exc:
            raise ValidationError(f"{st.name} line {lineno}: record {obj['id']} cannot be stored: {exc}") from exc
        prepared.append((lineno, obj, draft, record_hash(draft), derived))
    ids = [obj["id"] for _, obj, *_ in prepared]
    with _batch(st, f"in batch {st.batches + 1}"), write_tx(conn):
        held = _held(conn, "records", "content_hash, superseded_at, forgotten_at", ids)
        current = {(d.namespace, h) for _, obj, d, h, _ in prepared if _is_current(obj)}
        dups = live_duplicates(conn, current)
        new: list[NewRecord] = []
        kept: list[dict[str, Any]] = []
        for lineno, obj, draft, chash, derived in prepared:
            rid = obj["id"]
            if rid in held:
                st.skipped += 1
                if held[rid][0] != chash:
                    st.notice(f"{st.name}:{lineno}", f"record {rid} holds other text here; kept as it is")
                else:
                    st.matched.add(rid)
                    _later_state(conn, st, "records", f"{st.name}:{lineno}", obj, held[rid][1:])
                continue
            dup = dups.get((draft.namespace, chash)) if _is_current(obj) else None
            if dup is not None:
                st.skipped += 1
                st.matched.add(dup)
                st.notice(f"{st.name}:{lineno}", f"record {rid}: its text is here already, as record {dup}; "
                                                 "facts citing it cite that record")
                _map_passages(conn, st, rid, obj, dup)
                continue
            new.append(NewRecord(id=rid, draft=draft, content_hash=chash, recorded_at=obj["recorded_at"],
                                 passages=derived, superseded_at=obj.get("superseded_at"),
                                 forgotten_at=obj.get("forgotten_at")))
            kept.append(obj)
        if not st.bulk and base_rows is not None and st.passages + sum(len(r.passages) for r in new) > base_rows:
            st.bulk = True
        if st.bulk:
            kw_postings.hold_bulk(conn)
        st.passages += insert_records(conn, new)
        for obj in kept:
            if obj.get("superseded_by"):
                st.links[obj["id"]] = obj["superseded_by"]
        _link(conn, "records", st)
    st.batches += 1
    st.added += len(new)
    st.ids.extend(r.id for r in new)
    _copy_vectors(conn, st, "passage", [(f"{obj['id']}:{k}", p) for obj in kept for k, p in enumerate(obj["passages"])])


@contextmanager
def _batch(st: _State, where: str) -> Iterator[None]:
    """A database or value error inside a batch's write transaction (rolled back) as the
    import's StoreError, saying what earlier batches stored; memo's own errors as they are."""
    try:
        yield
    except MemoError:
        raise
    except Exception as exc:  # noqa: BLE001 - a database or value error: that batch rolled back
        raise StoreError(f"import stopped {where}: {exc}; that batch was rolled back, {st.added} records and "
                         f"{st.facts_added} facts from earlier batches are stored",
                         hint="fix the cause and re-run the import; what is stored is skipped") from exc


def _is_current(obj: dict[str, Any]) -> bool:
    return not obj.get("superseded_at") and not obj.get("forgotten_at")


def _held(conn: Any, table: str, columns: str, ids: list[str]) -> dict[str, tuple[Any, ...]]:
    """id -> ``columns`` of the rows of ``table`` (records or facts) this database holds."""
    out: dict[str, tuple[Any, ...]] = {}
    for chunk in chunks(ids):
        out.update((r[0], tuple(r[1:])) for r in conn.execute(
            f"SELECT id, {columns} FROM {table} WHERE id IN ({','.join('?' * len(chunk))})", tuple(chunk)))
    return out


def _later_state(conn: Any, st: _State, table: str, where: str, obj: dict[str, Any],
                 here: tuple[str | None, str | None]) -> None:
    """A version held here that the export says was superseded or forgotten since (a
    colleague's export merged back): that state is taken, never the other way (a version
    current in the export but superseded or forgotten here stays so).  Said in a notice."""
    superseded, forgotten = here
    what = "record" if table == "records" else "fact"
    if obj.get("superseded_at") and superseded is None and forgotten is None:
        conn.execute(f"UPDATE {table} SET superseded_at = ? WHERE id = ?", (obj["superseded_at"], obj["id"]))
        if obj.get("superseded_by"):
            st.links[obj["id"]] = obj["superseded_by"]
        st.notice(where, f"{what} {obj['id']}: superseded by {obj.get('superseded_by') or 'a version not exported'}, "
                         "as the export says")
        if table == "facts":
            drop_fact_mentions(conn, [obj["id"]])
    if obj.get("forgotten_at") and forgotten is None:
        conn.execute(f"UPDATE {table} SET forgotten_at = ? WHERE id = ?", (obj["forgotten_at"], obj["id"]))
        (drop_record_mentions if table == "records" else drop_fact_mentions)(conn, [obj["id"]])
        st.notice(where, f"{what} {obj['id']}: forgotten, as the export says")


def _map_passages(conn: Any, st: _State, rid: str, obj: dict[str, Any], dup: str) -> None:
    """The exported record's passages -> the duplicate's passages of the same section and
    text, else of the same text when only one holds it (the same body stored with another
    date or title: a conversation's sections name its date)."""
    rows = conn.execute("SELECT id, section, text FROM passages WHERE record_id = ? ORDER BY ord", (dup,)).fetchall()
    exact = {(r[1], r[2]): r[0] for r in rows}
    by_text: dict[str, list[str]] = {}
    for r in rows:
        by_text.setdefault(r[2], []).append(r[0])
    for k, p in enumerate(obj["passages"]):
        found = exact.get((p.get("section") or "", p["text"]))
        if found is None and len(by_text.get(p["text"], ())) == 1:
            found = by_text[p["text"]][0]
        if found is not None:
            st.moved[f"{rid}:{k}"] = found


def _link(conn: Any, table: str, st: _State) -> None:
    """Point each version at its successor once the successor is stored (the same batch or
    an earlier one); a successor never stored (a forgotten one left out of the export) is
    left unnamed, as ``memo purge`` leaves it: the version stays superseded."""
    if not st.links:
        return
    targets = list(set(st.links.values()))
    present: set[str] = set()
    for chunk in chunks(targets):
        present.update(r[0] for r in conn.execute(
            f"SELECT id FROM {table} WHERE id IN ({','.join('?' * len(chunk))})", tuple(chunk)))
    ready = [(nxt, old) for old, nxt in st.links.items() if nxt in present]
    if ready:
        conn.executemany(f"UPDATE {table} SET superseded_by = ? WHERE id = ?", ready)
        for _, old in ready:
            del st.links[old]


def _copy_vectors(conn: Any, st: _State, of: str, items: list[tuple[str, dict[str, Any]]]) -> None:
    """Write the vectors the export carried for the stored ``items`` ((public id, its
    line or passage object)), model by model, with their ``vector_keys`` for passages."""
    import numpy as np  # only an export with vectors needs it

    from memo.embed.reuse import key_rows
    from memo.embed.vectors import write_vectors

    by_model: dict[str, list[tuple[str, bytes, dict[str, Any]]]] = {}
    for pid, obj in items:
        for model, text in (obj.get("vectors") or {}).items():
            by_model.setdefault(model, []).append((pid, fmt.decode_vector(text), obj))
    if not by_model:
        return
    table, key = ("passages", "id") if of == "passage" else ("facts", "id")
    for model, rows in sorted(by_model.items()):
        if model not in st.models:
            # Vectors of a model this memo does not run would stay "pending" for it forever
            # (memo stats, doctor) and no search would read them.
            if model not in st.dims:
                st.dims[model] = None
                st.notice(st.name, f"vectors of {model} left out: it is no model this memo knows "
                                   "(`memo models list`); add it to your models file and import again to keep them")
            continue
        dim = _dim(conn, st, model, len(rows[0][1]) // 4)
        good = [r for r in rows if dim is not None and len(r[1]) == 4 * dim]
        if len(good) < len(rows) and dim is not None:
            st.notice(st.name, f"{len(rows) - len(good)} {of} vectors of {model} have another length than "
                               f"its {dim}; those {of}s are embedded again")
        if not good:
            continue
        pks: dict[str, int] = {}
        ids = [r[0] for r in good]
        for chunk in chunks(ids):
            pks.update((r[0], int(r[1])) for r in conn.execute(
                f"SELECT {key}, pk FROM {table} WHERE {key} IN ({','.join('?' * len(chunk))})", tuple(chunk)))
        good = [r for r in good if r[0] in pks]
        vecs = np.stack([np.frombuffer(r[1], dtype="<f4") for r in good]) if good else None
        if vecs is None:
            continue
        keys = key_rows(model, [pks[r[0]] for r in good],
                        [(r[2].get("section") or "", r[2]["text"]) for r in good]) if of == "passage" else ()
        write_vectors(conn, model, [pks[r[0]] for r in good], vecs, of=of, keys=keys)


def _dim(conn: Any, st: _State, model: str, seen: int) -> int | None:
    """The length of ``model``'s vectors here (from a stored one), else the export's first;
    None (with a notice, once) when they differ: the two are not the same model."""
    if model in st.dims:
        return st.dims[model]
    from memo.embed.vectors import VECTOR_TABLES

    here: int | None = None
    for table, _, _ in VECTOR_TABLES.values():
        row = conn.execute(f"SELECT vec FROM {table} WHERE model_id = ? LIMIT 1", (model,)).fetchone()
        if row is not None:
            here = _length(row[0])
            break
    dim: int | None = seen if here is None or here == seen else None
    if dim is None:
        st.notice(st.name, f"the export's vectors of {model} hold {seen} values, this database's {here}: "
                           "not the same model; its passages and facts are embedded here instead")
    st.dims[model] = dim
    return dim


def _length(value: object) -> int:
    if isinstance(value, str):           # pgvector's text form
        return len(json.loads(value))
    return len(bytes(value)) // 4        # type: ignore[arg-type]


def _facts(conn: Any, st: _State, batch: list[tuple[int, dict[str, Any]]]) -> None:
    refs = sorted({st.moved.get(e, e) for _, obj in batch for e in obj.get("evidence") or ()})
    found: dict[str, int] = {}
    for chunk in chunks(refs):
        found.update((r[0], int(r[1])) for r in conn.execute(
            f"SELECT id, pk FROM passages WHERE id IN ({','.join('?' * len(chunk))})", tuple(chunk)))
    stored: list[tuple[str, dict[str, Any]]] = []
    with _batch(st, "at the facts"), write_tx(conn):
        held = _held(conn, "facts", "superseded_at, forgotten_at", [obj["id"] for _, obj in batch])
        for lineno, obj in batch:
            where = f"{st.name}:{lineno}"
            fid = obj["id"]
            if fid in held:
                st.facts_skipped += 1
                _later_state(conn, st, "facts", where, obj, held[fid])
                continue
            wanted = [st.moved.get(e, e) for e in obj.get("evidence") or ()]
            evidence = [(found[e], e) for e in dict.fromkeys(wanted) if e in found]
            if len(evidence) < len(wanted):
                st.notice(where, f"fact {fid}: {len(wanted) - len(evidence)} of its {len(wanted)} evidence "
                                 "passages are not here; imported with the others" if evidence else
                                 f"fact {fid}: none of its evidence passages is here; imported without evidence")
            draft = _fact_draft(obj, tuple(e for _, e in evidence))
            current = not obj.get("superseded_at") and not obj.get("forgotten_at")
            chash = obj.get("content_hash")
            if current and chash and (dup := find_live_fact(conn, draft.namespace, chash)) is not None:
                st.facts_skipped += 1
                st.notice(where, f"fact {fid}: the same fact is here already, as {dup}")
                continue
            insert_fact(conn, draft, evidence, recorded_at=obj["recorded_at"], fact_id=fid,
                        superseded_at=obj.get("superseded_at"), forgotten_at=obj.get("forgotten_at"),
                        content_hash=chash, carried=True)
            if obj.get("superseded_by"):
                st.links[fid] = obj["superseded_by"]
            stored.append((fid, obj))
        _link(conn, "facts", st)
    st.facts_added += len(stored)
    _copy_vectors(conn, st, "fact", stored)


def _fact_draft(obj: dict[str, Any], evidence: tuple[str, ...]) -> FactDraft:
    return FactDraft(text=obj["text"], evidence=evidence, namespace=obj["namespace"],
                     subject=obj.get("subject"), predicate=obj.get("predicate"), object=obj.get("object"),
                     event_at=obj.get("event_at"), trust=float(obj["trust"]) if obj.get("trust") is not None else 1.0,
                     author=obj.get("author"), source=obj.get("source"), meta=obj.get("meta") or {})
