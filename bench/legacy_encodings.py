"""How often ``memo import`` reads a legacy-encoded text file back exactly (the detection in
``memo.ingest.legacy_text``), on real text in 28 languages: the translated messages of the
gettext catalogs installed on the machine (``/usr/share/locale/<lang>/LC_MESSAGES/*.mo``).

    .venv/bin/python bench/legacy_encodings.py [--trials 60] [--seed 5] [--memo-path DIR] [--json]

For each language, documents of 1, 3 and 20 messages drawn at random (seeded) among those
holding a letter beyond ASCII are encoded in the language's Windows code page (cp1252
Western, cp1250 Central European, cp1254 Turkish, cp1257 Baltic, cp1251 Cyrillic, cp1253
Greek; a message the code page cannot hold is left out) and decoded by
``memo.ingest.files.decode_text`` as an import without ``--encoding`` does; a document counts
when the text comes back exactly.  ``--memo-path DIR`` runs the same documents through
another checkout's memo (an older commit: before and after in one run).  Prints exact/total
per language and size; nothing is timed.
"""

from __future__ import annotations

import argparse
import gettext
import glob
import json
import os
import random
import subprocess
import sys

LANGUAGES = {
    "fr": "cp1252", "de": "cp1252", "es": "cp1252", "pt": "cp1252", "it": "cp1252", "nl": "cp1252",
    "da": "cp1252", "sv": "cp1252", "nb": "cp1252", "fi": "cp1252", "ca": "cp1252", "gl": "cp1252",
    "is": "cp1252", "pl": "cp1250", "cs": "cp1250", "sk": "cp1250", "hu": "cp1250", "hr": "cp1250",
    "sl": "cp1250", "ro": "cp1250", "tr": "cp1254", "lt": "cp1257", "lv": "cp1257", "et": "cp1257",
    "ru": "cp1251", "uk": "cp1251", "bg": "cp1251", "el": "cp1253",
}
SIZES = (1, 3, 20)
# Romanian in cp1250 was written with the cedilla letters (the comma-below ones came later).
ROMANIAN_LEGACY = str.maketrans({"ș": "ş", "ț": "ţ", "Ș": "Ş", "Ț": "Ţ"})


def messages(lang: str) -> list[str]:
    """The language's translated messages (over 20 characters, holding a letter beyond ASCII)."""
    out = []
    for mo in sorted(glob.glob(f"/usr/share/locale/{lang}/LC_MESSAGES/*.mo")):
        if "/iso_" in mo:           # place and language names: words of many languages
            continue
        try:
            with open(mo, "rb") as fh:
                catalog = gettext.GNUTranslations(fh)._catalog
        except (OSError, ValueError, UnicodeDecodeError):
            continue
        for key, text in catalog.items():
            source = key if isinstance(key, str) else key[0]
            if isinstance(text, str) and len(text) > 20 and text != source and any(ord(c) > 127 for c in text):
                out.append(text.translate(ROMANIAN_LEGACY) if lang == "ro" else text)
    return out


def documents(trials: int, seed: int) -> list[tuple[str, int, str, bytes]]:
    """(language, size, text, bytes in its code page) for every language with messages."""
    rng = random.Random(seed)
    out = []
    for lang, page in LANGUAGES.items():
        pool = messages(lang)
        for size in SIZES:
            if len(pool) < size:
                continue
            for _ in range(trials):
                text = "\n".join(rng.sample(pool, size))
                try:
                    data = text.encode(page)
                except UnicodeEncodeError:
                    continue
                out.append((lang, size, text, data))
    return out


def exact(docs: list[tuple[str, int, str, bytes]]) -> list[bool]:
    from memo.ingest.files import decode_text

    got = []
    for _, _, text, data in docs:
        decoded = decode_text(data)
        got.append(isinstance(decoded, tuple) and decoded[0] == text)
    return got


def table(docs: list[tuple[str, int, str, bytes]], ok: list[bool]) -> dict[str, dict[str, list[int]]]:
    out: dict[str, dict[str, list[int]]] = {}
    for (lang, size, _, _), good in zip(docs, ok, strict=True):
        cell = out.setdefault(lang, {}).setdefault(str(size), [0, 0])
        cell[0] += good
        cell[1] += 1
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--trials", type=int, default=60, help="documents per language and size")
    ap.add_argument("--seed", type=int, default=5)
    ap.add_argument("--memo-path", help="also decode with memo from this checkout (an older commit)")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--decode-only", action="store_true", help=argparse.SUPPRESS)   # the --memo-path child
    args = ap.parse_args()
    docs = documents(args.trials, args.seed)
    if not docs:
        raise SystemExit("no gettext catalogs under /usr/share/locale: nothing to measure")
    if args.decode_only:
        print(json.dumps(exact(docs)))
        return
    runs = {"after": exact(docs)}
    if args.memo_path:
        env = dict(os.environ, PYTHONPATH=os.path.abspath(args.memo_path))
        child = subprocess.run([sys.executable, os.path.abspath(__file__), "--decode-only", "--trials",
                                str(args.trials), "--seed", str(args.seed)], env=env, cwd="/",
                               capture_output=True, text=True, check=True)
        runs = {"before": json.loads(child.stdout), **runs}
    result = {name: table(docs, ok) for name, ok in runs.items()}
    result["totals"] = {name: [sum(ok), len(ok)] for name, ok in runs.items()}
    if args.json:
        print(json.dumps(result, indent=1))
        return
    names = list(runs)
    print("exact / documents, by language, page and messages per document: " + " | ".join(names))
    for lang, page in LANGUAGES.items():
        cells = []
        for size in SIZES:
            got = [result[n].get(lang, {}).get(str(size)) for n in names]
            if got[0]:
                cells.append(f"{size}: " + " -> ".join(f"{g[0]}/{g[1]}" for g in got))
        print(f"  {lang} {page}  " + "   ".join(cells))
    print("total  " + " -> ".join(f"{result['totals'][n][0]}/{result['totals'][n][1]}" for n in names))


if __name__ == "__main__":
    main()
