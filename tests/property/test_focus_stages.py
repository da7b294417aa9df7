"""Stage 4's extra rescorers (speaker, dates, headings, context), run through the one
rescorer interface (``memo.retrieve.rescore.apply``), over random candidate lists: the same candidates come out, each score is multiplied by exactly 1 or 1 + boost
(the latter iff the query names its speaker / it is an ageing kind dated inside a period
the query names / its heading names an identifier of the query), and the list is ordered
by score, tiebreak, pk."""

from __future__ import annotations

from datetime import UTC, date, datetime

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memo.profile import load_profile
from memo.retrieve import context, dated, heading, speaker
from memo.retrieve.heading import heading_name, query_identifiers
from memo.retrieve.rescore import RescoreInput, apply
from memo.retrieve.speaker import named_speakers
from memo.retrieve.types import Candidate, Meta
from memo.text.periods import in_period, query_periods
from tests.fast_examples import examples

NOW = datetime(2026, 1, 1, tzinfo=UTC)


def run(rescorer, cands, meta, query="", **keys):
    """One rescorer over ``cands`` as the pipeline applies it, with base's keys overridden
    (``dates__boost`` for ``dates.boost``)."""
    profile = load_profile("base").with_overrides({k.replace("__", "."): v for k, v in keys.items()})
    ranked, out = apply(rescorer, cands, RescoreInput(query, meta, NOW, profile))
    return ranked, out.named

NAMES = ["Caroline", "Melanie", "Jon Snow", "Jon Arryn", "Gina", "Ana María"]
ITEMS = st.lists(st.tuples(st.floats(0, 1, allow_nan=False), st.floats(0, 1, allow_nan=False),
                           st.none() | st.sampled_from(NAMES)), max_size=40)
QUERY = st.lists(st.sampled_from([*NAMES, "jon", "snow", "caroline's", "what", "did", "say", "MELANIE"]),
                 max_size=6).map(" ".join)


@settings(max_examples=examples(300), deadline=None)
@given(ITEMS, QUERY, st.floats(0, 5, allow_nan=False))
def test_speaker_stage_only_multiplies_the_named_and_reorders(items, query, boost):
    cands = [Candidate(pk, {}, s, s, t) for pk, (s, t, _) in enumerate(items)]
    meta = {pk: Meta("conversation", "n", None, 1, None, who) for pk, (_, _, who) in enumerate(items)}
    out, named = run(speaker.RESCORER, cands, meta, query, speaker__boost=boost)
    assert sorted(c.pk for c in out) == [c.pk for c in cands]
    expected = named_speakers(query, {who for _, _, who in items if who}) if boost > 0 else frozenset()
    assert set(named) == expected
    for c in out:
        before = cands[c.pk]
        if meta[c.pk].speaker in expected:
            assert c.factor("speaker") == 1.0 + boost and c.score == before.score * (1.0 + boost)
        else:
            assert c.factor("speaker") == 1.0 and c.score == before.score
    if named:
        keys = [(-c.score, -c.tiebreak, c.pk) for c in out]
        assert keys == sorted(keys)
    else:
        assert out == cands        # untouched when nothing is named


DATES = st.none() | st.dates(min_value=date(2022, 1, 1), max_value=date(2024, 12, 31)).map(lambda d: d.isoformat())
DATED_ITEMS = st.lists(st.tuples(st.floats(0, 1, allow_nan=False), st.sampled_from(["note", "doc", "conversation"]),
                                 DATES), max_size=40)
DATE_QUERY = st.sampled_from(["in July 2023", "on October 13, 2023", "in June", "in 2024", "nothing dated",
                              "between May 2022 and in 2023", "on 2023-02-28"])


@settings(max_examples=examples(300), deadline=None)
@given(DATED_ITEMS, DATE_QUERY, st.floats(0, 5, allow_nan=False), st.integers(0, 10))
def test_date_stage_only_multiplies_ageing_kinds_inside_a_named_period(items, query, boost, window):

    kinds = ("note", "conversation")
    cands = [Candidate(pk, {}, s, s, 0.0) for pk, (s, _, _) in enumerate(items)]
    meta = {pk: Meta(kind, "n", None, 1, when) for pk, (_, kind, when) in enumerate(items)}
    out, periods = run(dated.RESCORER, cands, meta, query, dates__boost=boost, dates__window_days=window)
    assert sorted(c.pk for c in out) == [c.pk for c in cands]
    expected = query_periods(query, window) if boost > 0 else ()
    assert periods == tuple(p.label for p in expected)
    for c in out:
        m = meta[c.pk]
        inside = (m.kind in kinds and m.when is not None
                  and any(in_period(date.fromisoformat(m.when), p) for p in expected))
        assert (c.factor("dates"), c.score) == ((1.0 + boost, cands[c.pk].score * (1.0 + boost)) if inside
                                      else (1.0, cands[c.pk].score))
    keys = [(-c.score, -c.tiebreak, c.pk) for c in out]
    assert keys == sorted(keys) or out == cands


SECTIONS = ["", "Events > emitter.emit(eventName[, ...args])", "Events > emitter.emit(x) > Example",
            "HTTP > server.keepAliveTimeout", "HTTPS > server.keepAliveTimeout", "Modules > require(id)",
            "Modules > module.require(id)", "shlex.split", "Errors > ERR_HTTP_HEADERS_SENT",
            "Global objects > __dirname in scripts"]
HEADED_ITEMS = st.lists(st.tuples(st.floats(0, 1, allow_nan=False), st.sampled_from(SECTIONS)), max_size=40)
WORDS = ["emitter.emit", "keepAliveTimeout", "require(id)", "shlex.split", "ERR_HTTP_HEADERS_SENT", "__dirname",
         "how", "do", "I", "split", "emit", "events"]


@settings(max_examples=examples(300), deadline=None)
@given(HEADED_ITEMS, st.lists(st.sampled_from(WORDS), max_size=5).map(" ".join), st.floats(0, 5, allow_nan=False),
       st.sampled_from([0.0, 0.34, 0.5, 1.0]))
def test_heading_stage_only_multiplies_sections_headed_by_a_query_identifier(items, query, boost, share):
    cands = [Candidate(pk, {}, s, s, 0.0) for pk, (s, _) in enumerate(items)]
    meta = {pk: Meta("doc", "n", None, 1, None, None, sec) for pk, (_, sec) in enumerate(items)}
    out, names = run(heading.RESCORER, cands, meta, query, heading__boost=boost, heading__min_share=share)
    assert sorted(c.pk for c in out) == [c.pk for c in cands]
    expected = query_identifiers(query, share) if boost > 0 else frozenset()
    assert set(names) == expected
    for c in out:
        h = heading_name(meta[c.pk].section)
        hit = bool(h) and (h in expected or any(h.endswith("." + n) for n in expected))
        assert (c.factor("heading"), c.score) == ((1.0 + boost, cands[c.pk].score * (1.0 + boost)) if hit
                                       else (1.0, cands[c.pk].score))
    keys = [(-c.score, -c.tiebreak, c.pk) for c in out]
    assert keys == sorted(keys) or out == cands


CONTEXT_ITEMS = st.lists(st.tuples(st.floats(0.001, 1, allow_nan=False), st.sampled_from(["A", "B", "C", "D", "E"]),
                                   st.sampled_from(["conversation", "doc"]), st.sampled_from(["s1", "s2", "s3"])),
                         max_size=40)


@settings(max_examples=examples(300), deadline=None)
@given(CONTEXT_ITEMS, st.floats(0, 5, allow_nan=False), st.integers(2, 12))
def test_context_stage_lifts_by_the_records_share_of_the_best(items, boost, top):
    """4e: score x factor with 1 <= factor <= 1 + boost; factor 1 for other kinds and for
    records with no passage among the best ``top``; a record's mass sums its units' best
    scores there (a turn is a unit, a doc's section is one); untouched when no record has
    two units there."""
    ranked = sorted(enumerate(items), key=lambda x: (-x[1][0], x[0]))
    cands = [Candidate(pk, {}, s, s, 0.0) for pk, (s, _, _, _) in ranked]
    meta = {pk: Meta(kind, "n", None, 1, None, None, sec, rec) for pk, (_, rec, kind, sec) in enumerate(items)}
    out, _ = run(context.RESCORER, cands, meta, context__boost=boost, context__top=top,
                 context__kinds=["conversation"])
    assert sorted(c.pk for c in out) == sorted(c.pk for c in cands)
    head = cands[:top]
    units: dict[tuple, float] = {}
    for c in head:
        m = meta[c.pk]
        key = (m.record, c.pk if m.kind == "conversation" else m.section)
        units[key] = max(units.get(key, 0.0), c.score)
    records = [r for r, _ in units]
    if boost <= 0 or len(cands) < 2 or all(records.count(r) < 2 for r in records):
        assert out == cands
        return
    mass = {r: sum(s for (rr, _), s in units.items() if rr == r) for r in set(records)}
    before = {c.pk: c for c in cands}
    for c in out:
        m = meta[c.pk]
        expect = 1.0 + boost * mass[m.record] / max(mass.values()) if (
            m.kind == "conversation" and m.record in mass) else 1.0
        got = c.factor("context")
        assert got == pytest.approx(expect, rel=1e-12) and 1.0 <= got <= 1.0 + boost
        assert c.score == before[c.pk].score * got
    keys = [(-c.score, -c.tiebreak, c.pk) for c in out]
    assert keys == sorted(keys)
