"""Chinese, Japanese and Korean text for the keyword index: runs of CJK characters become
overlapping character bigrams (and, in the index, their single characters too).

FTS5's unicode61 tokenizer splits at spaces and punctuation only, so a Chinese or
Japanese sentence (no spaces) is one token: ``我们决定使用数据库备份策略`` could be found
only by typing the whole run, and a Korean word only with its particle attached.  Word
segmentation needs a dictionary per language; character bigrams need none and are the
usual fallback of search engines for these scripts (Lucene's CJKBigramFilter, the
"cjk" analyzer of Elasticsearch): ``数据库备份`` -> ``数据 据库 库备 备份``.  A query made
the same way matches every passage that holds its words, whatever surrounds them, and
bm25 ranks passages holding more (and rarer) of its bigrams first.

* ``index_form``: what ``passages_fts`` indexes for a passage's text or section.  Each
  CJK run is replaced by its single characters followed by its bigrams, set off by
  spaces from the text around it (``使用SQLite数据库`` -> ``使 用 使用 SQLite 数 据 库 数据
  据库``), so a one-character query (``猫``) finds the character inside a longer run and
  a Latin word glued to CJK text becomes a word of its own.  Text without CJK is returned
  unchanged (the same object), so English, code and everything indexed before stays
  byte-identical.
* ``query_form``: what the keyword arm searches for: a run of one character stays that
  character; a longer run becomes its bigrams only (the single characters of a long
  query would match nearly every passage of the language).

The passages table keeps the text as written; only the keyword index holds this form
(SQLite: an external-content FTS5 index: ``memo.store.derived`` writes and deletes it with
the same function, and its ``rebuild`` re-derives it; PostgreSQL: ``passages.kw_text`` /
``kw_section`` hold it for the rows with CJK text, NULL otherwise, and the row's trigger
builds ``tsv`` from them; ``CJK_CLASS`` is also the server-side regex that finds those rows).  Both forms are pure functions of
the text: the index can always be rebuilt from ``passages``.
"""

from __future__ import annotations

import functools
import re

# Han (CJK Unified Ideographs, extension A, compatibility ideographs, the ideographic
# iteration and closing marks 々〆〇, extensions B..H in the supplementary planes),
# Hiragana, Katakana (with its phonetic extensions and the half-width forms) and Hangul
# (syllables, Jamo, compatibility Jamo).  Every character here is a letter to unicode61.
CJK_CHARS = ("\u1100-\u11ff\u3005-\u3007\u3040-\u309f\u30a0-\u30ff\u3130-\u318f\u31f0-\u31ff"
             "\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff\uff66-\uff9f\U00020000-\U0003134f")
CJK_CLASS = f"[{CJK_CHARS}]"


@functools.cache
def _cjk_run() -> re.Pattern[str]:
    """A run of CJK characters, compiled at first use (~2 ms: every process that searches
    imports this module, and an ASCII text never needs it)."""
    return re.compile(CJK_CLASS + "+")


def has_cjk(text: str) -> bool:
    return not text.isascii() and _cjk_run().search(text) is not None


def _indexed(run: str) -> str:
    if len(run) == 1:
        return f" {run} "
    grams = [run[i:i + 2] for i in range(len(run) - 1)]
    return " " + " ".join([*run, *grams]) + " "


def _queried(run: str) -> str:
    if len(run) == 1:
        return f" {run} "
    return " " + " ".join(run[i:i + 2] for i in range(len(run) - 1)) + " "


def index_form(text: str) -> str:
    """``text`` as ``passages_fts`` indexes it (unchanged when it holds no CJK)."""
    if not has_cjk(text):
        return text
    return _cjk_run().sub(lambda m: _indexed(m.group(0)), text)


def query_form(text: str) -> str:
    """``text`` as the keyword arm searches for it (unchanged when it holds no CJK)."""
    if not has_cjk(text):
        return text
    return _cjk_run().sub(lambda m: _queried(m.group(0)), text)
