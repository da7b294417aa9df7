"""Helper for the web tests: run the real ``memo web --port 0`` in a subprocess against a
given database and read the URL line it prints on stderr."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
URL_LINE = re.compile(r"^memo web: (http://(\S+?):(\d+)/)#token=(\S+)$", re.MULTILINE)


@dataclass(frozen=True)
class WebServer:
    proc: subprocess.Popen[bytes]
    url: str            # the full printed URL, with #token=
    base: str           # http://127.0.0.1:PORT/
    host: str
    port: int
    token: str
    stderr_path: Path

    def auth(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"}

    def stderr(self) -> str:
        return self.stderr_path.read_text(errors="replace")


def wait_for_line(proc: subprocess.Popen[bytes], err_path: Path, pattern: re.Pattern[str], timeout: float,
                  what: str) -> re.Match[str]:
    """The first match of ``pattern`` in what ``proc`` writes to ``err_path`` (its stderr);
    fails when it exits or ``timeout`` passes first."""
    deadline = time.monotonic() + timeout
    while True:
        text = err_path.read_text(errors="replace")
        m = pattern.search(text)
        if m:
            return m
        if proc.poll() is not None:
            raise AssertionError(f"{what} exited with {proc.returncode} before printing its address:\n{text}")
        if time.monotonic() > deadline:
            raise AssertionError(f"{what} printed no address within {timeout}s:\n{text}")
        time.sleep(0.05)


@contextmanager
def memo_web(db: Path, *args: str, timeout: float = 60.0) -> Iterator[WebServer]:
    """``memo web --port 0 ARGS`` with MEMO_DB=db; yields once the URL line is printed."""
    err_path = db.parent / f"memo-web-{os.getpid()}-{time.monotonic_ns()}.stderr"
    env = {**os.environ, "MEMO_DB": str(db)}
    env.pop("MEMO_WEB_TOKEN", None)
    with err_path.open("wb") as err:
        # stderr to a file, not a pipe: nobody drains a pipe while the test runs.
        proc = subprocess.Popen([sys.executable, "-m", "memo", "web", "--port", "0", *args], cwd=REPO, env=env,
                                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err)
    try:
        m = wait_for_line(proc, err_path, URL_LINE, timeout, "memo web")
        yield WebServer(proc, m.group(0).split(": ", 1)[1], m.group(1), m.group(2), int(m.group(3)),
                        m.group(4), err_path)
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)   # uvicorn shuts down gracefully on SIGTERM
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
