"""memo's evaluation harness: replay labelled query sets through ``memo.retrieve.search``
across profiles and constant grids, store every trace in Parquet, and analyse them.

Modules (one job each): ``datasets`` (loaders), ``index`` (cached SQLite index + vectors),
``replay`` (search across runs), ``traces`` (Parquet schema), ``metrics`` (trec_eval via
ir-measures), ``compare``, ``report``, ``plots``, ``tune``, ``regress``.  See docs/eval.md.
"""
