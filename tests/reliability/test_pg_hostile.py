"""Issue 33.6: the hostile inputs SQLite is tested with (tests/integration/test_cli_hostile.py,
tests/property/test_search_fuzz.py, tests/unit/ops/test_import_hostile.py), through the
library API on a real PostgreSQL: each is refused with a typed error (a ``MemoError``)
or stored faithfully (read back equal), never a traceback.

PostgreSQL's text cannot hold U+0000 (SQLite's can): memo refuses a NUL in any text field
with ``ValidationError`` before the write (``memo.ops.add.check_no_nul``), and an import
rejects that one line and stores the rest.  Without that check the add fails at the
driver; ``memo.store.postgres.connection.typed_error`` still names it ValidationError,
but an import would lose its whole batch.
"""

from __future__ import annotations

import json
import time

import pytest

from memo import ops
from memo.errors import MemoError, QuerySyntaxError, ValidationError
from memo.ops.importer import ImportOptions
from memo.retrieve import SearchRequest, search
from memo.store.db import open_db
from memo.stored import RecordDraft
from memo.text.limits import MAX_BODY_CHARS
from memo.text.when import stored_when
from memo.types import Scope

pytestmark = pytest.mark.postgresql


class NoEmbed:
    model_id = None

    def submit(self, record_ids=(), fact_pks=()) -> bool:  # noqa: ANN001
        return True


def _deep(n: int) -> dict:
    v: object = 1
    for _ in range(n):
        v = {"a": v}
    return v  # type: ignore[return-value]


# Right-to-left letters and SQL's quoting characters: stored and matched as given.  (With a
# bidi control, U+202E, it is refused: it would print reversed, memo.text.namespaces.)
ODD_NAMESPACE = "ns/with RTL \u05e9\u05dc\u05d5\u05dd 'quote\" %s ? ; DROP TABLE records --"

REFUSED = {   # draft fields -> the typed error memo must raise (nothing stored)
    "nul in text": ({"body": "a\x00b"}, ValidationError),
    "nul in title": ({"body": "t1", "title": "t\x00"}, ValidationError),
    "nul in a tag": ({"body": "t2", "tags": ("a\x00",)}, ValidationError),
    "nul in namespace": ({"body": "t3", "namespace": "n\x00s"}, ValidationError),
    "nul in source": ({"body": "t4", "source": "\u202e\u0000x"}, ValidationError),
    "lone surrogate": ({"body": "a\ud800b"}, ValidationError),
    "surrogate in namespace": ({"body": "t5", "namespace": "\udcff"}, ValidationError),
    "meta 200 deep": ({"body": "t6", "meta": _deep(200)}, ValidationError),
    "month 13": ({"body": "t7", "event_at": "2024-13-01"}, ValidationError),
    "year 0": ({"body": "t8", "event_at": "0000-00-00"}, ValidationError),
    "offset +99": ({"body": "t9", "event_at": "2024-01-01T00:00:00+99:00"}, ValidationError),
    "date 'now'": ({"body": "t10", "event_at": "now"}, ValidationError),
    "empty namespace": ({"body": "t11", "namespace": ""}, ValidationError),
    "bidi in namespace": ({"body": "t12", "namespace": "ns/with\u202eRTL"}, ValidationError),   # prints reversed
    "empty text": ({"body": ""}, ValidationError),
    "over the cap": ({"body": "w" * (MAX_BODY_CHARS + 1)}, ValidationError),
}
STORED = {    # draft fields stored and read back as given (an event date: in its stored form)
    "nul in meta (JSON escape)": {"body": "s1", "meta": {"k\x00": "v\x00"}},
    "meta 60 deep": {"body": "s2", "meta": _deep(60)},
    "year 1": {"body": "s3", "event_at": "0001-01-01"},
    "year 9999 +14:00": {"body": "s4", "event_at": "9999-12-31T23:59:59.999999+14:00"},
    "odd namespace": {"body": "s5", "namespace": ODD_NAMESPACE},
    "10,000-char namespace": {"body": "s6", "namespace": "n" * 10_000},
    "percent and placeholders": {"body": "100% sure? %s %(x)s $1 :name ?", "title": "%s"},
    "emoji, ZWJ, combining": {"body": "👩\u200d💻 e\u0301 ﬁnance ß \ufeff", "tags": ("😀", "a b")},
    "NaN in meta": {"body": "s7", "meta": {"x": float("inf")}},
}


@pytest.mark.slow
def test_pg_hostile_inputs_typed_or_stored_faithfully(tmp_path):
    from tests.pg_server import drop_database, new_database

    url = new_database()
    conn = open_db(url)
    bg = NoEmbed()
    outcomes = {}
    try:
        for name, (fields, error) in REFUSED.items():
            with pytest.raises(error):
                ops.add_record(conn, RecordDraft(**fields), background=bg)
            outcomes[name] = error.__name__
        assert conn.execute("SELECT count(*) FROM records").fetchone()[0] == 0
        for name, fields in STORED.items():
            try:
                rep = ops.add_record(conn, RecordDraft(**fields), background=bg)
            except MemoError as exc:     # typed is allowed, but say which
                outcomes[name] = type(exc).__name__
                continue
            got = ops.get(conn, rep.record_id)
            for key, value in fields.items():
                want = tuple(sorted(value)) if key == "tags" else value
                have = tuple(sorted(got.tags)) if key == "tags" else getattr(got, "body" if key == "body" else key)
                if key == "meta":
                    want, have = json.dumps(value, sort_keys=True), json.dumps(have, sort_keys=True)
                if key == "event_at":          # stored as the moment it names (memo.text.when)
                    want = stored_when(value)
                assert have == want, (name, key)
            outcomes[name] = "stored"
        assert outcomes["year 1"] == outcomes["odd namespace"] == outcomes["nul in meta (JSON escape)"] == "stored"

        # A record at the cap (5 MiB of characters) is stored whole.
        big = ("Alice met Bob in Paris about net/http v1.2.3 and IL-6. " * (MAX_BODY_CHARS // 54 + 1))[:MAX_BODY_CHARS]
        t0 = time.monotonic()
        rep = ops.add_record(conn, RecordDraft(body=big, namespace="big"), background=bg)
        at_cap_s = time.monotonic() - t0
        assert ops.get(conn, rep.record_id).body == big
        assert conn.execute("SELECT count(*) FROM passages WHERE record_id = ?", (rep.record_id,)).fetchone()[0] \
            == rep.passages > 1

        # An import: the NUL line and the surrogate line are rejected, the rest is stored.
        src = tmp_path / "in.jsonl"
        src.write_text(json.dumps({"text": "fine one"}) + "\n" + json.dumps({"text": "bad \x00 one"}) + "\n"
                       + '{"text": "\\ud800"}\n' + json.dumps({"text": "fine two", "tags": ["\x00"]}) + "\n"
                       + json.dumps({"text": "fine three"}) + "\n")
        imp = ops.import_path(conn, src, ImportOptions(namespace="imp", batch_size=10))
        assert (imp.added, len(imp.rejected)) == (2, 3), imp

        # Hostile queries: results or a typed error, never a traceback.
        for q in ["a\x00b", "\x00", "\ud800", "x" * 20_000, "%s ?", "NEAR(a b)", '"', "*", "$1", "ﬁnance"]:
            for mode in ("keyword", "exact"):
                try:
                    search(conn, SearchRequest(q, mode=mode, scope=Scope(namespaces=(ODD_NAMESPACE,))))
                except QuerySyntaxError:
                    pass
        found = search(conn, SearchRequest("fine", mode="keyword", scope=Scope(namespaces=("imp",)))).results
        assert {r.record_id for r in found} == set(imp.record_ids)
    finally:
        conn.close()
        drop_database(url)
    print(json.dumps({"outcomes": outcomes, "at_cap_s": round(at_cap_s, 1)}))
