"""Checks on a parsed JSON value before memo stores it or acts on it, shared by every way
JSON comes in: JSONL/BEIR/LoCoMo import (memo.ingest.jsonl), ``memory_add`` meta
(memo.ops.add), the web UI's bodies (memo.serve.web_input) and memo-mcp's transport
(memo.serve.mcp_server), which runs them on every incoming message, the first one included: this
module imports nothing but ``re``, so the server need not load the ingest modules to answer
``initialize`` (issue 31.2).
"""

from __future__ import annotations

import re

MAX_JSON_DEPTH = 64                # nesting levels of one JSON value (line, BEIR doc, LoCoMo file)
_SURROGATE = re.compile("[\ud800-\udfff]")


def json_problem(value: object, max_depth: int = MAX_JSON_DEPTH) -> str | None:
    """Why a parsed JSON value cannot be stored, or None: a string (or key) holding a
    lone surrogate, or nesting deeper than ``max_depth``.  Iterative: any depth is safe."""
    stack: list[tuple[object, str, int]] = [(value, "", 0)]
    while stack:
        obj, where, depth = stack.pop()
        if depth > max_depth:
            return f"JSON nested too deeply (more than {max_depth} levels)"
        if isinstance(obj, str):
            m = _SURROGATE.search(obj)
            if m:
                at = f" in {where.lstrip('.')}" if where else ""
                return (f"lone surrogate escape \\u{ord(m.group()):04x}{at}: not valid Unicode text "
                        f"(fix the producer; a pair such as \\ud83d\\ude00 is fine)")
        elif isinstance(obj, dict):
            for k, v in obj.items():
                stack.append((k, where, depth + 1))
                stack.append((v, f"{where}.{safe_key(k)}", depth + 1))
        elif isinstance(obj, list):
            stack.extend((v, f"{where}[{i}]", depth + 1) for i, v in enumerate(obj))
    return None


def safe_key(key: str) -> str:
    return key.encode("utf-8", "backslashreplace").decode("utf-8")
