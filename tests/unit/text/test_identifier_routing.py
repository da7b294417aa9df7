"""Exact-arm routing: the query must look like an identifier, not merely contain one."""

import pytest

from memo.text.identifiers import identifier_tokens, query_looks_like_identifier


@pytest.mark.parametrize("query", [
    "ERR_CONN_RESET", "net/http timeout", "POL-358", "snake_case_name", "os.path.join(",
    "what changed in requests 2.31.0 for proxies", "the multi-agent planner",
    "why does net/http return ERR_CONN_RESET on retry", "std::vector growth",
])
def test_identifier_queries_route_to_exact(query):
    assert query_looks_like_identifier(query)


@pytest.mark.parametrize("query", [
    "how do I back up the database",
    "ADAR1 binds to Dicer to cleave pre-miRNA",          # SciFact claim naming a gene
    "Mice lacking IL-6 show reduced inflammation after infection in the lung",
    "", "   ", "?!",
])
def test_natural_language_does_not_route(query):
    assert not query_looks_like_identifier(query)


@pytest.mark.parametrize("query", [
    "event loop blocking timers setImmediate vs process.nextTick",   # issue 15: named inside a question
    "how do I use fs.readFile with an encoding", "why do I get ERR_HTTP_HEADERS_SENT",
    "what does require(id) resolve first", "keepAliveTimeout", "EventEmitter memory leak warning",
    "__dirname in an ES module", "increase --max-old-space-size for the build",
    "ECONNREFUSED when connecting to localhost", "setTimeout() delay is not exact",
])
def test_identifiers_inside_questions_route_to_exact(query):
    assert query_looks_like_identifier(query)


@pytest.mark.parametrize("query", [
    "p53 mutations are found in most human cancers",                 # gene names stay plain words
    "mTOR signalling and siRNA knockdown of BRCA1 reduce tumour growth in mice",
    "Lp(a) levels fall with PCSK9 inhibitors",
    "The arm density of TatAd complexes is due to structural rearrangements",
    "When did Caroline go to the LGBTQ support group?",              # LoCoMo question
])
def test_biology_and_conversation_words_do_not_route(query):
    assert not query_looks_like_identifier(query)


def test_identifier_tokens_keep_identifiers_whole():
    text = "use net/http; ERR_CONN_RESET in path/to/file.py (v2.31.0), multi-agent POL-358 __init__."
    assert identifier_tokens(text) == ["use", "net/http", "err_conn_reset", "in", "path/to/file.py",
                                       "v2.31.0", "multi-agent", "pol-358", "__init__"]
