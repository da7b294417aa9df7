"""Embedding commands: ``memo backfill``, ``memo models list|check|fetch``.

Thin skin over ``memo.embed``; every command takes ``--json`` and prints one document.
"""

from __future__ import annotations

import time
from typing import Annotated

import typer

from memo.cli.common import DbOption, JsonOption, echo, handle_errors, print_json
from memo.embed.fetch import fetch_model
from memo.embed.integrity import sha256_file
from memo.embed.registry import ModelSpec, load_registry, user_models_file
from memo.errors import MemoError, ModelUnavailable
from memo.store.db import open_db, resolve_db_path

ModelOpt = Annotated[str | None, typer.Option("--model", "-m", help="Model id (default: $MEMO_MODEL or the registry default).")]


def _spec_doc(spec: ModelSpec, default: str) -> dict[str, object]:
    return {"id": spec.id, "default": spec.id == default, "description": spec.description,
            "onnx": str(spec.onnx), "onnx_present": spec.onnx.is_file(), "sha256": spec.sha256,
            "tokenizer": str(spec.tokenizer), "tokenizer_present": spec.tokenizer.is_file(),
            "dimensions": spec.dimensions, "pooling": spec.pooling, "max_tokens": spec.max_tokens,
            "bands": {"semantic_floor": spec.bands.semantic_floor, "weak": spec.bands.weak,
                      "moderate": spec.bands.moderate, "strong": spec.bands.strong},
            "url": spec.url, "source": spec.source}


def check_model(spec: ModelSpec) -> dict[str, object]:
    """Files present, hashes right, loads, embeds a probe text with the right dimensions."""
    doc: dict[str, object] = {"id": spec.id, "onnx": str(spec.onnx), "ok": False}
    try:
        t0 = time.perf_counter()
        from memo.embed.service import load_model  # numpy/onnxruntime: only when a command embeds

        model = load_model(spec)
        doc["load_ms"] = round((time.perf_counter() - t0) * 1000, 1)
        t0 = time.perf_counter()
        vec = model.embed_query("memo model check")
        doc["embed_ms"] = round((time.perf_counter() - t0) * 1000, 1)
        doc["dimensions"] = int(vec.shape[0])
        doc["ok"] = True
        doc["reason"] = "sha256 ok, loads, embeds"
    except MemoError as exc:
        doc["reason"] = str(exc)
        if spec.onnx.is_file():
            doc["sha256_actual"] = sha256_file(spec.onnx)
    return doc


def register(app: typer.Typer) -> None:
    models = typer.Typer(help="Embedding models: list, check, fetch (docs/models.md).", no_args_is_help=True)
    app.add_typer(models, name="models")

    @app.command("backfill")
    @handle_errors
    def backfill_cmd(db: DbOption = None, model: ModelOpt = None,
                     batch_size: Annotated[int, typer.Option("--batch-size", min=1, max=1024)] = 64,
                     as_json: JsonOption = False) -> None:
        """Embed passages that have no vector for the model yet (queued while it was unavailable)."""
        conn = open_db(db, write=True, create=False)
        try:
            from memo.embed.backfill import backfill

            # --json: its document alone, as `memo import --json` (no bar, no progress lines)
            report = backfill(conn, model, progress=not as_json, batch_size=batch_size)
        finally:
            conn.close()
        if as_json:
            print_json(report)
        else:
            copied = f" ({report.reused} copied from an earlier version)" if report.reused else ""
            echo(f"embedded {report.embedded} passages with {report.model_id}{copied} in {report.seconds}s "
                       f"({report.per_second}/s); {report.pending_after} still pending")

    @models.command("list")
    @handle_errors
    def list_cmd(db: DbOption = None, as_json: JsonOption = False) -> None:
        """Registered models (built in + $MEMO_MODELS / user models.toml) and vectors per model."""
        reg = load_registry()
        in_db: dict[str, int] = {}
        path = resolve_db_path(db)
        if path.exists():
            conn = open_db(path, write=False)
            try:
                from memo.embed.vectors import model_ids_in_db

                in_db = model_ids_in_db(conn)
            finally:
                conn.close()
        docs = [{**_spec_doc(s, reg.default), "vectors": in_db.get(s.id, 0)} for s in reg.models.values()]
        user = user_models_file()
        if as_json:
            print_json({"default": reg.default, "user_file": str(user) if user else None, "models": docs,
                        "vectors_of_unregistered_models": {k: v for k, v in in_db.items() if k not in reg.models}})
            return
        for d in docs:
            mark = "*" if d["default"] else " "
            state = "present" if d["onnx_present"] else "missing"
            echo(f"{mark} {d['id']}  {d['dimensions']}-d {d['pooling']}  file {state}  vectors {d['vectors']}")

    @models.command("check")
    @handle_errors
    def check_cmd(model_id: Annotated[str | None, typer.Argument(help="Model id (default model if omitted).")] = None,
                  db: DbOption = None, as_json: JsonOption = False) -> None:
        """Verify a model: files, sha256, load, one embedding; vectors and pending in the DB."""
        spec = load_registry().get(model_id)
        doc = check_model(spec)
        path = resolve_db_path(db)
        if path.exists():
            conn = open_db(path, write=False)
            try:
                from memo.embed.vectors import pending_count, vector_count

                doc["vectors"] = vector_count(conn, spec.id)
                doc["pending"] = pending_count(conn, spec.id)
            finally:
                conn.close()
        if as_json:
            print_json(doc)
        else:
            echo(f"{spec.id}: {'ok' if doc['ok'] else 'UNAVAILABLE'} ({doc['reason']})")
            if "vectors" in doc:
                echo(f"  vectors {doc['vectors']}, pending {doc['pending']}")
        if not doc["ok"]:
            raise typer.Exit(ModelUnavailable.exit_code)

    @models.command("fetch")
    @handle_errors
    def fetch_cmd(model_id: Annotated[str, typer.Argument(help="Model id with a `url` in the registry.")],
                  force: Annotated[bool, typer.Option("--force", help="Download even if present.")] = False,
                  as_json: JsonOption = False) -> None:
        """Download a model's files to the user cache dir and check their sha256."""
        spec = load_registry().get(model_id)
        got = fetch_model(spec, force=force)
        if as_json:
            print_json({"id": spec.id, "files": got})
        else:
            for f in got:
                echo(f"{f.what}: {f.path} ({'already present' if f.skipped else f'{f.bytes} bytes'}, sha256 ok)")
