"""Issue 33.3: an import's memory is bounded per input line, not only per file.

The probe's cases, each run as a real ``memo import`` process whose peak RSS is read from
``os.wait4`` (that child's own ``ru_maxrss``, not the largest of every child pytest ran):

* a 1 MB ``.jsonl.gz`` that inflates to one 1 GiB line (JSONL and BEIR): before, the
  progress bar's line count (and BEIR's reader) held the whole line, 2.1-2.2 GB peak;
* a 512 MiB one-line ``.jsonl`` (sparse: holes read as NUL bytes, so it costs no disk):
  before, 1.1 GB peak.

Each line over ``--max-bytes`` is one rejection (``file:line``) and the lines around it
are imported.  ``--no-embed``: the bound is on reading, not on loading the model.
"""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
PEAK_MB = 300          # measured 56-70 MB with the bounded reader; 1.1-2.2 GB when a line was held whole
MIB = 1 << 20

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]


def _import(path: Path, db: Path, fmt: str) -> tuple[int, float, dict]:
    """(exit code, peak RSS in MB, JSON report) of a real ``memo import`` process."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.Popen([sys.executable, "-m", "memo", "import", str(path), "--format", fmt, "--db", str(db),
                             "--no-progress", "--no-embed", "--json"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, cwd=REPO)
    out, err = proc.stdout.read(), proc.stderr.read()     # type: ignore[union-attr]
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)    # reaped here: keep Popen from waiting again
    assert b"Traceback" not in err, err[-2000:]
    return proc.returncode, usage.ru_maxrss / 1024, json.loads(out)


def _lines(fmt: str) -> tuple[bytes, bytes, bytes]:
    """A good line, the start of the huge line, a good line (one record each side)."""
    if fmt == "beir":
        return (b'{"_id": "d1", "text": "the line before the huge one"}\n', b'{"_id": "big", "text": "',
                b'{"_id": "d2", "text": "the line after the huge one"}\n')
    return b'{"text": "the line before the huge one"}\n', b'{"text": "', b'{"text": "the line after the huge one"}\n'


def _gzip_bomb(path: Path, fmt: str, inflated: int) -> None:
    """A gzip file of about ``inflated / 1000`` bytes whose second line is ``inflated``
    bytes long: gzip members written one after the other (a valid single stream to a
    reader), the same 1 MiB member of ``a`` repeated, so it is built in milliseconds."""
    before, start, after = _lines(fmt)
    chunk = gzip.compress(b"a" * MIB, compresslevel=9)
    with path.open("wb") as fh:
        fh.write(gzip.compress(before + start))
        for _ in range(inflated // MIB):
            fh.write(chunk)
        fh.write(gzip.compress(b'"}\n' + after))


@pytest.mark.parametrize("fmt", ["jsonl", "beir"])
def test_a_gzip_that_inflates_to_one_1gib_line_is_rejected_in_bounded_memory(tmp_path: Path, fmt: str) -> None:
    bomb = tmp_path / "corpus.jsonl.gz"
    _gzip_bomb(bomb, fmt, 1024 * MIB)
    assert bomb.stat().st_size < 2 * MIB
    code, peak, report = _import(bomb, tmp_path / "memo.db", fmt)
    print(f"{fmt}: a 1 GiB line in a {bomb.stat().st_size / MIB:.1f} MB gzip: peak RSS {peak:.0f} MB")
    assert code == 5                                      # partial: the huge line is rejected
    assert report["added"] == 2
    [rej] = report["rejected"]
    assert rej["path"] == "corpus.jsonl.gz:2" and "over the 5242880-byte cap" in rej["reason"]
    assert peak < PEAK_MB, f"peak RSS {peak:.0f} MB: the 1 GiB line was held in memory"


@pytest.mark.parametrize("fmt", ["jsonl", "beir"])
def test_a_512mib_one_line_file_is_rejected_in_bounded_memory(tmp_path: Path, fmt: str) -> None:
    big = tmp_path / "corpus.jsonl"
    before, start, after = _lines(fmt)
    with big.open("wb") as fh:
        fh.write(before + start)
        fh.seek(512 * MIB)                                # a hole: reads as NUL bytes, takes no disk
        fh.write(b'"}\n' + after)
    code, peak, report = _import(big, tmp_path / "memo.db", fmt)
    print(f"{fmt}: a 512 MiB line: peak RSS {peak:.0f} MB")
    assert code == 5
    assert report["added"] == 2
    assert [r["path"] for r in report["rejected"]] == ["corpus.jsonl:2"]
    assert peak < PEAK_MB, f"peak RSS {peak:.0f} MB: the 512 MiB line was held in memory"
