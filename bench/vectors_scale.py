"""Vectors at scale (issue 16.3 / 16.5): the semantic index's exact float32 and int8 +
rescoring paths, the memory-mapped sidecar, warm hybrid search and the cold CLI, each next
to floors measured in the same run.

    .venv/bin/python bench/vectors_scale.py index --n 100000 1000000 [--queries 50] [--shortlists 2 4 8]
    .venv/bin/python bench/vectors_scale.py hybrid [--n 100000 | --db PATH] [--queries 100]
    .venv/bin/python bench/vectors_scale.py cold-cli [--n 100000] [--runs 5]

``index``: a vector-only database of N passages with seeded random unit vectors (384-d,
the default model id; random vectors are the worst case for quantisation: no cluster
structure, small gaps between neighbours), cached under ``.cache/vectors/``.  Reports the
sidecar build time, the load time from the table (blobs decoded as today) and from the
sidecar, p50/p95 of the top-100 for the numpy float32 matvec floor, the index's exact path
and its int8 path per shortlist, recall@100 of the int8 path against the exact scan, and
the RSS of a fresh process that runs the int8 (or exact) path (``rss`` mode).

``hybrid`` and ``cold-cli``: bench/scale_build.py's database of N passages (SciFact text,
random vectors; it must exist: ``bench/scale_build.py --n N``), SciFact test claims as
queries with seeded random query vectors (precomputed, as a server's embedder hands them
over).  ``hybrid`` runs ``memo.retrieve.search`` in one warm process (as memo-mcp / memo web
do) next to the floors: the bare FTS5 OR query (bm25, top 100) and the numpy matvec.
``cold-cli`` times ``memo search --json`` processes end to end (model load and query
embedding included) with the sidecar and with ``vectors.sidecar_min = 0``.

Run heavy modes with ``nice``; timings on a shared 2-core VM are noisy: compare the ratios
to the floors of the same run.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402

from memo.embed import DEFAULT_MODEL_ID  # noqa: E402
from memo.embed.index import VectorIndex  # noqa: E402
from memo.embed.quantise import kernel_name  # noqa: E402
from memo.embed.sidecar import build as build_sidecar  # noqa: E402
from memo.embed.sidecar import sidecar_path  # noqa: E402
from memo.profile import load_profile  # noqa: E402
from memo.store.connect import read_tx, write_tx  # noqa: E402
from memo.store.db import open_db  # noqa: E402

DIM = 384
SEED = 16
CACHE = ROOT / ".cache" / "vectors"
K = 100


def _pct(xs: list[float], p: float) -> float:
    return round(float(np.percentile(xs, p)), 2)


def _unit(rng: np.random.Generator, n: int) -> np.ndarray:
    x = rng.standard_normal((n, DIM), dtype=np.float32)
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    return x


def _rss_mb() -> tuple[float, float]:
    """(VmRSS, VmHWM) of this process in MB."""
    out = {}
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(("VmRSS:", "VmHWM:")):
            out[line.split(":")[0]] = int(line.split()[1]) / 1024
    return round(out.get("VmRSS", 0.0), 1), round(out.get("VmHWM", 0.0), 1)


# -- a vector-only database -------------------------------------------------------------

def vector_db(n: int, seed: int = SEED) -> Path:
    """A database of n one-passage records (no text index) and n random unit vectors."""
    path = CACHE / f"vec-{n}-s{seed}.db"
    if path.exists():
        return path
    CACHE.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".building")
    for s in ("", "-wal", "-shm"):
        Path(f"{tmp}{s}").unlink(missing_ok=True)
    os.environ["MEMO_SYNCHRONOUS"] = "NORMAL"
    conn = open_db(tmp)
    rng = np.random.default_rng(seed)
    step = 50_000
    t0 = time.perf_counter()
    for s in range(0, n, step):
        m = min(step, n - s)
        with write_tx(conn):
            conn.executemany("INSERT INTO records(id, kind, recorded_at, content_hash, body) "
                             "VALUES (?, 'doc', '2025-01-01T00:00:00.000000Z', ?, '')",
                             [(f"v{i}", f"h{i}") for i in range(s, s + m)])
            conn.executemany("INSERT INTO passages(pk, id, record_id, ord, text, tokens) VALUES (?, ?, ?, 0, '', 0)",
                             [(i + 1, f"v{i}:0", f"v{i}") for i in range(s, s + m)])
            vecs = _unit(rng, m)
            conn.executemany("INSERT INTO vectors(passage_pk, model_id, vec) VALUES (?, ?, ?)",
                             [(i + 1 + s, DEFAULT_MODEL_ID, vecs[i].astype("<f4").tobytes()) for i in range(m)])
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    for s in ("-wal", "-shm"):
        Path(f"{tmp}{s}").unlink(missing_ok=True)
    os.replace(tmp, path)
    print(f"built {path} in {time.perf_counter() - t0:.0f} s", file=sys.stderr)
    return path


def _cfg(quantised_min: int, shortlist: float = 4, sidecar_min: int = 1):
    """The profile's [index] section with these settings."""
    return load_profile("base").with_overrides({"index.quantised_min": quantised_min, "index.shortlist": shortlist,
                                                 "index.sidecar_min": sidecar_min, "index.sidecar_tail": 0.05}).index


def index_bench(n: int, n_queries: int, shortlists: list[float]) -> dict:
    path = vector_db(n)
    conn = open_db(path)
    out: dict = {"n": n, "kernel": kernel_name() or "none"}
    # Sidecar build from the table (what `memo reindex` does).
    sidecar_path(path, DEFAULT_MODEL_ID).unlink(missing_ok=True)
    t0 = time.perf_counter()
    sc = build_sidecar(conn, sidecar_path(path, DEFAULT_MODEL_ID), DEFAULT_MODEL_ID, DIM)
    out["sidecar_build_s"] = round(time.perf_counter() - t0, 2)
    out["sidecar_mb"] = round(sc.path.stat().st_size / 2**20, 1)
    # Load: from the table (no sidecar) vs mapping the validated sidecar.
    q0 = _unit(np.random.default_rng(1), 1)[0]
    table_idx = VectorIndex(DEFAULT_MODEL_ID, DIM)
    with read_tx(conn):
        t0 = time.perf_counter()
        table_idx.search(conn, q0, None, K)
        out["load_from_table_ms"] = round((time.perf_counter() - t0) * 1000, 1)
    del table_idx
    idx = VectorIndex(DEFAULT_MODEL_ID, DIM, db_path=str(path))
    with read_tx(conn):
        t0 = time.perf_counter()
        idx.refresh(conn, _cfg(10**12))
        out["load_from_sidecar_ms"] = round((time.perf_counter() - t0) * 1000, 1)
    assert idx.base_rows == n, idx.sidecar_note
    mat = np.array(sc.f32)                   # the floor's own in-memory float32 matrix
    qs = _unit(np.random.default_rng(SEED + 1), n_queries)
    floor_ms, exact_ms = [], []
    truth = []
    int8_ms: dict[float, list[float]] = {s: [] for s in shortlists}
    recall: dict[float, list[float]] = {s: [] for s in shortlists}
    for q in qs:
        t0 = time.perf_counter()
        scores = mat @ q
        top = np.argpartition(-scores, K)[:K]
        floor_ms.append((time.perf_counter() - t0) * 1000)
        want = set((top + 1).tolist())       # pk = row + 1 in vector_db
        truth.append(want)
        with read_tx(conn):
            t0 = time.perf_counter()
            got = idx.search(conn, q, None, K, _cfg(10**12))
            exact_ms.append((time.perf_counter() - t0) * 1000)
        assert {p for p, _ in got} == want
        for s in shortlists:
            with read_tx(conn):
                t0 = time.perf_counter()
                got = idx.search(conn, q, None, K, _cfg(1, s))
                int8_ms[s].append((time.perf_counter() - t0) * 1000)
            assert idx.last_path == "int8"
            recall[s].append(len({p for p, _ in got} & want) / K)
    out["floor_f32_matvec_top100_ms"] = {"p50": _pct(floor_ms, 50), "p95": _pct(floor_ms, 95)}
    out["index_exact_ms"] = {"p50": _pct(exact_ms, 50), "p95": _pct(exact_ms, 95),
                             "x_floor": round(_pct(exact_ms, 50) / _pct(floor_ms, 50), 2)}
    out["index_int8"] = {str(s): {"p50": _pct(int8_ms[s], 50), "p95": _pct(int8_ms[s], 95),
                                  "x_floor": round(_pct(int8_ms[s], 50) / _pct(floor_ms, 50), 2),
                                  "recall@100_mean": round(statistics.mean(recall[s]), 4),
                                  "recall@100_min": round(min(recall[s]), 2)} for s in shortlists}
    conn.close()
    del mat
    for mode in ("int8", "exact"):
        res = subprocess.run([sys.executable, __file__, "rss", "--db", str(path), "--path", mode,
                              "--queries", str(min(n_queries, 30))], capture_output=True, text=True, check=True)
        out[f"rss_{mode}"] = json.loads(res.stdout)
    return out


def rss_probe(db: str, path: str, n_queries: int) -> dict:
    """A fresh process: open the database, search n queries on one path, report RSS."""
    conn = open_db(db)
    base = _rss_mb()[0]
    idx = VectorIndex(DEFAULT_MODEL_ID, DIM, db_path=db)
    cfg = _cfg(1) if path == "int8" else _cfg(10**12)
    for q in _unit(np.random.default_rng(5), n_queries):
        with read_tx(conn):
            idx.search(conn, q, None, K, cfg)
    rss, hwm = _rss_mb()
    return {"path": idx.last_path, "rss_mb": rss, "peak_mb": hwm, "before_index_mb": base,
            "index_mb": round(rss - base, 1)}


# -- hybrid (scale_build's database) ----------------------------------------------------

def _scale_db(n: int) -> Path:
    from bench.scale_build import cache_path
    path = cache_path(n, SEED, "random")
    if not path.exists():
        raise SystemExit(f"{path} is missing: run bench/scale_build.py --n {n} first")
    return path


def hybrid_bench(n: int, n_queries: int, db: str | None = None) -> dict:
    from bench.scale_build import scifact_queries
    from memo.embed.registry import load_registry
    from memo.embed.service import SemanticService
    from memo.retrieve import search
    from memo.retrieve.services import ArmServices
    from memo.retrieve.types import SearchRequest
    from memo.text.fts_query import keyword_match

    path = Path(db) if db else _scale_db(n)
    conn = open_db(path)
    claims = [text for _, text in scifact_queries()][:n_queries]
    qvecs = _unit(np.random.default_rng(SEED + 2), len(claims))
    spec = load_registry().get(DEFAULT_MODEL_ID)
    svc = SemanticService(conn, spec)
    base = load_profile("rrf")
    profiles = {"default": base,
                "int8": base.with_overrides({"index.quantised_min": 1}, name="int8"),
                "exact": base.with_overrides({"index.quantised_min": 10**9}, name="exact")}
    # Warm: first search loads the matrix (and writes the sidecar if it is missing).
    t0 = time.perf_counter()
    search(conn, SearchRequest(claims[0]), base, ArmServices(semantic=svc, query_vector=qvecs[0]))
    out: dict = {"n": len(svc.index), "db": str(path), "first_search_ms": round((time.perf_counter() - t0) * 1000, 1),
                 "sidecar": svc.index.sidecar_note, "vectors": len(svc.index), "kernel": kernel_name() or "none"}
    mat = np.array(svc.index._base.f32) if svc.index._base is not None else None
    fts_ms, vec_ms = [], []
    times: dict[str, list[float]] = {name: [] for name in profiles}
    kw_ms: list[float] = []
    for claim, qv in zip(claims, qvecs, strict=True):
        match = keyword_match(claim)
        t0 = time.perf_counter()
        conn.execute("SELECT rowid, bm25(passages_fts) AS s FROM passages_fts WHERE passages_fts MATCH ? "
                     "ORDER BY s LIMIT ?", (match, K)).fetchall()
        fts_ms.append((time.perf_counter() - t0) * 1000)
        if mat is not None:
            t0 = time.perf_counter()
            np.argpartition(-(mat @ qv), K)[:K]
            vec_ms.append((time.perf_counter() - t0) * 1000)
        for name, prof in profiles.items():
            t0 = time.perf_counter()
            search(conn, SearchRequest(claim), prof, ArmServices(semantic=svc, query_vector=qv))
            times[name].append((time.perf_counter() - t0) * 1000)
        t0 = time.perf_counter()
        search(conn, SearchRequest(claim, mode="keyword"), base)
        kw_ms.append((time.perf_counter() - t0) * 1000)
    floors = _pct(fts_ms, 50) + (_pct(vec_ms, 50) if vec_ms else 0.0)
    out["floor_fts5_or_ms"] = {"p50": _pct(fts_ms, 50), "p95": _pct(fts_ms, 95)}
    if vec_ms:
        out["floor_matvec_ms"] = {"p50": _pct(vec_ms, 50), "p95": _pct(vec_ms, 95)}
    out["keyword_only_ms"] = {"p50": _pct(kw_ms, 50), "p95": _pct(kw_ms, 95)}
    for name, xs in times.items():
        if xs:
            out[f"hybrid_{name}_ms"] = {"p50": _pct(xs, 50), "p95": _pct(xs, 95),
                                        "x_floors": round(_pct(xs, 50) / floors, 2)}
    conn.close()
    return out


def cold_cli_bench(n: int, runs: int) -> dict:
    from bench.scale_build import scifact_queries

    path = _scale_db(n)
    memo_bin = str(Path(sys.executable).with_name("memo"))
    claims = [text for _, text in scifact_queries()][:runs]
    out: dict = {"n": n}
    with tempfile.TemporaryDirectory() as tmp:
        no_sc = Path(tmp) / "no-sidecar.toml"
        text = (ROOT / "profiles" / "rrf.toml").read_text()
        no_sc.write_text(text.replace("sidecar_min = 20000", "sidecar_min = 0"))
        for label, prof in (("sidecar", "rrf"), ("table", str(no_sc))):
            walls = []
            for claim in claims:
                t0 = time.perf_counter()
                res = subprocess.run([memo_bin, "search", claim, "--db", str(path), "--json", "--profile", prof],
                                     capture_output=True, text=True)
                walls.append((time.perf_counter() - t0) * 1000)
                if res.returncode != 0:
                    raise SystemExit(res.stderr[-2000:])
                doc = json.loads(res.stdout)
            out[f"cold_cli_{label}_ms"] = {"p50": _pct(walls, 50), "min": round(min(walls), 1),
                                           "stage_ms": doc.get("trace", {}).get("stage_ms", {})}
        # The floor of a cold CLI: starting the interpreter and importing memo's CLI.
        walls = []
        for _ in range(runs):
            t0 = time.perf_counter()
            subprocess.run([memo_bin, "--help"], capture_output=True, check=True)
            walls.append((time.perf_counter() - t0) * 1000)
        out["floor_memo_help_ms"] = {"p50": _pct(walls, 50)}
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="mode", required=True)
    a = sub.add_parser("index")
    a.add_argument("--n", type=int, nargs="+", default=[100_000])
    a.add_argument("--queries", type=int, default=50)
    a.add_argument("--shortlists", type=float, nargs="+", default=[2, 4, 8])
    b = sub.add_parser("hybrid")
    b.add_argument("--n", type=int, default=100_000)
    b.add_argument("--queries", type=int, default=100)
    b.add_argument("--db", help="another database (e.g. index mode's vector-only one: no text, so the "
                                "keyword arm finds nothing and the figure is the vector share)")
    c = sub.add_parser("cold-cli")
    c.add_argument("--n", type=int, default=100_000)
    c.add_argument("--runs", type=int, default=5)
    r = sub.add_parser("rss")
    r.add_argument("--db", required=True)
    r.add_argument("--path", choices=["int8", "exact"], required=True)
    r.add_argument("--queries", type=int, default=30)
    args = ap.parse_args()
    if args.mode == "rss":
        print(json.dumps(rss_probe(args.db, args.path, args.queries)))
        return
    info = {"load": [round(x, 2) for x in os.getloadavg()],
            "maxrss_mb_before": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)}
    if args.mode == "index":
        results = [index_bench(n, args.queries, args.shortlists) for n in args.n]
    elif args.mode == "hybrid":
        results = [hybrid_bench(args.n, args.queries, args.db)]
    else:
        results = [cold_cli_bench(args.n, args.runs)]
    info["load_after"] = [round(x, 2) for x in os.getloadavg()]
    print(json.dumps({"machine": info, "results": results}, indent=1))


if __name__ == "__main__":
    main()
