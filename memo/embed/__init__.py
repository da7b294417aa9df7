"""Embeddings: model registry, ONNX embedder, vector storage, in-memory index, backfill and
the semantic service the search pipeline uses (docs/models.md).

Thread pinning: the target machine has 2 cores.  onnxruntime gets 2 intra-op threads
(``memo.embed.model.onnx_threads``); numpy's OpenBLAS is capped at 2 as well, so the two
never oversubscribe the CPU.  The env var only takes effect if set before numpy is first
imported, hence here, before our own numpy imports (an explicit user setting wins).
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", str(max(1, min(2, os.cpu_count() or 1))))

DEFAULT_MODEL_ID = "all-minilm-l6-v2-int8"
