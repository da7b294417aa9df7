"""memo's evaluation harness: replay labelled query sets through ``memo.retrieve.search``
across profiles and constant grids, store every trace in Parquet, and analyse them.

Modules (one job each): ``datasets`` (loaders + fetch), ``grid`` (run specs), ``index``
(cached SQLite index + vectors), ``replay`` (searches over worker processes), ``run``
(the ``memo eval run`` pipeline), ``traces`` (Parquet schema), ``metrics`` (trec_eval via
pytrec_eval), ``compare``, ``report``, ``plots``, ``tune``, ``regress``, ``synthetic`` (a
tiny data set for tests and the notebook).  See docs/eval.md.
"""
