from pathlib import Path

import pytest

from memo.embed.registry import load_registry
from memo.errors import ModelUnavailable, ValidationError

GRANITE = """
default = "granite-embedding-small-english-r2"
[models."granite-embedding-small-english-r2"]
onnx = "granite/model.onnx"
tokenizer = "granite/tokenizer.json"
sha256 = "{sha}"
dimensions = 384
pooling = "cls"
max_tokens = 512
[models."granite-embedding-small-english-r2".bands]
semantic_floor = 0.72
weak = 0.72
moderate = 0.80
strong = 0.88
"""


def test_builtin_default_model():
    reg = load_registry()
    spec = reg.get()
    assert spec.id == "all-minilm-l6-v2-int8" == reg.default
    assert spec.dimensions == 384 and spec.pooling == "mean" and spec.max_tokens == 256
    assert spec.sha256 == "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
    assert spec.onnx.name == "model.onnx" and spec.onnx.is_file()
    assert spec.tokenizer.is_file()
    b = spec.bands
    assert 0 < b.weak <= b.moderate <= b.strong < 1


def test_user_file_adds_a_model_and_becomes_default(tmp_path: Path, monkeypatch):
    f = tmp_path / "models.toml"
    f.write_text(GRANITE.format(sha="a" * 64))
    monkeypatch.setenv("MEMO_MODELS", str(f))
    reg = load_registry()
    assert reg.default == "granite-embedding-small-english-r2"
    g = reg.get()
    assert g.onnx == tmp_path / "granite" / "model.onnx"   # relative to the TOML file
    assert g.bands.strong == 0.88 and g.pooling == "cls"
    assert "all-minilm-l6-v2-int8" in reg.models          # built-in still there
    monkeypatch.setenv("MEMO_MODEL", "all-minilm-l6-v2-int8")
    assert load_registry().default == "all-minilm-l6-v2-int8"


def test_url_only_model_lives_in_the_cache_dir(tmp_path: Path):
    f = tmp_path / "m.toml"
    f.write_text('[models.x]\nurl = "file:///nowhere"\nsha256 = "' + "b" * 64 + '"\ntokenizer = "t.json"\n'
                 "[models.x.bands]\nsemantic_floor = 0.1\nweak = 0.1\nmoderate = 0.2\nstrong = 0.3\n")
    spec = load_registry(f).get("x")
    assert "memo" in str(spec.onnx) and spec.onnx.parts[-2:] == ("x", "model.onnx")


@pytest.mark.parametrize("body, msg", [
    ('[models.x]\nonnx = "m.onnx"\ntokenizer = "t"\nsha256 = "abc"\n[models.x.bands]\nsemantic_floor=0\nweak=0\nmoderate=0\nstrong=0\n', "sha256"),
    ('[models.x]\nonnx = "m.onnx"\ntokenizer = "t"\nsha256 = "' + "a" * 64 + '"\n', "bands"),
    ('[models.x]\nonnx = "m.onnx"\ntokenizer = "t"\nbogus = 1\nsha256 = "' + "a" * 64 + '"\n', "unknown keys"),
    ("not toml [", "not valid TOML"),
])
def test_bad_user_files_fail_clearly(tmp_path: Path, body: str, msg: str):
    f = tmp_path / "m.toml"
    f.write_text(body)
    with pytest.raises(ValidationError, match=msg):
        load_registry(f)


def test_unknown_model_id():
    with pytest.raises(ModelUnavailable, match="unknown embedding model"):
        load_registry().get("nope")
