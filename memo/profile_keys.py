"""Every key of a search profile, defined once: its type, range, one doc line, its group and,
for the keys of an extra, which extra it belongs to.

This table drives the ``Profile`` dataclass sections (``memo.profile``), validation, the
overlay rule and docs/profiles.md (``memo.profile_docs`` renders it; a test checks the file is
current).  Values do not live here: they live in ``profiles/base.toml`` (every key, the seed's
pipeline as written) and in the overlays that change a few of them.

Groups:

* ``ranking`` - what the pipeline computes (arms, fusion, factors, abstention, cutoff ...);
* ``index``   - storage and speed settings: how an index is scanned or kept on disk.  They
  never change a ranking (the keyword arm's impact index gives FTS5's bm25 bit for bit; the
  int8 scan rescores with exact cosines), so they sit apart and ablations ignore them.

Extras: a rule or stage the seed does not have.  ``base.toml`` holds each extra's *off*
value, so ``rrf`` and ``minmax`` (base + a fusion method) are the seed as written; the
default overlay names each extra it turns on (``EXTRAS``; docs/eval.md "Ablation").
"""

from __future__ import annotations

from dataclasses import dataclass

# Value kinds (memo.profile._check): int, float (closed range), float_pos (> 0), float_open
# (exclusive range), gap (0 < x <= 1), bool, choice, kinds (a list of record kinds), words.
FUSION_METHODS = ("rrf", "minmax", "zscore")
KEYWORD_INDEXES = ("impact", "fts5")
NEAR_DUPLICATES = ("link", "skip", "off")
FACT_MERGES = ("minmax", "rrf")
BAND_KEYS = ("semantic_floor", "weak", "moderate", "strong")
WEIGHT_RANGE = (0.0, 100.0)


@dataclass(frozen=True, slots=True)
class Key:
    name: str                       # dotted: "<section>.<field>"
    kind: str
    doc: str
    lo: float | None = None
    hi: float | None = None
    choices: tuple[str, ...] = ()
    group: str = "ranking"          # "ranking" | "index"
    extra: str | None = None        # the extra this key belongs to (None: the seed's own key)

    @property
    def section(self) -> str:
        return self.name.split(".", 1)[0]

    @property
    def field(self) -> str:
        return self.name.split(".", 1)[1]


KEYS: tuple[Key, ...] = (
    # --- stage 2: arms -----------------------------------------------------------------
    Key("retrieve.fetch_depth", "int", "candidates each arm returns, after the scope filter (seed: 100)", 1, 1000),
    Key("retrieve.keyword_section_weight", "float_pos",
        "keyword arm: bm25 weight of the section column (title, heading, symbol, speaker); the text weighs 1",
        0.0, 100.0),
    Key("exact.min_share", "float",
        "auto mode runs the exact arm when one word is code-shaped or identifier-shaped words are at least "
        "this share of the query's words", 0.0, 1.0),
    Key("entities.max_words", "int", "longest entity alias matched against the query's word n-grams", 1, 10),
    Key("entities.name_share", "float_pos",
        "a one-word name counts only if at least this share of the in-scope passages holding the word name it",
        0.0, 1.0),
    Key("entities.relational_cues", "words",
        "routing: a query naming one entity is relational when it holds one of these words or phrases"),
    Key("entities.common_share", "float_pos",
        "an entity in more than this share of the in-scope passages is common: never counted for routing, "
        "never a walk's seed; 1 = none is common", 0.0, 1.0, extra="common_names"),
    Key("entities.common_min_passages", "int", "... only in a scope of at least this many passages",
        1, 1_000_000_000, extra="common_names"),
    Key("entities.identifier_share", "float_pos",
        "an identifier counts for routing only if in at most this share of the in-scope passages; 1 = always",
        0.0, 1.0, extra="rare_identifiers"),
    Key("entities.min_shared", "int",
        "entity arm: only passages naming at least min(this, counted query entities) of them; 1 = any", 1, 10,
        extra="min_shared"),
    Key("entities.min_query_share", "float",
        "route only when the counted entities' words are at least this share of the query's content words; "
        "0 = always", 0.0, 1.0, extra="route_share"),
    Key("entities.strip_common", "bool",
        "the semantic arm embeds the query without the common entities it names", extra="strip_common"),
    Key("graph.damping", "float_open", "a walk goes on with this probability, else restarts at its seed",
        0.0, 1.0),
    Key("graph.epsilon", "float",
        "local push PageRank tolerance (a node spreads its residual while above epsilon x its degree); "
        "0 = exact power iteration", 0.0, 1.0),
    Key("graph.report_floor", "float",
        "report a passage only if its walk mass is at least this x the largest passage mass; 0 = all",
        0.0, 1.0, extra="graph_floor"),
    Key("graph.bridge_share", "float",
        "also report a passage (whatever the floor) that at least two walks reach with at least this share of "
        "their own largest passage mass: a bridge between the seeds; 0 = off", 0.0, 1.0, extra="graph_bridges"),
    Key("graph.title_hits", "int",
        "the graph arm also reports passages whose record's title names an entity that one of the keyword and "
        "semantic arms' first this-many hits mentions (the second hop of a bridge question); 0 = off",
        0, 100, extra="graph_titles"),
    Key("graph.section_hits", "int",
        "the graph arm also reports the section of a document or code whose own heading names an entity that one "
        "of the keyword and semantic arms' first this-many hits mentions (a method's, class's or event's own "
        "section); 0 = off", 0, 100, extra="graph_sections"),
    Key("fact.merge", "choice", "one fact ranking from the keyword and meaning fact lists", choices=FACT_MERGES),
    # --- stage 3: fusion ---------------------------------------------------------------
    Key("fusion.method", "choice", "rrf: sum of weight / (k + rank); minmax: sum of weight x min-max "
        "normalised raw; zscore: sum of weight x (raw - min) / sigma", choices=FUSION_METHODS),
    Key("fusion.k", "int", "rrf's k (seed: 60); fact.merge rrf uses it too", 1, 10_000),
    Key("fusion.keyword_full", "float",
        "per query, the keyword weight x min(1, the idf share of the query its best hit holds / this); "
        "0 = off (fixed weights)", 0.0, 1.0, extra="adaptive"),
    Key("fusion.keyword_full_code", "float",
        "per query, the coverage the keyword arm needs is keyword_full blended towards this by the share of "
        "the semantic arm's hits that are code; 0 = off (keyword_full for every query)", 0.0, 1.0,
        extra="code_queries"),
    # --- stage 4: recency and the rescorers --------------------------------------------
    Key("recency.floor", "float", "factor = floor + (1 - floor) x 0.5 ** (age_days / half_life_days)", 0.0, 1.0),
    Key("recency.half_life_days", "float_pos", "recency's half-life in days", 0.0, 1e6),
    Key("recency.aging_kinds", "kinds", "kinds whose passages age (and may be dated by a query)"),
    Key("speaker.boost", "float", "a passage whose speaker the query names scores x (1 + boost); 0 = off",
        0.0, 100.0, extra="speaker"),
    Key("dates.boost", "float", "a note, a turn or a dated document in a period the query names scores x (1 + boost), and its date keeps it against abstention rule 1; 0 = off",
        0.0, 100.0, extra="dates"),
    Key("dates.window_days", "int", "a named day also covers this many days before and after", 0, 366,
        extra="dates"),
    Key("heading.boost", "float",
        "a passage whose own heading names an identifier the query names scores x (1 + boost); 0 = off",
        0.0, 100.0, extra="heading"),
    Key("heading.min_share", "float", "... only when code-shaped words are at least this share of the query",
        0.0, 1.0, extra="heading"),
    Key("context.boost", "float",
        "score x (1 + boost x its record's mass among the best / the largest record's mass); 0 = off",
        0.0, 100.0, extra="context"),
    Key("context.top", "int", "the context: the best this many candidates", 2, 1000, extra="context"),
    Key("context.kinds", "kinds", "kinds whose passages are lifted", extra="context"),
    # --- stage 5: abstention -----------------------------------------------------------
    Key("abstention.keyword_floor", "float",
        "rule 2: a query abstains when no candidate has strong evidence and every keyword match covers less "
        "than this idf share of the query; 0 = off", 0.0, 1.0, extra="weak_query"),
    Key("abstention.joint_floor", "float",
        "rule 2 relief: coverage / keyword_floor + cosine / semantic_floor at or above this answers; 0 = off",
        0.0, 2.0, extra="joint_evidence"),
    # --- stages 6-8 ---------------------------------------------------------------------
    Key("cutoff.min_results", "int", "never cut before this many results", 0, 1000),
    Key("cutoff.gap", "gap", "cut at the first result past min_results scoring below (1 - gap) x the previous; "
        "1 = never", 0.0, 1.0),
    Key("limit.default", "int", "results when the request names no limit", 1, 10_000),
    Key("limit.max", "int", "the largest limit a request may ask", 1, 10_000),
    Key("budget.max_tokens", "int", "results are packed into this many tokens", 1, 10_000_000),
    # --- index: storage and speed (never change a ranking) -----------------------------
    Key("index.keyword", "choice", "impact: from impact_min_passages on, the keyword arm ranks with the impact "
        "index derived from FTS5 (same bm25, same top-k); fts5: never", choices=KEYWORD_INDEXES, group="index"),
    Key("index.impact_min_passages", "int", "below this many passages FTS5's own OR query answers "
        "(unless the process already holds a current index: same ranking)",
        0, 1_000_000_000, group="index"),
    Key("index.keyword_merge_rows", "int", "the keyword postings' delta (what writes appended since the last merge) "
        "is folded into their base by a background merge once a search sees this many rows in it",
        1, 1_000_000_000, group="index"),
    Key("index.quantised_min", "int", "a model with at least this many vectors: int8 scan, then exact float32 "
        "rescoring of the shortlist", 1, 1_000_000_000, group="index"),
    Key("index.shortlist", "float", "the int8 scan keeps shortlist x fetch_depth rows", 1.0, 1000.0,
        group="index"),
    Key("index.sidecar_min", "int", "a model with at least this many vectors is memory-mapped from a sidecar "
        "file; 0 = never", 0, 1_000_000_000, group="index"),
    Key("index.sidecar_tail", "float_pos", "rewrite a sidecar (vectors, mention graph) when rows read since "
        "exceed this share of it", 0.0, 100.0, group="index"),
    Key("index.graph_sidecar_min", "int", "a mention graph with at least this many edges is kept in a sidecar "
        "file a new process maps (memo.graph.sidecar); 0 = never", 0, 1_000_000_000, group="index"),
    Key("index.subject_sidecar_min", "int", "a graph's title and section indexes are kept in sidecar files a new "
        "process maps once the graph holds this many passages (a graph kept in its own sidecar keeps them "
        "whatever its size); 0 = only then", 0, 1_000_000_000, group="index"),
    Key("index.ann_min", "int", "PostgreSQL: in-scope vectors from which the HNSW index answers",
        0, 1_000_000_000, group="index"),
    Key("index.ann_overfetch", "float", "PostgreSQL: HNSW candidates = ann_overfetch x fetch_depth",
        1.0, 100.0, group="index"),
    Key("index.near_duplicates", "choice", "a record (or fact) added near-identical to a live one of its namespace: "
        "link (stored, both named in the report and its meta), skip (not stored, reported), off (memo.ops.near_dup)",
        choices=NEAR_DUPLICATES, group="index"),
    Key("index.near_min", "float", "word-sequence similarity from which two records (two facts) are near-identical",
        0.5, 1.0, group="index"),
)

# Keys of earlier profile files, read as their new names (older user profiles still load).
RENAMED: dict[str, str] = {
    "retrieve.keyword_index": "index.keyword",
    "retrieve.impact_min_passages": "index.impact_min_passages",
    **{f"vectors.{k}": f"index.{k}" for k in ("quantised_min", "shortlist", "sidecar_min", "sidecar_tail",
                                               "ann_min", "ann_overfetch")},
}
# Keys removed because no profile ever moved them from the value that switches them off:
# accepted at that value (an older profile written in full still loads), refused otherwise.
RETIRED: dict[str, object] = {
    "fact.vote": "best", "fact.decay": None, "fact.spread": 0.0, "fact.meaning_weight": 1.0,
    "graph.iterations": None, "graph.tolerance": None,
    "fact.top": 0,       # once rrf's (10); the seed's profiles let every fact vote and the default never limited them
}

# What each extra is for (docs/profiles.md, docs/eval.md's ablation table).
EXTRAS: dict[str, str] = {
    "speaker": "stage 4b: turns said by a speaker the query names",
    "dates": "stage 4c: notes and turns dated in a period the query names",
    "heading": "stage 4d: the section headed by the identifier a lookup names",
    "context": "stage 4e: passages of a record that holds several of the best",
    "strip_common": "the semantic arm embeds the query without its conversation's common names",
    "weak_query": "abstention rule 2: abstain when every keyword match is weak and no cosine reaches the floor",
    "joint_evidence": "abstention rule 2 relief: weak coverage and weak similarity that agree answer",
    "common_names": "names in most passages (a conversation's speakers) never route nor seed a walk",
    "rare_identifiers": "only rare identifiers route the entity and graph arms",
    "min_shared": "the entity arm keeps passages naming two of the query's entities",
    "route_share": "route only when the named entities are a real share of the query",
    "graph_floor": "the graph arm reports only passages with a real share of the walk's mass",
    "adaptive": "stage 3: the keyword arm weighs less on a query its best hit covers little of",
    "code_queries": "stage 3: a query whose semantic hits are code asks more coverage of its keyword hits",
    "graph_bridges": "the graph arm reports the passages that connect two seeds' walks, however small their mass",
    "graph_titles": "the graph arm reports the articles whose title the keyword and semantic arms' best hits mention",
    "graph_sections": "the graph arm reports the sections whose heading names what the keyword and semantic arms' "
                      "best hits mention",
}

BY_NAME: dict[str, Key] = {k.name: k for k in KEYS}
LIST_KEYS = frozenset(k.name for k in KEYS if k.kind in ("kinds", "words"))
SECTIONS: tuple[str, ...] = tuple(dict.fromkeys(k.section for k in KEYS))


def extra_keys(extra: str) -> tuple[str, ...]:
    """The keys of one extra (``EXTRAS``)."""
    if extra not in EXTRAS:
        raise KeyError(extra)
    return tuple(k.name for k in KEYS if k.extra == extra)
