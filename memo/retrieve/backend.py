"""The storage seam of search: what an arm may ask of storage, answered by each backend.

Arms never write engine-specific SQL; they ask their backend (``backend_of(ctx.conn)``) for
the top-k of one index under one scope, or for a term's statistics, and the two
implementations answer the same questions:

* ``sqlite``: FTS5 bm25 (or the impact index that reproduces it), the in-process vector
  index (exact float32, int8 + rescoring, the memory-mapped sidecar);
* ``postgres``: bm25 over postings tables and pgvector (exact or HNSW), in the server
  (``memo.store.postgres``).

Every answer has the scope filter applied inside the engine, before the top-k (seed
section 1), and reads the search's one snapshot (``memo.store.connect.read_tx``).
Everything above the arms (fusion, recency, abstention, cutoff, limit, budget, why,
trace) is the same code on both.

Canonical writes go through the store (``memo.store``): the same statements on both
engines, translated at the PostgreSQL connection (``memo.store.postgres.connection``),
derived indexes written in the same transaction (FTS5 rows on SQLite, triggers on
PostgreSQL).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol

from memo.store.dialect import is_postgres

if TYPE_CHECKING:
    import numpy as np

    from memo.retrieve.types import ArmHit


class SearchBackend(Protocol):
    """The questions arms ask of storage (one implementation per engine).  ``ctx`` is the
    arm's ``memo.retrieve.arms.base.ArmContext`` (typed ``Any`` here: the arms import this
    module, so it must not import theirs)."""

    name: str

    def text_topk(self, ctx: Any, index: str, match: str, words: list[str] | None) -> list[ArmHit]:
        """Keyword (``passages_fts``) or exact (``exact_fts``) arm: top ``ctx.fetch_depth``
        passages by bm25 under ``ctx.scope_sql``; ``match`` is the FTS5 query text (quoted
        terms OR-ed), ``words`` the keyword arm's words."""
        ...

    def vector_topk(self, ctx: Any, svc: Any, qvec: np.ndarray) -> list[ArmHit]:
        """Semantic arm: top ``ctx.fetch_depth`` passages by cosine under the scope."""
        ...

    def prepare_vectors(self, ctx: Any, svc: Any) -> None:
        """What ``vector_topk`` will read, made ready before the query vector exists (the
        semantic arm's ``prepare``, while a cold process's model loads); same answers."""
        ...

    def fact_text_topk(self, ctx: Any, match: str, where: str, params: Sequence[Any]) -> list[tuple[int, float]]:
        """Fact arm, keyword list: [(fact pk, -bm25)] best first under the facts' filter."""
        ...

    def fact_vector_topk(self, ctx: Any, svc: Any, qvec: np.ndarray,
                         allowed: Sequence[int]) -> list[tuple[int, float]]:
        """Fact arm, meaning list: [(fact pk, cosine)] best first among ``allowed``."""
        ...

    def vectors_pending(self, ctx: Any, svc: Any) -> int:
        """In-scope passages with no vector for ``svc``'s model in this snapshot (the
        semantic arm cannot see them; the trace says so in degraded)."""
        ...

    def keyword_scores(self, ctx: Any, match: str, pks: Sequence[int],
                       words: Sequence[str] | None = None) -> dict[int, float]:
        """-bm25 of the keyword arm's match for these passages (the entity arm's tiebreak);
        ``words``: the match's words (``query_words``), for a backend that can score them
        without running the match."""
        ...

    def passage_cosines(self, conn: Any, model_id: str, qvec: np.ndarray, pks: Sequence[int]) -> dict[int, float]:
        """Cosine of the query vector with each of these passages' stored vectors (those that
        have one): the relevance of a result the semantic arm did not return."""
        ...

    def word_df(self, conn: Any, word: str, where: str, params: Sequence[Any]) -> int:
        """In-scope passages holding ``word`` (routing's common-word test)."""
        ...

    def term_holders(self, conn: Any, table: str, terms: Sequence[str],
                     rows: Sequence[int]) -> list[tuple[str, int, list[int]]]:
        """Abstention's keyword evidence: for each term, (term, rows of ``table`` holding
        it, which of ``rows`` hold it)."""
        ...


def backend_of(conn: Any) -> SearchBackend:
    """The search backend of a connection (SQLite's unless it is a PostgreSQL one)."""
    return POSTGRES if is_postgres(conn) else SQLITE


# Below the Protocol: the implementations import only lower modules (scope, impact, types,
# memo.store.postgres), never this package's users.
from memo.retrieve.backend_postgres import POSTGRES  # noqa: E402
from memo.retrieve.backend_sqlite import SQLITE  # noqa: E402
