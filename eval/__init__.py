"""memo's evaluation harness: replay labelled query sets through ``memo.retrieve.search``
across profiles and constant grids, store every trace in Parquet, and analyse them.

The folder is eval/; it installs as the package ``memo_eval`` of its own distribution,
memo-kb-eval (eval/pyproject.toml; users: ``pip install "memo-kb[eval]"``).  It sits above
memo's library, which never imports it; ``cli`` is the ``memo eval`` command group, which
memo's command line mounts through the ``memo.cli_plugins`` entry point.

Modules (one job each): ``datasets`` (loaders + fetch), ``grid`` (run specs), ``index``
(cached SQLite index + vectors), ``replay`` (searches over worker processes), ``run``
(the ``memo eval run`` pipeline), ``traces`` (Parquet schema), ``metrics`` (trec_eval via
pytrec_eval), ``compare``, ``report``, ``plots``, ``tune``, ``regress``, ``synthetic`` (a
tiny data set for tests and the notebook), ``cli`` (``memo eval``).  See docs/eval.md.
"""
