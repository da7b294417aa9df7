"""How often a long step says where it is when stderr is no terminal (a log, a pipe, CI):
one plain line at most every ``PLAIN_PROGRESS_EVERY`` seconds, the same for an import's
batches (memo.cli.store_cmds), its embedding and ``memo backfill`` (memo.embed.backfill) and
the eval harness (memo_eval.cli).  A terminal gets a live bar instead."""

PLAIN_PROGRESS_EVERY = 30.0
