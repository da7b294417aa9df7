"""Embeddings: model registry, ONNX embedder, vector storage, in-memory index, backfill and
the semantic service the search pipeline uses (docs/models.md).

Thread pinning: onnxruntime gets 2 intra-op threads without spinning
(``memo.embed.model.session_options``); numpy's OpenBLAS is pinned to 1 thread in
``memo/__init__.py`` (it must be set before numpy is first imported), because the
per-query mat-vec is too small for a BLAS thread pool to pay off.
"""

from __future__ import annotations

DEFAULT_MODEL_ID = "all-minilm-l6-v2-int8"
# How the semantic service's status begins when the model is fine but no passage has a
# vector for it yet: the empty answer then points at `memo backfill`, not at the model.
NO_VECTORS_YET = "no vectors yet"
