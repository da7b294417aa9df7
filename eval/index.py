"""The replay's inputs, built once and cached: the SQLite index of a data set's corpus,
its passage vectors and its query vectors.

Cache layout (``memo_eval.cache.cache_root()``: ``$MEMO_CACHE/eval`` if set, else a checkout's
``.cache/memo-eval``, else the user cache dir's ``memo-eval``)::

    index/<dataset>-<corpus sha:12>-v<schema>-<code sha:8>.db     built SQLite index
    vectors/<dataset>-<model>-<passage-text sha:16>.npy           (n_passages, dim) float32, pk order
    queries/<dataset>-<model>-<query-text sha:16>.npy             (n_queries, dim) float32, split order

* The index is built by ``memo import``'s own code: ``memo.ops.importer.import_path`` with
  ``--format beir`` / ``--format locomo`` (same parsing, splitting, windows, sections,
  de-duplication, entity mentions and, for ``locomo-obs``, observation facts), so the
  figures describe the index a user gets and a change to a splitter moves them.  A BEIR
  document longer than one window becomes several passages; results are scored per
  document (``unit = record``) at the rank of its best passage: max over passages.
* The index key is split-independent (train and test share one index) and includes the
  schema version, the corpus hash and a hash of the files of the code that decides what
  goes into the index (every ``memo/ingest/*.py``, the import/add/facts ops, ``memo/store``,
  ``memo/text``, this module), so a code change rebuilds it.
* A build writes ``<name>.tmp<pid>`` and renames it into place: a crash or a concurrent
  build never leaves a half-built file under the final name (``memo eval cache --prune``
  deletes a dead build's temp files, and the indexes other code built: ``memo_eval.cache_files``).
* Passage vectors are keyed by a hash of the exact texts the model embeds, so an index
  rebuild (schema bump) reuses them: only a change of text or model re-embeds, and then
  only the texts no earlier cache file of the set holds (``memo_eval.vector_cache``).
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass
from importlib.resources import files as package_files
from pathlib import Path

import numpy as np

from memo.errors import DatasetError
from memo.store.connect import write_tx
from memo.store.db import open_db
from memo.store.dialect import is_postgres
from memo.store.facts import fact_hash, find_live_fact, insert_fact, resolve_evidence
from memo.store.migrations import LATEST
from memo.store.write_queue import SUFFIX as WRITER_LOCK_SUFFIX
from memo_eval import vector_cache
from memo_eval.cache import cache_root
from memo_eval.datasets import EvalSet, fileset

INDEX_FORMAT = 2   # bump when this module changes what it writes into an index (2: built by import_path)

Progress = Callable[[str, int, int], None]   # (stage, done, total)

# memo's own package folder, wherever memo-kb is installed (not necessarily beside this one).
_MEMO = Path(str(package_files("memo")))
# The code that decides what an index holds: hashed by file content (a change rebuilds).
INDEX_CODE_GLOBS = ("ingest/*.py", "store/*.py", "text/*.py", "ops/importer.py", "ops/add.py", "ops/facts.py",
                    "ops/reports.py", "types.py", "stored.py")


def index_code_files() -> list[Path]:
    files = {f for pat in INDEX_CODE_GLOBS for f in _MEMO.glob(pat)}
    return sorted(files) + [Path(__file__).resolve()]


def _code_hash() -> str:
    h = hashlib.sha256(f"format={INDEX_FORMAT}".encode())
    for f in index_code_files():
        h.update(f"\x1e{f.relative_to(f.parents[1]).as_posix()}\x1f".encode())
        h.update(f.read_bytes())
    return h.hexdigest()


def _safe(name: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in name)


def index_suffix() -> str:
    """How the name of an index this code builds ends: the schema version and the index code
    hash.  A cached index whose name ends otherwise was built by other code and is never
    read again by this one (``memo_eval.cache_files`` prunes it)."""
    return f"-v{LATEST}-{_code_hash()[:8]}.db"


def index_path(es: EvalSet, root: Path | None = None) -> Path:
    root = root or cache_root()
    return root / "index" / f"{_safe(es.name)}-{es.corpus_hash[:12]}{index_suffix()}"


@dataclass(frozen=True, slots=True)
class BuiltIndex:
    path: Path
    built: bool             # False = reused from the cache
    records: int
    passages: int
    duplicates: int         # corpus entries skipped as exact duplicates (memo de-duplicates)
    seconds: float
    rejected: int = 0       # corpus entries the import rejected (with a reason)
    facts: int = 0


def _import_corpus(conn: sqlite3.Connection, es: EvalSet, progress: Progress | None) -> tuple[int, int, int, int]:
    """``memo import --format <beir|locomo> <corpus>`` into ``conn``: (records, skipped,
    rejected, facts).  LoCoMo observations are imported only for ``locomo-obs``."""
    from memo.ops.importer import ImportOptions, import_path

    def tick(p) -> None:
        # the last item too: a count that stops at 250/300 never says the import finished
        if progress and (p.done % 250 == 0 or p.done == p.total):
            progress("index", p.done, p.total or 0)

    if es.corpus_format == fileset.FORMAT:
        return _import_files(conn, es, progress)
    opts = ImportOptions(format=str(es.corpus_format), facts=es.facts is not None)
    rep = import_path(conn, Path(str(es.corpus_path)), opts, progress=tick)
    return rep.added + rep.updated, rep.skipped, len(rep.rejected), rep.facts_added


def _import_files(conn: sqlite3.Connection, es: EvalSet, progress: Progress | None) -> tuple[int, int, int, int]:
    """A files set (``memo_eval.datasets.fileset``): each manifest entry staged at
    ``<tmp>/<label>`` and imported by ``memo import``'s code, one file at a time, in order."""
    import tempfile

    from memo.ops.importer import ImportOptions, import_path

    folder = Path(str(es.corpus_path)).parent
    doc = fileset.load_manifest(folder)
    opts = ImportOptions(namespace=str(doc.get("namespace") or "default"))
    added = skipped = rejected = 0
    with tempfile.TemporaryDirectory(prefix="memo-eval-") as tmp:
        # <tmp>/<STAGED>/<label>: the stored import path ends with the label, and what follows
        # STAGED is the same on every machine (unit_keys' key for an unlabelled file)
        for i, path in enumerate(fileset.stage(doc["entries"], Path(tmp) / STAGED, folder), 1):
            rep = import_path(conn, path, opts)
            added, skipped, rejected = added + rep.added + rep.updated, skipped + rep.skipped, rejected + len(rep.rejected)
            if progress:
                progress("index", i, len(doc["entries"]))
    return added, skipped, rejected, 0


def _store_drafts(conn: sqlite3.Connection, es: EvalSet, progress: Progress | None) -> tuple[int, int]:
    """Sets without a corpus file (synthetic): each draft split like ``memo add`` does."""
    from memo.ops.add import prepare, store_draft

    n_rec = dup = 0
    with write_tx(conn):
        for draft in es.corpus():  # type: ignore[misc]
            rep = store_draft(conn, draft, prepare(draft), replace_previous=False)
            if rep.status == "skipped":
                dup += 1
                continue
            n_rec += 1
            if progress and n_rec % 250 == 0:
                progress("index", n_rec, 0)
        for _where, fdraft in (es.facts() if es.facts is not None else ()):
            evidence = resolve_evidence(conn, fdraft.evidence, fdraft.namespace)
            if find_live_fact(conn, fdraft.namespace, fact_hash(fdraft.text, (p for _, p in evidence))):
                continue
            insert_fact(conn, fdraft, evidence, recorded_at="2000-01-01T00:00:00.000000Z")
    return n_rec, dup


def _build_files(tmp: Path) -> tuple[Path, ...]:
    """A build's temporary database and the files beside it: SQLite's -wal and -shm, and
    memo's writer lock (``open_db(write=True)`` creates it)."""
    return (tmp, Path(f"{tmp}-wal"), Path(f"{tmp}-shm"), Path(f"{tmp}{WRITER_LOCK_SUFFIX}"))


def build_index(es: EvalSet, *, root: Path | None = None, rebuild: bool = False,
                progress: Progress | None = None) -> BuiltIndex:
    """The cached index of ``es``'s corpus, built if missing (or ``rebuild``)."""
    import time

    if not es.has_corpus:
        raise DatasetError(f"data set {es.name!r} has no corpus file: pass the memo database with --db")
    path = index_path(es, root)
    if path.exists() and not rebuild:
        conn = open_db(path, write=False)
        try:
            n_rec = conn.execute("SELECT COUNT(*) FROM records").fetchone()[0]
            n_pas = conn.execute("SELECT COUNT(*) FROM passages").fetchone()[0]
            n_fact = conn.execute("SELECT COUNT(*) FROM facts").fetchone()[0]
        finally:
            conn.close()
        return BuiltIndex(path, False, n_rec, n_pas, 0, 0.0, facts=n_fact)
    start = time.perf_counter()
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f"{path.name}.tmp{os.getpid()}")
    for stale in _build_files(tmp):
        stale.unlink(missing_ok=True)
    conn = open_db(tmp, write=True)
    rejected = n_fact = 0
    try:
        # A throwaway cache file: durability per commit buys nothing here.
        conn.execute("PRAGMA synchronous=OFF")
        if es.corpus_path is not None and es.corpus_format is not None:
            n_rec, dup, rejected, n_fact = _import_corpus(conn, es, progress)
        else:
            n_rec, dup = _store_drafts(conn, es, progress)
        conn.execute("INSERT INTO passages_fts(passages_fts) VALUES ('optimize')")
        conn.execute("INSERT INTO exact_fts(exact_fts) VALUES ('optimize')")
        conn.execute("INSERT INTO facts_fts(facts_fts) VALUES ('optimize')")
        n_pas = conn.execute("SELECT COUNT(*) FROM passages").fetchone()[0]
        n_fact = conn.execute("SELECT COUNT(*) FROM facts").fetchone()[0]
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        conn.close()
    if rejected:
        for dead in _build_files(tmp):
            dead.unlink(missing_ok=True)
        raise DatasetError(f"{es.corpus_path}: the import rejected {rejected} corpus entries",
                           hint=f"memo import --format {es.corpus_format} shows them")
    os.replace(tmp, path)
    # Nothing opens the temporary name again: its files left behind would only pile up.
    for side in _build_files(tmp)[1:]:
        side.unlink(missing_ok=True)
    return BuiltIndex(path, True, n_rec, n_pas, dup, round(time.perf_counter() - start, 2), rejected, n_fact)


def build_index_on_server(es: EvalSet, url: str, *, rebuild: bool = False,
                          progress: Progress | None = None) -> BuiltIndex:
    """The data set's index in a PostgreSQL database (issue 17.4-17.5): imported through
    memo's own import path, as for the SQLite cache, once; ``memo_meta.eval_index`` names
    the data set, corpus and index code it holds, so a second run reuses it.  The database
    must be empty or hold an index the harness built (another data set, or one built by
    other index code: rebuilt); a database of someone's own records is refused."""
    import time

    if not es.has_corpus:
        raise DatasetError(f"data set {es.name!r} has no corpus file to build an index from")
    marker = f"{es.name}:{es.corpus_hash[:12]}:{_code_hash()[:8]}"
    conn = open_db(url, write=True)
    try:
        row = conn.execute("SELECT value FROM memo_meta WHERE key = 'eval_index'").fetchone()
        n_rec = conn.execute("SELECT COUNT(*) FROM records").fetchone()[0]
        if row is not None and row[0] == marker and not rebuild:
            n_pas = conn.execute("SELECT COUNT(*) FROM passages").fetchone()[0]
            n_fact = conn.execute("SELECT COUNT(*) FROM facts").fetchone()[0]
            return BuiltIndex(Path(), False, n_rec, n_pas, 0, 0.0, facts=n_fact)
        if n_rec and not rebuild and row is None:   # not an index the harness built: the user's data
            raise DatasetError(f"the PostgreSQL database holds {n_rec} records that are not {es.name!r}'s index",
                               hint="give the harness a database of its own, or pass --rebuild to empty it")
        start = time.perf_counter()
        with write_tx(conn):
            conn.execute("DELETE FROM memo_meta WHERE key = 'eval_index'")
            for table in ("mentions", "entity_aliases", "entities", "fact_vectors", "fact_evidence", "facts",
                          "vectors", "exact_fts", "passages", "record_tags", "records"):
                conn.execute(f"DELETE FROM {table}")
        if es.corpus_path is not None and es.corpus_format is not None:
            n_rec, dup, rejected, n_fact = _import_corpus(conn, es, progress)
        else:
            (n_rec, dup), rejected = _store_drafts(conn, es, progress), 0
        if rejected:
            raise DatasetError(f"{es.corpus_path}: the import rejected {rejected} corpus entries",
                               hint=f"memo import --format {es.corpus_format} shows them")
        with write_tx(conn):
            conn.execute("INSERT INTO memo_meta(key, value) VALUES ('eval_index', ?)", (marker,))
        n_pas = conn.execute("SELECT COUNT(*) FROM passages").fetchone()[0]
        n_fact = conn.execute("SELECT COUNT(*) FROM facts").fetchone()[0]
        conn.execute_native("ANALYZE", None)
    finally:
        conn.close()
    return BuiltIndex(Path(), True, n_rec, n_pas, dup, round(time.perf_counter() - start, 2), rejected, n_fact)


# --- passage vectors -----------------------------------------------------------------------
def _passage_rows(conn: sqlite3.Connection) -> list[tuple[int, str, str]]:
    return [(int(r[0]), r[1], r[2]) for r in
            conn.execute("SELECT pk, section, text FROM passages ORDER BY pk").fetchall()]


def ensure_passage_vectors(db_path: Path, es_name: str, model_id: str | None = None, *,
                           root: Path | None = None, progress: bool = True,
                           on_progress: Callable[[int, int], None] | None = None) -> dict[str, object]:
    """Make sure every passage of the index has a vector for the model: from the .npy
    cache if present, else embed (``memo.embed.backfill``; ``on_progress(done, total)``
    after each batch) and save the cache."""
    from memo.embed.backfill import backfill
    from memo.embed.model import passage_text
    from memo.embed.registry import load_registry
    from memo.embed.vectors import vector_count, write_vectors

    spec = load_registry().get(model_id)
    conn = open_db(db_path, write=True)
    try:
        rows = _passage_rows(conn)
        have = vector_count(conn, spec.id)
        if have >= len(rows):
            return {"model_id": spec.id, "source": "index", "vectors": have}
        h = hashlib.sha256(spec.id.encode())
        texts = [passage_text(sec, txt) for _, sec, txt in rows]
        for t in texts:
            h.update(t.encode("utf-8", "surrogatepass") + b"\x1e")
        folder = (root or cache_root()) / "vectors"
        cache = folder / f"{_safe(es_name)}-{_safe(spec.id)}-{h.hexdigest()[:16]}.npy"
        if not cache.exists():
            # The same passages under another data set's name (codesearch and codesearch-nl
            # share one corpus): the file is keyed by the texts, so its vectors are these.
            twin = next(cache.parent.glob(f"*-{_safe(spec.id)}-{h.hexdigest()[:16]}.npy"), None)
            cache = twin or cache
        pks = [pk for pk, _, _ in rows]
        if cache.exists():
            vecs = np.load(cache)
            if vecs.shape == (len(rows), spec.dimensions):
                if not is_postgres(conn):
                    conn.execute("PRAGMA synchronous=OFF")
                for s in range(0, len(pks), 4096):
                    write_vectors(conn, spec.id, pks[s:s + 4096], vecs[s:s + 4096])
                if not vector_cache.keys_path(cache).exists():     # a file written before sidecars
                    vector_cache.save_keys(cache, vector_cache.text_keys(texts))
                return {"model_id": spec.id, "source": "cache", "vectors": len(pks), "file": str(cache)}
        # Text by text: rows whose text an earlier cache file of this set holds take its vector.
        keys = vector_cache.text_keys(texts)
        known = vector_cache.known_vectors(folder, _safe(es_name), _safe(spec.id), keys, spec.dimensions)
        if known:
            if not is_postgres(conn):
                conn.execute("PRAGMA synchronous=OFF")
            rows_known = sorted(known)
            for s in range(0, len(rows_known), 4096):
                part = rows_known[s:s + 4096]
                write_vectors(conn, spec.id, [pks[i] for i in part], np.stack([known[i] for i in part]))
        report = backfill(conn, spec.id, progress=progress, on_progress=on_progress)
        if is_postgres(conn):   # embedded into the server; the .npy cache is written from SQLite runs
            return {"model_id": spec.id, "source": "embedded", "vectors": vector_count(conn, spec.id),
                    "seconds": report.seconds, "per_second": report.per_second}
        got = conn.execute("SELECT passage_pk, vec FROM vectors WHERE model_id = ? ORDER BY passage_pk",
                           (spec.id,)).fetchall()
        if [int(r[0]) for r in got] != pks:
            raise DatasetError(f"embedding left {len(pks) - len(got)} passages without a vector")
        vecs = np.frombuffer(b"".join(r[1] for r in got), dtype="<f4").reshape(len(got), spec.dimensions)
        vector_cache.save(cache, vecs, keys)
        return {"model_id": spec.id, "source": "embedded", "vectors": len(pks), "file": str(cache),
                "reused": len(known), "seconds": report.seconds, "per_second": report.per_second}
    finally:
        conn.close()


def ensure_fact_vectors(db_path: Path, es_name: str, model_id: str | None = None, *,
                        root: Path | None = None) -> dict[str, object] | None:
    """Like ``ensure_passage_vectors`` for the index's facts (None when it has none):
    from the .npy cache keyed by the fact texts, else embedded and cached."""
    from memo.embed.fact_vectors import backfill_facts, write_fact_vectors
    from memo.embed.model import DEFAULT_BATCH
    from memo.embed.registry import load_registry
    from memo.embed.service import load_model

    spec = load_registry().get(model_id)
    conn = open_db(db_path, write=True)
    try:
        rows = [(int(r[0]), r[1]) for r in conn.execute("SELECT pk, text FROM facts ORDER BY pk")]
        if not rows:
            return None
        have = int(conn.execute("SELECT COUNT(*) FROM fact_vectors WHERE model_id = ?", (spec.id,)).fetchone()[0])
        if have >= len(rows):
            return {"model_id": spec.id, "source": "index", "facts": have}
        h = hashlib.sha256(spec.id.encode())
        for _, txt in rows:
            h.update(txt.encode("utf-8", "surrogatepass") + b"\x1e")
        cache = (root or cache_root()) / "vectors" / f"{_safe(es_name)}-facts-{_safe(spec.id)}-{h.hexdigest()[:16]}.npy"
        pks = [pk for pk, _ in rows]
        if not is_postgres(conn):
            conn.execute("PRAGMA synchronous=OFF")
        if cache.exists():
            vecs = np.load(cache)
            if vecs.shape == (len(rows), spec.dimensions):
                for s in range(0, len(pks), 4096):
                    write_fact_vectors(conn, spec.id, pks[s:s + 4096], vecs[s:s + 4096])
                return {"model_id": spec.id, "source": "cache", "facts": len(pks), "file": str(cache)}
        backfill_facts(conn, load_model(spec), spec.id, DEFAULT_BATCH)
        if is_postgres(conn):   # embedded into the server; the .npy cache is written from SQLite runs
            return {"model_id": spec.id, "source": "embedded", "facts": len(pks)}
        got = conn.execute("SELECT fact_pk, vec FROM fact_vectors WHERE model_id = ? ORDER BY fact_pk",
                           (spec.id,)).fetchall()
        if [int(r[0]) for r in got] != pks:
            raise DatasetError(f"embedding left {len(pks) - len(got)} facts without a vector")
        vecs = np.frombuffer(b"".join(r[1] for r in got), dtype="<f4").reshape(len(got), spec.dimensions)
        cache.parent.mkdir(parents=True, exist_ok=True)
        tmp = cache.with_name(cache.stem + f".tmp{os.getpid()}.npy")
        np.save(tmp, vecs)
        os.replace(tmp, cache)
        return {"model_id": spec.id, "source": "embedded", "facts": len(pks), "file": str(cache)}
    finally:
        conn.close()


# --- query vectors -------------------------------------------------------------------------
def query_vectors(es: EvalSet, model_id: str | None = None, *, root: Path | None = None) -> tuple[str, np.ndarray]:
    """(model id, (n_queries, dim) unit vectors in ``es.queries`` order), cached as .npy."""
    from memo.embed.registry import load_registry
    from memo.embed.service import load_model

    spec = load_registry().get(model_id)
    texts = [q.text for q in es.queries]
    h = hashlib.sha256(f"{spec.id}\x1f{spec.query_prefix}".encode())
    for t in texts:
        h.update(t.encode("utf-8", "surrogatepass") + b"\x1e")
    cache = (root or cache_root()) / "queries" / f"{_safe(es.name)}-{_safe(spec.id)}-{h.hexdigest()[:16]}.npy"
    if cache.exists():
        vecs = np.load(cache)
        if vecs.shape == (len(texts), spec.dimensions):
            return spec.id, vecs
    model = load_model(spec)
    vecs = model.embed(texts, 32, prefix=spec.query_prefix)
    cache.parent.mkdir(parents=True, exist_ok=True)
    tmp = cache.with_name(cache.stem + f".tmp{os.getpid()}.npy")
    np.save(tmp, vecs)
    os.replace(tmp, cache)
    return spec.id, vecs


# --- mapping results to qrels keys ------------------------------------------------------------
STAGED = "staged-files"   # the folder a files set is imported from (_import_files)


def _stable_path(import_path: str) -> str:
    """An import path without the machine's part of a staged files set (``<tmp>/staged-files/``)."""
    marker = f"/{STAGED}/"
    return import_path.split(marker, 1)[1] if marker in import_path else import_path


def unit_keys(conn: sqlite3.Connection, es: EvalSet) -> dict[int, str]:
    """passage pk -> the key the qrels use for it (see ``memo_eval.datasets`` ``unit``)."""
    if es.unit == "record":
        sql = "SELECT p.pk, COALESCE(r.ext_id, r.id) FROM passages p JOIN records r ON r.id = p.record_id"
        return {int(pk): str(k) for pk, k in conn.execute(sql)}
    if es.unit == "passage":
        sql = ("SELECT p.pk, r.namespace || '#' || COALESCE(p.ext_id, p.id) "
               "FROM passages p JOIN records r ON r.id = p.record_id")
        return {int(pk): str(k) for pk, k in conn.execute(sql)}
    return _auto_keys(conn, es)[0]


def keys_and_shadowed(conn: sqlite3.Connection, es: EvalSet) -> tuple[dict[int, str], dict[str, str]]:
    """``unit_keys`` and, for a set of a user's own labels, the labels that name passages
    another label names first (``unit_keys``' order: passage id, ext_id, record id, import
    path, section, trailing path): label -> the label that takes them.  Such a label can
    never be found: name each record one way.  One walk over the passages for both."""
    return _auto_keys(conn, es) if es.unit == "auto" else (unit_keys(conn, es), {})


def _auto_keys(conn: sqlite3.Connection, es: EvalSet) -> tuple[dict[int, str], dict[str, str]]:
    """auto (a user's own labels): whichever identifier the labels use, else the record's
    import path (the same in every build; staged files without the machine's part), else
    its id.  Either way an unlabelled record's passages are one unit, as before.  Also the
    labels a passage matched after the one it answers to (``shadowed_labels``)."""
    labels = {k for rel in es.qrels.values() for k in rel}
    by_path = _section_labels(labels)
    out: dict[int, str] = {}
    taken: dict[str, str] = {}
    sql = ("SELECT p.pk, p.id, r.id, r.ext_id, r.import_path, p.section, r.kind FROM passages p "
           "JOIN records r ON r.id = p.record_id")
    for pk, pid, rid, ext, imp, section, kind in conn.execute(sql):
        found = [k for k in (pid, ext, rid, imp) if k is not None and k in labels]
        if imp is not None and by_path:
            found.append(_section_label(imp, section or "", by_path, code=kind == "code"))
        if imp is not None:
            found.append(_path_label(imp, labels))
        found = [k for k in dict.fromkeys(found) if k is not None]
        key = found[0] if found else None
        for other in found[1:]:
            taken.setdefault(other, key)
        out[int(pk)] = key or (_stable_path(imp) if imp else rid)
    used = set(out.values())
    return out, {label: first for label, first in taken.items() if label not in used}


def _norm_heading(text: str) -> str:
    return " ".join(text.replace("`", "").split()).casefold()


def _section_labels(labels: set[str]) -> dict[str, list[tuple[str, list[str]]]]:
    """Labels of the form ``<path suffix>#<section>``, by path suffix."""
    out: dict[str, list[tuple[str, list[str]]]] = {}
    for label in labels:
        path, sep, section = label.partition("#")
        if sep and path and section.strip():
            out.setdefault(path, []).append((label, [_norm_heading(s) for s in section.split(" > ")]))
    return out


def section_matches(section: str, want: list[str], *, code: bool = False) -> bool:
    """Does a passage's section (heading path ``A > B > C`` or a code symbol) end with the
    label's headings ``want`` (normalised: no backticks, case or repeated spaces)?  The last
    label heading may stop before a ``(``: ``fs.readFile`` names the heading
    ``fs.readFile(path[, options], callback)``, not ``fs.readFileSync(...)``.  ``code``: a
    code symbol is a dotted path whose module part comes from where the file was imported
    from (``pystd.copy.deepcopy`` for ``pystd/copy.py``), so ``copy.deepcopy`` and ``deepcopy``
    name it too, whole dotted parts only (not ``mydeepcopy``)."""
    have = [_norm_heading(s) for s in section.split(" > ")]
    if len(have) < len(want) or have[len(have) - len(want):-1] != want[:-1]:
        return False
    last = have[-1]
    if code and last.endswith("." + want[-1]):
        return True
    return last == want[-1] or last.startswith(want[-1] + "(")


def _section_label(import_path: str, section: str, by_path: dict[str, list[tuple[str, list[str]]]], *,
                   code: bool = False) -> str | None:
    """The ``<path>#<section>`` label naming this passage, the path whole (absolute, as
    ``memo get`` shows it) or a trailing part of it (a file's section: labels that survive a
    change of splitter, unlike passage ids)."""
    parts = import_path.split("/")
    for i in range(len(parts)):
        for label, want in by_path.get("/".join(parts[i:]), ()):
            if section_matches(section, want, code=code):
                return label
    return None


def _path_label(import_path: str, labels: set[str]) -> str | None:
    """The label naming ``import_path`` by a trailing part of it (``docs/runbook.md`` for
    ``/home/me/kb/docs/runbook.md``): imports store absolute paths, while labels written by
    hand (and labels written before paths became absolute) name files relative to a folder."""
    parts = import_path.split("/")
    for i in range(1, len(parts)):
        suffix = "/".join(parts[i:])
        if suffix in labels:
            return suffix
    return None
