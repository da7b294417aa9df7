"""The section hop (extra ``graph_sections``): the second passage of a docs or code question
is the section *about* a thing the first passage mentions.

"crypto.createHmac: can I feed the message in several chunks?": the keyword and semantic
arms find ``crypto.createHmac``'s section, whose example calls ``hmac.update()``; the answer
sits in the section headed ``hmac.update(data[, inputEncoding])``, which shares almost no
word with the question.  It is the title hop (``memo.graph.titles``) one level down: there
a record's title names its subject, here a section's own heading does.

A passage's *section subject*: for a record of a headed kind (``HEADED_KINDS``: a
document's heading path, a code symbol), the last part of its heading path, read as the
extractor reads headings, when it *starts* with a name or an identifier, after at most a
label ("Class: ", "Event: ") or ``new``, when the rest is that name alone or followed by a
call's signature: ``Class: stream.Readable`` -> ``stream.Readable``, ``hmac.update(data[,
inputEncoding])`` -> ``hmac.update``, ``os.path.join`` (a symbol) -> itself; ``Event:
'end'``, ``Fixes since v1.5.0``, ``Demon algorithm`` or a paper's title name nothing.  A subject
that is also the record's title is left to the title hop.  Leads are found as the title
hop finds them (a section's passages hold consecutive graph indices), and the hop itself is
``title_hop`` over this index.

The index is the title index's machinery with another ``SubjectSpec``: computed once per
mention-graph state, brought up to date with the new passages only after a write, kept in a
sidecar beside a large graph's (``<db>-graph-sections.bin``).
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Sequence
from functools import lru_cache

from memo.graph.cache import MentionGraph
from memo.graph.titles import SubjectSpec, TitleIndex, in_chunks, title_index
from memo.store.mentions import HEADED_KINDS
from memo.text.entities import _JOINERS, HEADING_SEP, entity_key, extract_record, title_key

# An optional label before the subject: "Class: ", "Event: ", "Static method: ", "new ".
_LABEL = re.compile(r"^(?:[A-Z][a-z]+(?: [a-z]+)?:\s+|new\s+)")


@lru_cache(maxsize=65536)
def section_subject(section: str) -> str | None:
    """The entity key a heading path's last part is about, or None (pure)."""
    last = section.rsplit(HEADING_SEP, 1)[-1].strip()
    rest = _LABEL.sub("", last, count=1)
    words = rest.split("(", 1)[0].split()
    if not words or words[0].isalpha() and words[0].islower() \
            or any(w.isalpha() and w.islower() and w not in _JOINERS for w in words):
        return None         # a name's lowercase words are joiners ("of"), an identifier has none:
                            # a sentence (a paper's title) is not read at all
    for m in extract_record([""], headings=[last])[0]:
        if m.kind != "initial" and (rest == m.name or rest.startswith(m.name + "(")):
            return entity_key(m.name)
    return None


def _section_keys(conn: sqlite3.Connection, pks: Sequence[int] | None) -> list[tuple[int, str]]:
    """(pk, subject key) of the passages among ``pks`` (None: all) whose section has one and
    whose record is of a headed kind, a subject that is the record's title left out (the
    title hop's).  Sections first, without the records' join (a paper's title is rejected
    before any record is read: 100k SciFact passages, 0.21 s -> ~0.05 s)."""
    rows = in_chunks(conn, "SELECT p.pk, p.section, p.record_id FROM passages p WHERE p.section != ''{pks}", pks)
    found = [(pk, key, rid) for pk, section, rid in rows if (key := section_subject(section)) is not None]
    records: dict[str, tuple[str, str | None]] = {}
    rids = sorted({rid for _, _, rid in found})
    for s in range(0, len(rids), 500):
        chunk = rids[s:s + 500]
        records.update((rid, (kind, title)) for rid, kind, title in conn.execute(
            f"SELECT id, kind, title FROM records WHERE id IN ({','.join('?' * len(chunk))})", chunk))
    out = []
    for pk, key, rid in found:
        kind, title = records.get(rid, ("", None))
        if kind in HEADED_KINDS and key != title_key(title):
            out.append((pk, key))
    return out


SECTIONS = SubjectSpec("sections", _section_keys)


def section_index(conn: sqlite3.Connection, graph: MentionGraph, sidecar_min: int = 0) -> TitleIndex:
    """Every graph passage's section subject as an entity index (-1: none), in the title
    index's form so ``title_hop`` reads it (``sidecar_min``: ``title_index``'s)."""
    return title_index(conn, graph, SECTIONS, sidecar_min)
