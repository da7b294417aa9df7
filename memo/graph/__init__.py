"""The mention graph (passages <-> entities) as a sparse matrix cached per database
(``memo.graph.cache``) and personalised PageRank over it (``memo.graph.ppr``, pure)."""
