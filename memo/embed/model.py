"""Run an ONNX sentence-embedding model: tokenise, batch, pool, normalise.

* The files are hash-checked (``memo.embed.integrity``) before either is parsed; a model
  whose optimised graph is loaded instead (``memo.embed.optimized``) is hashed again only
  when its file changed since a process last checked it (``_session``).
* ``tokenizer.json`` of all-MiniLM-L6-v2 fixes truncation and padding at 128 tokens; we
  override truncation to the model's ``max_tokens`` (256) and pad ourselves, per batch, to
  the longest text in that batch.
* Texts are sorted by token count before batching, so a batch holds texts of similar
  length and little compute goes to padding; results come back in the caller's order.
* Inputs are fed by name, and only those the graph declares (BERT-style models take
  ``token_type_ids`` (all zeros); ModernBERT-style models do not).
* Pooling: mean over the attention mask (MiniLM) or the first token (``cls``), then L2
  normalisation, so cosine is a dot product.
* Memory: onnxruntime's CPU arena grows to the largest forward pass and, by default,
  keeps it for the life of the session.  A long-running server (memo-mcp, memo web) that
  embedded one 4.5 MB note stayed about 320 MB larger for good (issue 33.3).  So ``embed``
  runs its last pass with arena shrinkage whenever a pass was larger than one full-length
  row (more than a query or a one-passage note can take): the arena is reused between the
  passes of a call (no speed lost inside a batch) and handed back at its end.  The passes
  themselves are unchanged (same rows, same vectors).
* Loading: onnxruntime parses and prepares the graph (~150 ms for the default model, most
  of a load) without holding the GIL, so the session is built on a helper thread
  (``SessionBuild``) while the caller's thread parses the tokenizer.  A one-shot caller can
  start it earlier still (``start_loading``): ``memo search`` does, before it imports the
  pipeline, so a cold hybrid search's imports and database work overlap the model's load.
"""

from __future__ import annotations

import os
import threading
from typing import Any

import numpy as np

from memo.embed import optimized
from memo.embed.integrity import verify
from memo.embed.registry import ModelSpec
from memo.errors import MemoError, ModelUnavailable
from memo.text.folding import scrub_surrogates

DEFAULT_BATCH = 64
# Forward passes are also capped by padded tokens (rows x longest row): the arena a pass
# needs grows with it (attention is rows x 12 heads x width^2 floats per layer).  4096 (16
# rows of 256) lifted a process ~370 MB above the loaded model while a 4.5 MB note
# embedded; 1024 (4 rows of 256) ~140 MB, at the same passages/s on the 2-core target and
# with identical vectors (max abs difference 0.0): issue 33.3, docs/results-log.md
# "Embedding model: batch size, threads, hash".  Short texts still get up to 64 rows per
# pass (32 rows of a 32-token chat turn).
TOKENS_PER_PASS = 1024


def onnx_threads() -> int:
    """intra-op threads: the machine has 2 cores; more threads only add contention."""
    env = os.environ.get("MEMO_ONNX_THREADS")
    if env:
        return max(1, int(env))
    return max(1, min(2, os.cpu_count() or 1))


def session_options():  # -> onnxruntime.SessionOptions
    import onnxruntime as ort

    opts = ort.SessionOptions()
    opts.intra_op_num_threads = onnx_threads()
    opts.inter_op_num_threads = 1
    opts.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    opts.log_severity_level = 3  # errors only: warnings would go to stderr on every load
    # No busy-spinning between ops: on a shared 2-core box (server + ingest + other tools)
    # spinning threads steal the CPU the other thread needs: a query embeds faster without
    # (docs/results-log.md "Embedding model: batch size, threads, hash").
    # MEMO_ONNX_SPIN=1 turns it back on for a dedicated machine.
    spin = "1" if os.environ.get("MEMO_ONNX_SPIN") == "1" else "0"
    opts.add_session_config_entry("session.intra_op.allow_spinning", spin)
    opts.add_session_config_entry("session.inter_op.allow_spinning", spin)
    return opts


def _session(ort: Any, spec: ModelSpec) -> Any:
    """The model's onnxruntime session: from the graph optimised once on this machine
    (``memo.embed.optimized``) when there is one, else optimised now (and saved).

    The model file is hash-checked (``verify``) before onnxruntime parses a byte of it,
    and before its optimised graph is trusted, unless the graph's record says a process
    checked this very file (same size, mtime, inode and ctime: ``optimized.source_checked``)."""
    opts = session_options()
    root = optimized.cache_root()
    if root is None:
        verify(spec.onnx, spec.sha256)
        return ort.InferenceSession(str(spec.onnx), sess_options=opts, providers=["CPUExecutionProvider"])
    stem = optimized.key(spec.sha256, ort.__version__, opts.graph_optimization_level.name)
    path = optimized.cached(root, stem)
    if path is not None:
        if not optimized.source_checked(root, stem, spec.onnx):
            optimized.record_source(root, stem, spec.onnx, _verified_stat(spec))
        opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL   # done already
        try:
            return ort.InferenceSession(str(path), sess_options=opts, providers=["CPUExecutionProvider"])
        except Exception:  # noqa: BLE001 - onnxruntime raises several types; the file goes, the model loads
            optimized.forget(root, stem)
            opts = session_options()
    return optimized.write(ort, spec.onnx, opts, root, stem, _verified_stat(spec))


def _verified_stat(spec: ModelSpec) -> list[int] | None:
    """Hash-check the model file; its stat from before the check (None: a file that is
    not there, which ``verify`` reports)."""
    try:
        stat = optimized.source_stat(spec.onnx)
    except OSError:
        stat = None
    verify(spec.onnx, spec.sha256)
    return stat


class SessionBuild:
    """One model's session, hash-checked and built on a helper thread (module docstring).
    ``result()`` waits for it and raises what the build raised: ``ModelUnavailable`` for a
    missing or corrupt file, onnxruntime's own error for a graph it refuses.

    The thread is not a daemon: a process that exits while the session builds waits for it
    (a few hundred ms) rather than tearing onnxruntime down under a running build."""

    def __init__(self, ort: Any, spec: ModelSpec) -> None:
        self.spec = spec
        self._session: Any = None
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._build, args=(ort,), name=f"memo-model-{spec.id}")
        self._thread.start()

    def _build(self, ort: Any) -> None:
        try:
            self._session = _session(ort, self.spec)
        except BaseException as exc:  # noqa: BLE001 - handed to the thread that waits for it
            self._error = exc

    def result(self) -> Any:
        self._thread.join()
        if self._error is not None:
            raise self._error
        return self._session


_builds_lock = threading.Lock()
_builds: dict[str, SessionBuild] = {}     # model id -> a build started ahead, not yet taken


def start_loading(spec: ModelSpec) -> None:
    """Start building ``spec``'s session now, for the next ``OnnxEmbedder(spec)`` of this
    process to take (``memo search`` calls it before importing the pipeline).  Imports
    onnxruntime in the calling thread first: two threads importing at once each get half
    of the GIL, and the build is what the search will wait for.  Does nothing when a build
    for the model is already under way; a failure shows when the model is asked for."""
    import onnxruntime as ort

    with _builds_lock:
        if spec.id not in _builds:
            _builds[spec.id] = SessionBuild(ort, spec)


_tokenizers: dict[str, tuple[ModelSpec, Any]] = {}   # model id -> (spec, tokenizer) parsed ahead, not yet taken


def preload_tokenizer(spec: ModelSpec) -> None:
    """Parse ``spec``'s tokenizer now, for the next ``OnnxEmbedder(spec)`` of this process
    to take: the semantic arm's prepare, while the session builds on its helper thread
    (the tokenizer is ~15 ms that would otherwise follow the build).  A failure is left
    for the embedder to meet and report."""
    with _builds_lock:
        if spec.id in _tokenizers:
            return
    try:
        tok = load_tokenizer(spec)
    except MemoError:
        return
    with _builds_lock:
        _tokenizers.setdefault(spec.id, (spec, tok))


def _take_tokenizer(spec: ModelSpec) -> Any:
    """The tokenizer ``preload_tokenizer`` parsed for ``spec`` (the same spec), else a new one."""
    with _builds_lock:
        got = _tokenizers.pop(spec.id, None)
    if got is not None and got[0] == spec:
        return got[1]
    return load_tokenizer(spec)


def _take_build(ort: Any, spec: ModelSpec) -> SessionBuild:
    """The build ``start_loading`` started for ``spec`` (the same spec), else a new one."""
    with _builds_lock:
        build = _builds.pop(spec.id, None)
    if build is not None and build.spec == spec:
        return build
    return SessionBuild(ort, spec)


def load_tokenizer(spec: ModelSpec):  # -> tokenizers.Tokenizer
    from tokenizers import Tokenizer

    if spec.tokenizer_sha256:
        verify(spec.tokenizer, spec.tokenizer_sha256, what="tokenizer")
    elif not spec.tokenizer.is_file():
        raise ModelUnavailable(f"tokenizer file missing: {spec.tokenizer}")
    try:
        tok = Tokenizer.from_file(str(spec.tokenizer))
    except Exception as exc:
        raise ModelUnavailable(f"tokenizer {spec.tokenizer} failed to load: {exc}") from exc
    tok.enable_truncation(max_length=spec.max_tokens)
    tok.no_padding()  # we pad per batch in _pad()
    return tok


def _built(build: SessionBuild) -> Any:
    """The build's session; a graph onnxruntime refuses becomes ``ModelUnavailable``."""
    try:
        return build.result()
    except ModelUnavailable:
        raise
    except Exception as exc:  # onnxruntime raises several types for a bad graph
        raise ModelUnavailable(f"model {build.spec.id} failed to load: {str(exc).splitlines()[0][:200]}",
                               hint="reinstall or refetch the model file (`memo models check`)") from exc


def _pad_id(tok) -> int:
    for token in ("[PAD]", "<pad>"):
        pid = tok.token_to_id(token)
        if pid is not None:
            return int(pid)
    return 0


class OnnxEmbedder:
    """One loaded model.  Thread-safe: onnxruntime sessions may run concurrently and the
    tokenizer is read-only after construction."""

    def __init__(self, spec: ModelSpec) -> None:
        import onnxruntime as ort

        self.spec = spec
        self.model_id = spec.id
        self.dimensions = spec.dimensions
        build = _take_build(ort, spec)               # the session builds while the tokenizer loads
        try:
            tokenizer = _take_tokenizer(spec)
        finally:
            self.session = _built(build)             # a bad model file is reported before a bad tokenizer
        self.tokenizer = tokenizer
        self.pad_id = _pad_id(self.tokenizer)
        # Run options that free the arena's unused memory at the end of a run (module docstring).
        self._release = ort.RunOptions()
        self._release.add_run_config_entry("memory.enable_memory_arena_shrinkage", "cpu:0")
        self.inputs = {i.name for i in self.session.get_inputs()}
        outputs = [o.name for o in self.session.get_outputs()]
        self.output = spec.output if spec.output in outputs else outputs[0]
        self._lock = threading.Lock()
        self._checked_dim = False

    # -- encoding --------------------------------------------------------------------------

    def tokenize(self, texts: list[str]) -> list[list[int]]:
        # The tokenizers library refuses lone surrogates (TypeError): replace them first.
        return [enc.ids for enc in self.tokenizer.encode_batch([scrub_surrogates(t) for t in texts])]

    def _feed(self, ids: list[list[int]]) -> dict[str, np.ndarray]:
        width = max(len(x) for x in ids)
        input_ids = np.full((len(ids), width), self.pad_id, dtype=np.int64)
        mask = np.zeros((len(ids), width), dtype=np.int64)
        for row, seq in enumerate(ids):
            input_ids[row, : len(seq)] = seq
            mask[row, : len(seq)] = 1
        feed = {"input_ids": input_ids, "attention_mask": mask}
        if "token_type_ids" in self.inputs:
            feed["token_type_ids"] = np.zeros_like(input_ids)
        return {k: v for k, v in feed.items() if k in self.inputs}

    def _pool(self, states: np.ndarray, mask: np.ndarray) -> np.ndarray:
        if states.ndim == 2:  # the graph already pools (a "sentence_embedding" output)
            vecs = states
        elif self.spec.pooling == "cls":
            vecs = states[:, 0, :]
        else:
            m = mask[:, :, None].astype(np.float32)
            vecs = (states * m).sum(axis=1) / np.clip(m.sum(axis=1), 1e-9, None)
        norms = np.linalg.norm(vecs, axis=1, keepdims=True)
        return (vecs / np.clip(norms, 1e-12, None)).astype(np.float32)

    def run_ids(self, ids: list[list[int]], *, release: bool = False) -> np.ndarray:
        """One forward pass over token ids (one batch) -> unit vectors.  ``release``: hand
        the arena's memory back once the pass is done (after a large call)."""
        feed = self._feed(ids)
        (states,) = self.session.run([self.output], feed, self._release if release else None)
        vecs = self._pool(states, feed["attention_mask"])
        if not self._checked_dim:
            if vecs.shape[1] != self.dimensions:
                raise ModelUnavailable(f"model {self.model_id} returns {vecs.shape[1]}-d vectors, "
                                       f"registry says {self.dimensions}")
            self._checked_dim = True
        return vecs

    def embed(self, texts: list[str], batch_size: int = DEFAULT_BATCH, prefix: str = "") -> np.ndarray:
        """Unit vectors (len(texts), dimensions) in the order given."""
        out = np.zeros((len(texts), self.dimensions), dtype=np.float32)
        if not texts:
            return out
        ids = self.tokenize([prefix + t for t in texts] if prefix else list(texts))
        lengths = [len(x) for x in ids]
        passes = _passes(np.argsort(lengths, kind="stable"), lengths, batch_size, TOKENS_PER_PASS)
        # Padded tokens of the largest pass (a pass's last row is its longest): over one
        # full-length row, the arena grew past what a query needs; release it at the end.
        grew = max(len(idx) * lengths[idx[-1]] for idx in passes) > self.spec.max_tokens
        for n, idx in enumerate(passes):
            out[idx] = self.run_ids([ids[i] for i in idx], release=grew and n == len(passes) - 1)
        return out

    def embed_passages(self, texts: list[str], batch_size: int = DEFAULT_BATCH) -> np.ndarray:
        return self.embed(texts, batch_size, prefix=self.spec.passage_prefix)

    def embed_query(self, text: str) -> np.ndarray:
        return self.embed([text], 1, prefix=self.spec.query_prefix)[0]


def _passes(order: np.ndarray, lengths: list[int], max_rows: int, max_tokens: int) -> list[np.ndarray]:
    """Split length-sorted row indices into forward passes of at most ``max_rows`` rows and
    ``max_tokens`` padded tokens (rows x longest row; ascending order = last row longest)."""
    out, start = [], 0
    while start < len(order):
        end = start + 1
        while (end < len(order) and end - start < max_rows
               and (end - start + 1) * lengths[order[end]] <= max_tokens):
            end += 1
        out.append(order[start:end])
        start = end
    return out


def passage_text(section: str, text: str) -> str:
    """What a passage embeds as: its section header, a blank line, its text.  For a BEIR
    doc the section is the title, so this is "title\\n\\ntext"; the WordPiece tokenizer treats
    the newlines as whitespace, so this tokenises exactly like "title text"."""
    return f"{section}\n\n{text}" if section else text
