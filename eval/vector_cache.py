"""Passage vectors kept between index builds, text by text (``memo_eval.index.ensure_passage_vectors``).

A data set's vectors are cached as one ``.npy`` file keyed by a hash of every text the
model embeds, so a change to one passage's text (a splitter fix, a corrected encoding)
missed the cache and re-embedded the whole corpus: relnotes' 20,617 passages took ~11
minutes on 2 cores for one changed file.  Each cache file now has a sidecar
(``<name>.keys.npy``): a 16-byte digest of each row's text, in row order.  On a miss, the
rows whose text a cache file of the model holds (the same data set's first) take that vector (the
model is deterministic: the same text gives the same vector), and only the rest is
embedded.  Files written before the sidecars existed get one the next time they are read.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np

DIGEST_BYTES = 16


def text_keys(texts: Sequence[str]) -> np.ndarray:
    """One row of ``DIGEST_BYTES`` bytes per text: the start of its sha256."""
    import numpy as np

    out = np.empty((len(texts), DIGEST_BYTES), dtype=np.uint8)
    for i, t in enumerate(texts):
        out[i] = np.frombuffer(hashlib.sha256(t.encode("utf-8", "surrogatepass")).digest()[:DIGEST_BYTES],
                               dtype=np.uint8)
    return out


def keys_path(cache: Path) -> Path:
    return cache.with_name(cache.stem + ".keys.npy")


def _save(path: Path, array: np.ndarray) -> None:
    import numpy as np

    tmp = path.with_name(path.stem + f".tmp{os.getpid()}.npy")
    np.save(tmp, array)
    os.replace(tmp, path)


def save(cache: Path, vectors: np.ndarray, keys: np.ndarray) -> None:
    """The vectors and their keys, each written whole and renamed into place (the keys
    first: a cache file is never read with another file's keys)."""
    cache.parent.mkdir(parents=True, exist_ok=True)
    _save(keys_path(cache), keys)
    _save(cache, vectors)


def save_keys(cache: Path, keys: np.ndarray) -> None:
    """A sidecar for a cache file written before sidecars existed (its rows are ``keys``)."""
    if not keys_path(cache).exists():
        _save(keys_path(cache), keys)


def known_vectors(folder: Path, set_name: str, model: str, keys: np.ndarray, dimensions: int
                  ) -> dict[int, np.ndarray]:
    """Row index -> vector, for the rows whose text a cache file of the model holds with its
    keys (``<set>-<model>-<hash>.npy``): the same data set's files first, then the others
    (codesearch-nl and locomo-obs embed the texts of codesearch and locomo)."""
    import numpy as np

    wanted = {k.tobytes(): i for i, k in enumerate(keys)}
    found: dict[int, np.ndarray] = {}
    sides = sorted(folder.glob(f"*-{model}-*.keys.npy"), key=lambda p: (not p.name.startswith(f"{set_name}-{model}-"), p.name))
    for side in sides:
        data = side.with_name(side.name[: -len(".keys.npy")] + ".npy")
        if not data.exists() or len(found) == len(wanted):
            continue
        donor_keys = np.load(side)
        vecs = np.load(data, mmap_mode="r")
        if vecs.shape != (len(donor_keys), dimensions):
            continue
        for j, k in enumerate(donor_keys):
            i = wanted.get(k.tobytes())
            if i is not None and i not in found:
                found[i] = np.array(vecs[j])
    return found
