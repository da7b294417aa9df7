"""Is a document's text source code?  For the formats that carry no kind.

A file import knows code by its extension (``memo.ingest.files.kind_for``) and memo's own
JSONL says ``kind``; a BEIR corpus line has only ``title`` and ``text``, so a code-search
corpus in that form (function bodies, as the public code-retrieval sets ship) would become
``doc`` records.  The kind matters past the label: the default profile's ``code_queries``
reads the share of code among a query's semantic hits to decide how much its keyword hits
are worth (``memo.retrieve.fusion.adaptive``), so code stored as prose is fused as prose.

The test reads lines, not words: code is written one statement or block opener per line,
prose one sentence after another.  A line counts as code when it opens with a statement
keyword, a decorator or an assignment, ends with a block or statement delimiter, or closes
a block; comment lines and blank lines count for neither side.  A text is code when at
least ``MIN_CODE_SHARE`` of its counted lines are, over at least ``MIN_CODE_LINES`` of
them; a one-line text only when it is a definition or statement with the punctuation of
one (``def f(x): return x``, flattened code).  Measured on the corpora of the suite
(docs/eval.md "Code in a BEIR corpus"): every SciFact abstract and HotpotQA paragraph reads
as prose, and all but a few of the standard-library functions of codesearch as code.
"""

from __future__ import annotations

import re

MIN_CODE_LINES = 2     # a two-line text can be code (a signature and its return)
MIN_CODE_SHARE = 0.6   # prose with an equation or a listing line stays prose

_KEYWORDS = (
    # Python
    "def", "class", "return", "import", "from", "if", "elif", "else", "for", "while", "try",
    "except", "finally", "with", "raise", "yield", "async", "await", "assert", "lambda", "pass",
    "break", "continue", "global", "nonlocal", "del",
    # C family, Java, JavaScript, Go, Rust, PHP, Ruby
    "function", "const", "let", "var", "public", "private", "protected", "static", "final",
    "void", "int", "char", "package", "func", "fn", "pub", "impl", "struct", "enum", "switch",
    "case", "throw", "throws", "catch", "using", "namespace", "template", "export", "end",
    "elsif", "unless", "begin", "do", "typedef", "extern", "#include", "#define", "#ifdef",
    "#ifndef", "#endif", "echo", "println!",
)
# A keyword opens the line and is followed by code, not by prose: "if x:" / "return f(x)"
# are code, "For the patients ..." is not (keywords are lower case; prose capitalises).
_KEYWORD_LINE = re.compile(
    r"^\s*(?:" + "|".join(re.escape(k) for k in _KEYWORDS) + r")(?:\s+\S|\s*[({:;]|\s*$)")
_DECORATOR = re.compile(r"^\s*@[A-Za-z_][\w.]*")
_TARGET = r"[A-Za-z_$][\w$]*(?:\.[A-Za-z_$][\w$]*|\[[^\]\n]*\]|\([^)\n]*\))*"
_ASSIGNMENT = re.compile(r"^\s*(?:let\s+|var\s+|const\s+)?" + _TARGET + r"(?:\s*,\s*" + _TARGET + r")*\s*"
                         r"(?::\s*[\w\[\], .]+)?(?:[-+*/%&|^]|<<|>>|//|\*\*|:)?=(?!=)\s*\S")
_CALL_STATEMENT = re.compile(r"^\s*" + _TARGET + r"\(.*\)\s*;?\s*$")
# A call whose arguments go on below: "self.set_options('build'," / "run(".
_OPEN_CALL = re.compile(r"^\s*" + _TARGET + r"\([^)]*,\s*$")
# Wrapped prose ends lines anywhere, often after a comma or a link's ")": only the
# delimiters prose never ends a line with count.
_DELIMITED_END = re.compile(r"(?:[{};(\[]|\)\s*[{;:]|=>|->)\s*$")
# A markdown fence: the text is a document that shows code, not code.
_FENCE = re.compile(r"^\s*(?:```|~~~)", re.M)
_CLOSER = re.compile(r"^\s*[)}\]]")
_COMMENT = re.compile(r"^\s*(?:#(?!include|define|ifn?def|endif)|//|/\*|\*|--\s|<!--)")
# A one-line text: a definition or a statement that carries code punctuation.
_ONE_LINE = re.compile(
    r"^\s*(?:(?:async\s+)?def|class|function|func|fn|public|private|static|return|import|const|let|var)\b"
    r"[^\n]*[(){};=:]")
_DOCSTRING_OPEN = re.compile(r"^\s*[rbuRBU]?(?:\"\"\"|\'\'\')")
# Prose sentences end a line with sentence punctuation after a word.
_SENTENCE_END = re.compile(r"[A-Za-z)\]'\"%][.!?]['\")]*\s*$")


def _line_is_code(line: str) -> bool:
    if _SENTENCE_END.search(line) and len(line.split()) > 6:
        return False
    return bool(_KEYWORD_LINE.match(line) or _DECORATOR.match(line) or _ASSIGNMENT.match(line)
                or _CALL_STATEMENT.match(line) or _OPEN_CALL.match(line) or _CLOSER.match(line) or _DELIMITED_END.search(line))


def _counted_lines(text: str) -> list[str]:
    """The lines that count: not blank, not a comment, not inside a triple-quoted string
    (a docstring is prose inside code: a long one must not outvote its function)."""
    out: list[str] = []
    quote = ""
    for ln in text.splitlines():
        if quote:
            if ln.count(quote) % 2:
                quote = ""
            continue
        if not ln.strip() or _COMMENT.match(ln):
            continue
        for q in ('"""', "'''"):
            if ln.count(q) % 2:
                quote = q
                break
        if _DOCSTRING_OPEN.match(ln):
            continue               # a docstring line (a block opening here, or one whole)
        out.append(ln)
    return out


def looks_like_code(text: str) -> bool:
    """True when ``text`` reads as source code (module docstring: the rule)."""
    if _FENCE.search(text):
        return False
    lines = _counted_lines(text)
    if not lines:
        return False
    if len(lines) == 1:
        return bool(_ONE_LINE.match(lines[0])) and not _SENTENCE_END.search(lines[0])
    code = depth = 0
    for ln in lines:
        # A line inside brackets that a line of code opened continues its statement (a
        # call's arguments, a condition); brackets opened in prose carry nothing over.
        is_code = depth > 0 or _line_is_code(ln)
        code += is_code
        depth = max(0, depth + sum(ln.count(c) for c in "([{") - sum(ln.count(c) for c in ")]}")) if is_code else 0
    return code >= MIN_CODE_LINES and code >= MIN_CODE_SHARE * len(lines)
