"""docs/library.md's example runs as written, in a fresh process (the real model, a new
SQLite file in an empty folder): the library's documentation cannot drift from the code."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

DOC = Path(__file__).resolve().parents[2] / "docs" / "library.md"


def test_the_library_example_runs(tmp_path: Path) -> None:
    blocks = re.findall(r"```python\n(.*?)```", DOC.read_text(encoding="utf-8"), re.S)
    assert len(blocks) == 1
    env = {k: v for k, v in os.environ.items() if k not in ("MEMO_DB", "MEMO_PROFILE")}
    out = subprocess.run([sys.executable, "-c", blocks[0]], cwd=tmp_path, env=env, capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert (tmp_path / "kb.db").exists()
    assert "runbook.md" in out.stdout.splitlines()[0]
