"""Legacy encodings: a file that is not UTF-8 is read in the code page its language was
written in (``memo.ingest.legacy_text``).  charset-normalizer alone read a German cp1252 note
as mac-iceland ("Gr¸þe"), a Spanish one as cp775, a French one starting "À faire" as cp1250,
Hungarian cp1250 and Turkish cp1254 as cp1252: each case below failed before."""

from __future__ import annotations

from pathlib import Path

import pytest

from memo.ingest.files import decode_text, iter_files
from memo.ingest.legacy_text import coverage, detect_encoding, latin_reading
from memo.stored import RecordDraft

NOTES = [
    ("cp1252", "Notes de la réunion\n\nÀ faire : vérifier la configuration, corriger les accents "
               "(é, è, ê, à, ç, ô, û).\nLe système a planté deux fois à cause d'une mise à jour."),
    ("cp1252", "Straße, Grüße aus München! Über die Brücke gehen."),
    ("cp1252", "El niño comió jamón en España; mañana irá a Córdoba."),
    ("cp1250", "Az értekezletet péntekre halasztották. Kérjük, ellenőrizze a változásokat az összefoglalóban."),
    ("cp1254", "Toplantı cuma gününe ertelendi. Lütfen özet belgesindeki değişiklikleri kontrol edin."),
    ("cp1252", "A reunião foi adiada para amanhã. As informações estão no relatório da comissão."),
    ("cp1252", "The “quick” brown fox — it’s 5 € cheaper… naïve café résumé."),
    ("cp1250", "Zażółć gęślą jaźń. Spotkanie zostało przełożone na piątek."),
    ("cp1250", "Schůzka byla přesunuta na pátek, prosím zkontrolujte změny v přehledu a pošlete připomínky."),
    ("cp1257", "Susitikimas perkeltas į penktadienį. Prašome patikrinti pakeitimus ir atsiųsti pastabas."),
    ("cp1251", "Совещание перенесено на пятницу. Пожалуйста, проверьте изменения в обзорном документе."),
    ("cp1253", "Η συνάντηση μεταφέρθηκε την Παρασκευή. Παρακαλώ ελέγξτε τις αλλαγές στο έγγραφο."),
    ("shift_jis", "会議は金曜日に延期されました。概要文書の変更を確認してください。"),
]


@pytest.mark.parametrize(("page", "text"), NOTES, ids=[f"{p}-{t[:12]}" for p, t in NOTES])
def test_a_note_in_its_code_page_is_read_back_exactly(page: str, text: str) -> None:
    decoded = decode_text(text.encode(page))
    assert not isinstance(decoded, str)
    assert decoded[0] == text
    assert decoded[1]["encoding_source"] == "detected"


def test_the_language_decides_between_code_pages_that_both_decode() -> None:
    hungarian = "ellenőrizze az összefoglalót".encode("cp1250")   # cp1252 reads "ellenõrizze"
    assert latin_reading(hungarian) == "cp1250"
    french = "À faire : vérifier le système".encode("cp1252")   # cp1250 reads "Ŕ faire", "systčme"
    assert latin_reading(french) == "cp1252"
    assert detect_encoding(french) == "cp1252"


def test_equal_readings_go_to_the_western_code_page() -> None:
    assert latin_reading("café résumé".encode("cp1252")) == "cp1252"     # é is é in all four
    assert latin_reading("5 € – “quoted”".encode("cp1252")) == "cp1252"  # typography alone


@pytest.mark.parametrize(("text", "why"), [
    ("za¿ó³æ gêœl¹", "a symbol inside a word: Polish read as cp1252"),
    ("Ñîâåùàíèå ïåðåíåñåíî", "every letter accented: Cyrillic read as cp1252"),
    ("Le cafŽ est trs bon", "an accented capital after a small letter: Mac Roman read as cp1252"),
    ("Привет", "not Latin letters"),
])
def test_what_is_not_latin_script_writing_has_no_coverage(text: str, why: str) -> None:
    assert coverage(text) is None, why


def test_coverage_is_the_share_one_alphabet_holds() -> None:
    assert coverage("plain ASCII words") == 1.0
    assert coverage("Grüße aus München") == 1.0                        # German holds ü and ß
    assert coverage("ellenõrizze az összefoglalót") == pytest.approx(2 / 3)  # õ: no language with ö and ó too
    assert coverage("l’été, l·l, co\u00adop") == 1.0                    # apostrophes and joiners inside words


def test_a_legacy_german_file_imports_with_its_umlauts(tmp_path: Path) -> None:
    (tmp_path / "gruesse.txt").write_bytes("Straße, Grüße aus München! Über die Brücke gehen.".encode("cp1252"))
    item = next(i for i in iter_files(tmp_path.resolve(), RecordDraft(body="")) if i.rel == "gruesse.txt")
    assert item.draft.body.startswith("Straße, Grüße aus München")
    assert item.draft.meta == {"encoding": "cp1252", "encoding_source": "detected"}


@pytest.mark.parametrize("word", ["Łódź", "Zażółć"])
def test_a_name_alone_is_read_by_its_alphabet(word: str) -> None:
    """A word or two of Polish in cp1250: every letter but one accented, so the share rule left
    it to charset-normalizer, which read "Łódź" as cp1125 ("гґdЯ") and "Zażółć" as big5."""
    decoded = decode_text(f"{word}\n".encode("cp1250"))
    assert not isinstance(decoded, str) and decoded[0] == f"{word}\n" and decoded[1]["encoding"] == "cp1250"
