"""Retrieval: ``search(conn, SearchRequest, profile, services)`` runs the pipeline in
``memo.retrieve.pipeline`` (scope -> arms -> fusion -> recency -> abstention -> cutoff ->
limit -> budget -> results + why + trace)."""

from memo.retrieve.pipeline import search
from memo.retrieve.types import Result, SearchRequest, SearchResponse, Trace, Why

__all__ = ["Result", "SearchRequest", "SearchResponse", "Trace", "Why", "search"]
