"""A UTF-8 file with a stray byte is imported, not rejected whole.

A tester's markdown note, valid UTF-8 but for one ``\\xff``, was rejected with "pass
--encoding NAME (e.g. latin-1)": following that hint turns each of its real UTF-8
characters (é, €, 日本語) into two or three wrong ones."""

from __future__ import annotations

from pathlib import Path

from memo.ingest.files import MAX_STRAY_BYTES, decode_text, iter_files
from memo.stored import RecordDraft


def test_a_stray_byte_in_utf8_text_is_replaced_and_reported(tmp_path: Path):
    (tmp_path / "a.md").write_bytes("# Café\n\nCafé ☕ and 日本語.\nA stray byte: ".encode() + b"\xff here.\n")
    (item,) = list(iter_files(tmp_path, RecordDraft(body="")))
    assert item.rejected is None and item.draft is not None
    assert "Café ☕ and 日本語." in item.draft.body and "\ufffd here" in item.draft.body
    assert item.notices and "1 invalid byte(s) replaced by U+FFFD" in item.notices[0]
    assert item.draft.meta["encoding_source"] == "1 invalid byte(s) replaced by U+FFFD"


def test_legacy_text_is_still_detected_not_mended():
    text = "Le café était très chaud, déjà servi à la crème. " * 40
    decoded = decode_text(text.encode("cp1252"))
    assert not isinstance(decoded, str) and decoded[1]["encoding_source"] == "detected"


def test_many_bad_bytes_are_not_mended():
    data = ("Café " * 2000).encode() + b"\xff" * (MAX_STRAY_BYTES + 1)
    decoded = decode_text(data)
    assert isinstance(decoded, str) or decoded[1].get("encoding_source") != f"{MAX_STRAY_BYTES + 1} invalid byte(s) replaced by U+FFFD"


def test_ascii_with_a_stray_byte_goes_to_detection():
    """No character beyond ASCII decodes as UTF-8: nothing says the file is UTF-8."""
    decoded = decode_text(b"plain words " * 200 + b"\xe9 and more words")
    assert not isinstance(decoded, str) and "replaced" not in str(decoded[1].get("encoding_source"))
