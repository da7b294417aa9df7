"""Stage 4d, headings: a heading's name, the query's identifiers, which headings name
them, the factor, the order, explain."""

from __future__ import annotations

import pytest
from retrieve_helpers import add, assert_why_reproduces_final, pk_of, rescore_named

from memo.profile import load_profile
from memo.retrieve import SearchRequest, search
from memo.retrieve.heading import RESCORER, heading_name, name_of, named_headings, query_identifiers
from memo.retrieve.types import Candidate, Meta


@pytest.mark.parametrize(("heading", "name"), [
    ("fs.readFile(path[, options], callback)", "fs.readfile"),
    ("`fs.stat`", "fs.stat"),
    ("UV_THREADPOOL_SIZE=size", "uv_threadpool_size"),
    ("--max-old-space-size=SIZE (in megabytes)", "--max-old-space-size"),
    ("Class: http.Server", "http.server"),
    ("Static method: Buffer.from(array)", "buffer.from"),
    ("new URL(input[, base])", "url"),
    ("Event: 'connection'", "connection"),
    ("shlex.split", "shlex.split"),
    ("require(id)", "require"),
    ("__dirname in the injected main script", "__dirname"),           # the identifier it starts with
    ("require(id) in the injected main script is not file based", "require"),
    ("Common system errors", "common"),
    ("session 24", "session"),
    ("", ""),
])
def test_name_of_a_heading(heading, name):
    assert name_of(heading) == name


def test_heading_name_is_the_last_part_of_the_section_path():
    assert heading_name("File system > Callback API > fs.readFile(path[, options], callback)") == "fs.readfile"
    assert heading_name("File system > fs.readFile(path) > File descriptors") == "file"   # its own heading
    assert heading_name("") == ""


@pytest.mark.parametrize(("query", "min_share", "names"), [
    ("fs.readFile", 0.5, {"fs.readfile"}),
    ("require(id)", 0.5, {"require"}),
    ("TypeError [ERR_INVALID_ARG_TYPE]:", 0.5, {"typeerror", "err_invalid_arg_type"}),
    ("fs.createReadStream options highWaterMark", 0.5, {"fs.createreadstream", "highwatermark"}),
    ("punycode", 0.5, {"punycode"}),                           # a one-word query is a lookup
    ("'scrypt'?", 0.5, {"scrypt"}),
    ("module.exports vs exports", 0.5, set()),                 # 1 of 3 words
    ("module.exports vs exports", 0.3, {"module.exports"}),
    ("Like unquote(), but also replace plus signs by spaces", 0.5, set()),   # a sentence
    ("how do I read a file line by line", 0.0, set()),         # no code-shaped word
    ("p53 mutations in IL-6 signalling", 0.0, set()),          # gene names are not code
    ("", 0.0, set()),
])
def test_query_identifiers(query, min_share, names):
    assert query_identifiers(query, min_share) == names


def test_a_heading_names_an_identifier_it_is_or_ends_with():
    assert named_headings({"require", "module.require", "require.cache"}, frozenset({"require"})) == {
        "require": "require", "module.require": "require"}
    assert named_headings({"server.keepalivetimeout", "http.server"}, frozenset({"keepalivetimeout"})) == {
        "server.keepalivetimeout": "keepalivetimeout"}
    assert named_headings({"fs.readfile", "fsreadfile"}, frozenset({"readfile"})) == {"fs.readfile": "readfile"}
    assert named_headings(set(), frozenset({"x"})) == {}


def _cands(scores):
    return [Candidate(pk, {}, s, s, 0.0) for pk, s in scores]


def _meta(section):
    return Meta("doc", "n", None, 5, None, None, section)


def test_apply_heading_boosts_the_named_sections_passages_and_resorts():
    meta = {1: _meta("Events > emitter.on(eventName, listener)"),
            2: _meta("Events > emitter.emit(eventName[, ...args])"),
            3: _meta("Events > emitter.emit(eventName[, ...args]) > Example"),
            4: _meta("")}
    out, names = rescore_named(RESCORER, _cands([(1, 0.5), (3, 0.45), (4, 0.42), (2, 0.4)]), meta, "emitter.emit", heading__boost=0.5, heading__min_share=0.5)
    assert names == ("emitter.emit",)
    assert [c.pk for c in out] == [2, 1, 3, 4]
    assert out[0].score == 0.4 * 1.5 and out[0].factor("heading") == 1.5
    assert all(c.factor("heading") == 1.0 for c in out[1:])


def test_apply_heading_is_a_no_op_without_boost_identifier_or_match():
    meta = {1: _meta("Events > emitter.on(eventName, listener)"), 2: _meta("Path > path.join([...paths])")}
    cands = _cands([(1, 0.5), (2, 0.4)])
    assert rescore_named(RESCORER, cands, meta, "emitter.emit", heading__boost=0.0, heading__min_share=0.5) == (cands, ())
    assert rescore_named(RESCORER, cands, meta, "how do I join paths", heading__boost=0.5, heading__min_share=0.5) == (cands, ())
    out, names = rescore_named(RESCORER, cands, meta, "fs.readFile", heading__boost=0.5, heading__min_share=0.5)
    assert out == cands and names == ("fs.readfile",)


def test_pipeline_ranks_the_section_headed_by_the_name_first_and_explains_it_exactly(conn):
    # The name is repeated in the example section (bm25 prefers it); the defining section
    # says it once.
    example = add(conn, "Example: call emitter.emit twice; emitter.emit returns true; emitter.emit again",
                  kind="doc", section="Events > Example: emitting")
    defining = add(conn, "Synchronously calls each of the listeners registered for the event emitter.emit names",
                   kind="doc", section="Events > emitter.emit(eventName[, ...args])")
    add(conn, "Unrelated text about files", kind="doc", section="File system > fs.stat(path)")
    profile = load_profile("rrf").with_overrides({"cutoff.gap": 1.0, "heading.boost": 0.5, "heading.min_share": 0.5})
    request = SearchRequest("emitter.emit", mode="keyword", response_format="explain")
    plain = search(conn, request, profile.with_overrides({"heading.boost": 0.0}))
    boosted = search(conn, request, profile)
    assert "heading" not in plain.trace.rescore and boosted.trace.rescore["heading"] == ("emitter.emit",)
    assert plain.results[0].pk == pk_of(conn, example)
    assert boosted.results[0].pk == pk_of(conn, defining)
    assert {r.pk for r in boosted.results} == {r.pk for r in plain.results}
    for res in boosted.results:
        assert_why_reproduces_final(res)
        w = res.why
        if res.pk == pk_of(conn, defining):
            assert (w.label("heading"), w.factor("heading")) == ("emitter.emit", 1.5)
        else:
            assert (w.label("heading"), w.factor("heading")) == (None, 1.0)


def test_profile_rejects_a_share_above_one():
    from memo.errors import ProfileError

    with pytest.raises(ProfileError, match="heading.min_share"):
        load_profile("rrf").with_overrides({"heading.min_share": 1.5})
