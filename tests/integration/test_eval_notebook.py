"""notebooks/eval_report.ipynb runs top to bottom (nbclient + ipykernel) on a tiny run."""

from __future__ import annotations

from pathlib import Path

import nbformat
from nbclient import NotebookClient

from memo_eval.grid import expand
from memo_eval.run import EvalOptions, run_eval
from memo_eval.synthetic import write_beir

NOTEBOOK = Path(__file__).resolve().parents[2] / "notebooks" / "eval_report.ipynb"


def test_notebook_rebuilds_report(tmp_path, monkeypatch):
    monkeypatch.setenv("MEMO_CACHE", str(tmp_path / "cache"))
    runs_dir = tmp_path / "runs"
    tiny = write_beir(tmp_path / "tiny")
    run_eval(EvalOptions(dataset=str(tiny), split="test", semantic=False, workers=1, out=runs_dir,
                         specs=expand(["rrf", "minmax"], ["cutoff.gap=0.2,1.0"], mode="keyword")))
    monkeypatch.setenv("MEMO_EVAL_REPORT_RUNS", str(runs_dir / "*"))
    monkeypatch.setenv("MEMO_EVAL_REPORT_OUT", str(tmp_path / "nbreport"))
    nb = nbformat.read(NOTEBOOK, as_version=4)
    NotebookClient(nb, timeout=300, kernel_name="python3",
                   resources={"metadata": {"path": str(Path(__file__).resolve().parents[2])}}).execute()
    md = (tmp_path / "nbreport" / "report.md").read_text()
    assert "memo eval report (notebook)" in md and "cutoff.gap" in md
    assert (tmp_path / "nbreport" / "latency.png").exists()
