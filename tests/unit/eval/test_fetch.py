"""``memo eval fetch`` plumbing against local file:// URLs (no network in tests)."""

from __future__ import annotations

import hashlib
import zipfile

import pytest

from memo.errors import DatasetError
from memo_eval.datasets import load_eval_set
from memo_eval.datasets.fetch import fetch
from memo_eval.synthetic import write_beir


def _zip(tmp_path):
    src = write_beir(tmp_path / "src" / "tiny")
    archive = tmp_path / "tiny.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        for p in src.rglob("*"):
            zf.write(p, f"tiny/{p.relative_to(src)}")
    return archive, hashlib.sha256(archive.read_bytes()).hexdigest()


def test_fetch_zip_with_sha(tmp_path):
    archive, sha = _zip(tmp_path)
    got = fetch("tiny", url=archive.as_uri(), sha256=sha, dest=tmp_path / "data" / "tiny")
    assert got.verified == ("download",) and got.sha256 == sha
    assert (tmp_path / "data" / "tiny" / "qrels" / "test.tsv").exists()
    assert "sha256" in (tmp_path / "data" / "tiny" / "SOURCE.md").read_text()
    assert len(load_eval_set(str(got.dest), "test").queries) == 4


def test_fetch_sha_mismatch_keeps_nothing(tmp_path):
    archive, _ = _zip(tmp_path)
    with pytest.raises(DatasetError, match="sha256 mismatch"):
        fetch("tiny", url=archive.as_uri(), sha256="0" * 64, dest=tmp_path / "data" / "tiny")
    assert not (tmp_path / "data" / "tiny").exists()
    assert not any(p.name.startswith(".fetch-") for p in (tmp_path / "data").iterdir())


def test_fetch_unverifiable_needs_flag(tmp_path):
    archive, _ = _zip(tmp_path)
    with pytest.raises(DatasetError, match="nothing could be verified"):
        fetch("tiny", url=archive.as_uri(), dest=tmp_path / "d1")
    assert fetch("tiny", url=archive.as_uri(), dest=tmp_path / "d2", verify=False).verified == ()


def test_fetch_known_content_checked(tmp_path):
    # A LoCoMo file that is not the published one is refused, whatever the URL says.
    fake = tmp_path / "locomo10.json"
    fake.write_text("[]")
    with pytest.raises(DatasetError, match="does not match the known locomo file"):
        fetch("locomo", url=fake.as_uri(), dest=tmp_path / "loc")
    from memo_eval.datasets import DATASETS_DIR

    real = DATASETS_DIR / "locomo" / "locomo10.json"
    got = fetch("locomo", url=real.as_uri(), dest=tmp_path / "loc")
    assert got.verified == ("locomo10.json",)


def test_fetch_bad_url(tmp_path):
    with pytest.raises(DatasetError, match="download failed"):
        fetch("tiny", url=(tmp_path / "missing.zip").as_uri(), sha256="0" * 64, dest=tmp_path / "x")
