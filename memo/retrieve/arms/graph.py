"""Graph arm (seed: "Personalised PageRank over the mention graph, one walk per named
entity" | "Same routing; reports only passages not every seed mentions directly").

1. Routing: as the entity arm (``memo.retrieve.arms.entity.routed``); mode ``auto`` only.
2. Seeds: the query's distinctive entities (common ones never seed a walk).
3. Graph: ``memo.graph.cache.mention_graph`` (passages x entities, facts' subject/object
   mentions included), cached per database and brought up to date after writes.
4. Mask, before top-k: passages inside the scope (the same WHERE as every arm: live
   filter or as_of, namespaces, kinds, ...; cached per connection until the data
   changes); entities that are common in the scope (``entities.common_share`` of the
   in-scope passages) and entities only ever seen starting a sentence (kind ``initial``)
   carry no walk.  The walks never enter a masked node.
5. One walk per seed (``memo.graph.ppr``): local push (``push_walk``, ``graph.epsilon``:
   touches only the seed's neighbourhood), or with ``graph.epsilon = 0`` the exact power
   iteration over the whole graph (``walk``, its own iteration cap and tolerance);
   ``graph.damping`` either way.  A passage's raw score is the sum of the walks' mass on
   it, in seed
   order (by linearity, the one walk HippoRAG runs from all seeds at once, times the
   number of seeds).  ``votes`` holds each walk's mass (``why``), which sum to raw.
6. Reported: passages with mass > 0 that do not mention every seed directly (those are
   the entity arm's; the seed's rule) and either hold at least ``graph.report_floor``
   times the largest passage mass of the search (usually a seed's own passage) or are a
   *bridge* (``graph.bridge_share`` > 0): at least two walks each put on it at least
   that share of their own largest passage mass (issue 29: "Lighthouse ... Kestrel DB"
   between a note naming Alice and one naming Bruno holds 0.037 against 0.31 for a
   seed's own note, yet 5-7% of each walk's top; passages reached through one seed's
   own note get under 0.5% of the other walk's).  Best first (raw), ties by pk, at most
   ``fetch_depth``.
7. Title hop (``graph.title_hits`` > 0, extra ``graph_titles``, issue 29.3;
   ``memo.graph.titles``): the lead passage of each record whose title is an entity that
   one of the keyword and semantic arms' first ``title_hits`` hits mentions (seed weight:
   1/rank in each arm; a semantic hit below the model's semantic_floor seeds nothing),
   never the hit's own article.  The second passage of a bridge question shares few words
   with it but is the article about a thing the first one names: this adds candidates no
   other arm found.  With the hop on, the arm runs on every auto search (not only routed ones);
   its score is put on the walk's scale (``merge_title_hops``) and its votes name the
   entity each hop went through.
8. Section hop (``graph.section_hits`` > 0, extra ``graph_sections``; ``memo.graph.sections``):
   the same hop one level down, to the lead passage of each section of a document or code
   whose own heading names the entity ("hmac.update(data[, inputEncoding])" for a hit that
   calls ``hmac.update()``), from the first ``section_hits`` hits; merged the same way.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from memo.retrieve.arms.base import ArmContext, ArmHit, ArmName, ArmPlan, VoteEvidence, default_weigh
from memo.retrieve.arms.shared import AUTO_ONLY, plan_routed, routed
from memo.retrieve.conn_cache import conn_cache
from memo.retrieve.route import is_common
from memo.retrieve.scope import scope_counts, scope_stats
from memo.store.dialect import is_postgres

if TYPE_CHECKING:
    import numpy as np

# numpy and memo.graph (which needs it) are imported by the functions that walk: a search
# the arm does not run (keyword or exact mode, not routed) loads neither
# (tests/integration/test_startup.py).  scipy is loaded only by the exact walk
# (graph.epsilon = 0): its import alone cost more than a first search may take (issue 29.5).


@dataclass(frozen=True, slots=True)
class GraphVote:
    """One walk's mass on the passage (``why.arms.graph.votes``)."""

    entity: str        # the walk's seed (entity key)
    name: str
    mass: float        # stationary probability of the walk at this passage

    @property
    def voter(self) -> str:
        return self.entity


def in_scope_pks(ctx: ArmContext) -> np.ndarray:
    """Passage pks inside the scope (cached per connection until the data changes)."""
    import numpy as np

    cache = conn_cache(ctx.conn).setdefault("graph_scope", {})
    key = (ctx.scope_sql.where, ctx.scope_sql.params)
    hit = cache.get(key)
    if hit is None:
        where = ctx.scope_sql.where or "1"
        if is_postgres(ctx.conn):
            rows = ctx.conn.execute("SELECT p.pk FROM passages p JOIN records r ON r.id = p.record_id WHERE "
                                    + where, ctx.scope_sql.params).fetchall()
            hit = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
        else:   # one string numpy parses, not a tuple per passage (issue 29.5: first search)
            text = ctx.conn.execute("SELECT group_concat(p.pk, ',') FROM passages p JOIN records r "
                                    "ON r.id = p.record_id WHERE " + where, ctx.scope_sql.params).fetchone()[0]
            hit = np.fromstring(text, dtype=np.int64, sep=",") if text else np.zeros(0, dtype=np.int64)
        if len(cache) > 64:
            cache.clear()
        cache[key] = hit
    return hit


def _scope_mask(ctx: ArmContext, graph: Any) -> np.ndarray:
    """The graph's passages inside the scope.  A scope that rules out few passages (the
    live filter of a database with few forgotten or superseded records: ``scope_stats``
    lists them from the counters and a partial index) masks those out; any other lists its
    passages (``in_scope_pks``: a join over every passage, 19% of a cold graph search at
    1M passages)."""
    import numpy as np

    excluded = scope_stats(ctx.conn, ctx.scope_sql).excluded
    if excluded is not None:
        return graph.passage_mask_except(np.fromiter(excluded, dtype=np.int64, count=len(excluded)))
    return graph.passage_mask(in_scope_pks(ctx))


def _entity_counts(ctx: ArmContext, graph: Any, p_mask: np.ndarray) -> np.ndarray:
    """Per entity, the in-scope passages that mention it (float64, as ``WT @ p_mask``).  A
    scope that rules out few passages (``_scope_mask``) subtracts their mentions from each
    entity's degree instead of summing over every edge (0.28 s of a cold search at 1M)."""
    import numpy as np

    excluded = scope_stats(ctx.conn, ctx.scope_sql).excluded
    if excluded is None:
        return graph.WT.row_sums(p_mask.astype(np.float64))
    idx = graph.passage_indices(np.fromiter(excluded, dtype=np.int64, count=len(excluded)))
    out = np.bincount(graph.W.gather(idx[idx >= 0]), minlength=graph.WT.shape[0])
    return (np.diff(graph.WT.indptr) - out).astype(np.float64)


def unconfirmed_pks(ctx: ArmContext) -> np.ndarray:
    """Entities only ever seen as a sentence-initial capitalised word (kind ``initial``,
    ``memo.text.entities``): they carry no walk (they name nothing)."""
    import numpy as np

    rows = ctx.conn.execute("SELECT pk FROM entities WHERE kind = 'initial'").fetchall()
    return np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))


def bridges(mass: np.ndarray, share: float) -> np.ndarray:
    """Per passage, how many walks put on it at least ``share`` of their own largest passage
    mass (pure; ``mass``: passages x walks).  A passage two walks reach so is a bridge
    between their seeds (graph.bridge_share): its mass is small next to a seed's own
    passage, but each walk reaches it through a distinctive entity."""
    import numpy as np

    top = mass.max(axis=0) if len(mass) else np.zeros(mass.shape[1])
    rel = np.divide(mass, top, out=np.zeros_like(mass), where=top > 0)
    return (rel >= share).sum(axis=1)


# The arms whose first hits seed the title hop (graph.title_hits); they run before this one
# (memo.retrieve.arms.ARMS), and their hits depend on the keys below, which this arm
# therefore reads too (the arm-hit cache keys its hits by them).
TITLE_HOP_ARMS = ("keyword", "semantic")


class GraphArm:
    name = "graph"
    evidence = frozenset({"structural"})
    reads = ("retrieve.fetch_depth", "entities", "graph", "retrieve.keyword_section_weight", "index")
    needs_model = False
    after: tuple[ArmName, ...] = TITLE_HOP_ARMS     # the title hop reads their best hits

    def weigh(self, ev: Any) -> VoteEvidence:
        return default_weigh(self.evidence, ev)

    def plan(self, ctx: ArmContext) -> ArmPlan:
        plan = plan_routed(ctx)
        if not plan.runs and ctx.mode == AUTO_ONLY and ctx.profile is not None and _hops(ctx.profile.graph):
            return ArmPlan(runs=True, reason=f"{plan.reason}; title or section hop from the best keyword and "
                                             "semantic hits")
        return plan

    def prepare(self, ctx: ArmContext) -> None:
        """The graph, its masks and the walk from the query's entities: all of the arm but
        the title hop, which reads the keyword and semantic arms' hits (``run_arms`` calls
        this while a cold process's model loads)."""
        if self.plan(ctx).runs:
            ctx.scratch.prepared[self.name] = (self._walked(ctx),)

    def run(self, ctx: ArmContext) -> list[ArmHit]:
        # (walked,) when prepare ran (walked None: nothing to report), else computed here
        prepared = ctx.scratch.prepared.pop(self.name, None)
        walked = prepared[0] if prepared is not None else self._walked(ctx)
        if walked is None:
            return []
        graph, masks, rows = walked
        if _hops(ctx.profile.graph):
            from memo.graph.sections import SECTIONS
            from memo.graph.titles import TITLES

            for n, spec in ((ctx.profile.graph.title_hits, TITLES), (ctx.profile.graph.section_hits, SECTIONS)):
                if n > 0:
                    rows = merge_title_hops(rows, _hop(ctx, graph, masks, n, spec))
        rows.sort(key=lambda t: (-t[0], t[1]))
        return [ArmHit(pk=pk, rank=rank, raw=raw, votes=votes)
                for rank, (raw, pk, votes) in enumerate(rows[:ctx.fetch_depth], 1)]

    def _walked(self, ctx: ArmContext) -> tuple[Any, Any, list[tuple[float, int, tuple[GraphVote, ...]]]] | None:
        """(graph, masks, the walk's rows), or None when the arm reports nothing."""
        if ctx.profile is None:
            return None
        decision = routed(ctx)
        cfg = ctx.profile.graph
        if not decision.fired and not _hops(cfg):
            return None
        import numpy as np

        from memo.graph.cache import mention_graph

        index = ctx.profile.index
        graph = mention_graph(ctx.conn, ctx.services.graph_cache, index.graph_sidecar_min, index.sidecar_tail)
        # The masked, normalised transitions depend only on the graph and the scope: cached
        # per connection until the data changes.
        # The push walk reads them for the nodes it reaches only (LocalTransitions); the exact
        # walk (graph.epsilon = 0) multiplies whole matrices.
        cache = conn_cache(ctx.conn).setdefault("graph_mask", {})
        key = (graph.epoch, graph.seq, ctx.scope_sql.where, ctx.scope_sql.params, cfg.epsilon > 0)
        masks = cache.get(key)
        if masks is None:
            from memo.graph.ppr import LocalTransitions, transitions

            p_mask = _scope_mask(ctx, graph)
            in_scope, _ = scope_counts(ctx.conn, ctx.scope_sql)
            df = _entity_counts(ctx, graph, p_mask)
            cfg_e = ctx.profile.entities
            e_mask = ~np.asarray(is_common(df, in_scope, cfg_e.common_share, cfg_e.common_min_passages), dtype=bool)
            e_mask &= ~graph.entity_mask(unconfirmed_pks(ctx))
            if len(cache) > 64:
                cache.clear()
            walkable = (LocalTransitions.of(graph.W, graph.WT, p_mask, e_mask) if cfg.epsilon > 0
                        else transitions(graph.W, graph.WT, p_mask, e_mask))
            masks = cache[key] = (walkable, p_mask)
        rows = self._walk(ctx, graph, masks[0], decision) if decision.fired else []
        return graph, masks, rows

    @staticmethod
    def _walk(ctx: ArmContext, graph: Any, masks: Any, decision: Any) -> list[tuple[float, int, tuple[GraphVote, ...]]]:
        import numpy as np

        from memo.graph.ppr import push_walk, walk

        at = [graph.entity_at(e.pk) for e in decision.distinctive]
        seeds = [(i, e) for i, e in zip(at, decision.distinctive, strict=True) if i is not None]
        # A seed the transitions mask out (an entity with no allowed passage, or common in
        # this scope by the graph's own count) starts no walk: the walks' columns are the
        # seeds kept, in order, and each vote below names the seed of its column.
        seeds = [(i, e) for i, e in seeds if masks.entity_mask[i]]
        if not seeds:
            return []
        cfg = ctx.profile.graph
        if cfg.epsilon > 0:
            walks = push_walk(masks, [i for i, _ in seeds], damping=cfg.damping, epsilon=cfg.epsilon)
        else:
            walks = walk(masks, [i for i, _ in seeds], damping=cfg.damping)
        # Only the passages some walk reached (mass > 0) can be reported: the rest of the work
        # runs on them alone (issue 29.5: at 100k passages the whole-graph arrays cost as much
        # as the walk).  Every quantity below is the one computed over all passages before:
        # the others hold no mass, so they change no maximum and pass no test.
        nz = walks.passages[:, 0] != 0
        for j in range(1, walks.passages.shape[1]):
            nz |= walks.passages[:, j] != 0
        support = np.flatnonzero(nz)
        if not len(support):
            return []
        mass = walks.passages[support]
        total = mass.sum(axis=1)
        # Passages every seed mentions directly are not reported.
        direct = np.ones(len(total), dtype=bool)
        row = np.zeros(walks.passages.shape[0], dtype=bool)
        for i, _ in seeds:
            row[:] = False
            row[graph.WT.indices[graph.WT.indptr[i]:graph.WT.indptr[i + 1]]] = True
            direct &= row[support]
        # The floor: a passage is reported only if its mass is at least graph.report_floor
        # times the largest passage mass of the walks (the seeds' own passages included).
        floor = cfg.report_floor * float(total.max())
        total[direct] = 0.0
        keep = (total > 0) & (total >= floor)
        if cfg.bridge_share > 0 and mass.shape[1] >= 2:
            keep |= (total > 0) & (bridges(mass, cfg.bridge_share) >= 2)
        candidates = np.flatnonzero(keep)
        if not len(candidates):
            return []
        if len(candidates) > ctx.fetch_depth * 2:
            keep = np.argpartition(-total[candidates], ctx.fetch_depth * 2)[:ctx.fetch_depth * 2]
            candidates = candidates[keep]
        # raw: the walks' masses added in seed order; votes built for the passages kept only
        scored = []
        for idx, masses in zip(support[candidates].tolist(), mass[candidates].tolist(), strict=True):
            raw = 0.0
            for m in masses:
                raw += m
            scored.append((raw, int(graph.passage_pks[idx]), masses))
        scored.sort(key=lambda t: (-t[0], t[1]))
        return [(raw, pk, tuple(GraphVote(e.key, e.name, m) for (_, e), m in zip(seeds, masses, strict=True)))
                for raw, pk, masses in scored[:ctx.fetch_depth]]


def _hops(cfg: Any) -> bool:
    """Whether a hop (title or section) makes the arm run on every auto search."""
    return cfg.title_hits > 0 or cfg.section_hits > 0


def _hop(ctx: ArmContext, graph: Any, masks: Any, n: int, spec: Any) -> list[tuple[float, int, tuple[GraphVote, ...]]]:
    """A title or section hop (``spec``: ``memo.graph.titles.SubjectSpec``) from the first
    ``n`` keyword and semantic hits, over its subject index (cached per graph state)."""
    from memo.graph.titles import seed_weights, title_hop, title_index

    # A semantic hit abstention rule 1 would drop (every cosine below the model's
    # semantic_floor) seeds nothing: else an off-topic query's weak neighbours would
    # hand structural votes, which abstention keeps, to the articles they name.
    svc = ctx.services.semantic
    bands = ctx.profile.models.get(getattr(svc, "model_id", None)) if svc is not None else None
    floor = bands.semantic_floor if bands is not None else None
    seeds = seed_weights(title_seed_lists(ctx.scratch.hits, floor), n)
    cache = conn_cache(ctx.conn).setdefault(f"graph_{spec.name}", {})
    index = cache.get((graph.epoch, graph.seq))
    if index is None:
        cache.clear()
        index = cache[(graph.epoch, graph.seq)] = title_index(ctx.conn, graph, spec,
                                                              ctx.profile.index.subject_sidecar_min)
    hops = title_hop(ctx.conn, graph, index, seeds, masks[1], masks[0].entity_mask)
    return [(h.score, int(graph.passage_pks[h.index]), tuple(GraphVote(k, nm, w) for k, nm, w in h.via))
            for h in hops[:ctx.fetch_depth]]


def title_seed_lists(hits: dict[str, tuple[ArmHit, ...]], floor: float | None) -> list[list[int]]:
    """The passage pks, best first, of each arm whose hits seed the title hop
    (``TITLE_HOP_ARMS``); semantic hits whose every cosine is below ``floor`` left out (pure)."""
    lists = []
    for arm in TITLE_HOP_ARMS:
        got = hits.get(arm, ())
        if arm == "semantic" and floor is not None:
            got = tuple(h for h in got if max((h.raw, *(v.cosine for v in h.votes))) >= floor)
        lists.append([h.pk for h in got])
    return lists


def merge_title_hops(walked: list[tuple[float, int, tuple]], hops: list[tuple[float, int, tuple]]) \
        -> list[tuple[float, int, tuple]]:
    """One list from the walk's passages and the title hop's (pure).  A hop's score (sum of
    1/rank of the hits pointing to it) is put on the walk's scale: the best hop ties with
    the best walked passage (1.0 when no walk ran), so z-score and min-max fusion see one
    spread; a passage both found adds the two, its votes the walk's then the hop's."""
    if not hops:
        return list(walked)
    top_walk = max((r for r, _, _ in walked), default=0.0) or 1.0
    top_hop = max(r for r, _, _ in hops)
    by_pk = {pk: (raw, votes) for raw, pk, votes in walked}
    for raw, pk, votes in hops:
        scaled = top_walk * raw / top_hop
        old = by_pk.get(pk)
        by_pk[pk] = (scaled, votes) if old is None else (old[0] + scaled, old[1] + votes)
    return [(raw, pk, votes) for pk, (raw, votes) in by_pk.items()]
