"""Issue 33.3: an import's memory is bounded per input line, not only per file.

The probe's cases, each run as a real ``memo import`` process whose peak RSS is its own
``VmHWM`` (/proc/PID/status), sampled until it exits:

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
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
PEAK_MB = 300          # measured 56-70 MB with the bounded reader; 1.1-2.2 GB when a line was held whole
MIB = 1 << 20

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]


def _import(path: Path, db: Path, fmt: str) -> tuple[int, float, dict]:
    """(exit code, peak RSS in MB, JSON report) of a real ``memo import`` process.

    The peak is the child's own ``VmHWM`` (/proc), read until it exits: ``ru_maxrss``
    from ``wait4`` starts from the parent's RSS at fork/exec on Linux, so inside a pytest
    process that loaded the model earlier it read 357 MB for every case."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    out_path, err_path = db.parent / f"{db.name}.out", db.parent / f"{db.name}.err"
    with out_path.open("wb") as out, err_path.open("wb") as err:
        proc = subprocess.Popen([sys.executable, "-m", "memo", "import", str(path), "--format", fmt, "--db", str(db),
                                 "--no-progress", "--no-embed", "--json"],
                                stdout=out, stderr=err, env=env, cwd=REPO)
        peak_kb = 0
        while proc.poll() is None:
            peak_kb = max(peak_kb, _vm_hwm_kb(proc.pid))
            time.sleep(0.02)
    err_text = err_path.read_bytes()
    assert b"Traceback" not in err_text, err_text[-2000:]
    return proc.returncode, peak_kb / 1024, json.loads(out_path.read_bytes())


def _vm_hwm_kb(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    except (OSError, ValueError):
        pass
    return 0


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
