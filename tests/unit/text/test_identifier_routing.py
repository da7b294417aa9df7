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


def test_identifier_tokens_keep_identifiers_whole():
    text = "use net/http; ERR_CONN_RESET in path/to/file.py (v2.31.0), multi-agent POL-358 __init__."
    assert identifier_tokens(text) == ["use", "net/http", "err_conn_reset", "in", "path/to/file.py",
                                       "v2.31.0", "multi-agent", "pol-358", "__init__"]
