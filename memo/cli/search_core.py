"""``memo search``: run the search and print it, whichever parser read the command line.

``memo.cli.search_cmds`` (typer: ``--help``, usage errors, every unusual command line) and
``memo.cli.fast_search`` (the usual ones, without importing typer: issue 31.2) both call
``run_search``; it prints with ``memo.cli.plumbing`` only, so the two print the same bytes.
Parsing and printing only: the pipeline is ``memo.retrieve.search`` (via ``memo.search_api``).
``--json`` prints the whole ``SearchResponse`` (results, why, trace; docs/architecture.md).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from memo.cli.plumbing import echo, print_json, skip_teardown
from memo.search_api import search as api_search
from memo.types import SEARCH_FIELDS

if TYPE_CHECKING:
    # memo.search_api imports the pipeline (and memo.profile) itself once it has started
    # the model's load, so that a cold hybrid search overlaps the two: not at this
    # module's import, which comes before the command line is parsed.
    from memo.retrieve import SearchResponse


def run_search(
    query: str, mode: str = "auto", profile: str | None = None, limit: int | None = None,
    max_tokens: int | None = None, explain: bool = False, db: Path | None = None, as_json: bool = False,
    **options: Any,
) -> None:
    """Search the knowledge base (scope -> arms -> fusion -> recency -> abstention -> cutoff -> limit -> budget)."""
    fields = {f.name: options[f.cli_param] for f in SEARCH_FIELDS if options.get(f.cli_param) not in (None, [])}
    # read-only, its connection closed by api_search: nothing a teardown must finish (with
    # the model loaded, the teardown is most of what a cold search waits for after its output)
    skip_teardown()
    resp = api_search(query, db=db, mode=mode, profile=profile, limit=limit, max_tokens=max_tokens,
                      explain=explain, **fields)
    if as_json:
        print_json(resp)
        return
    _print_response(resp, explain=explain)


def _print_response(resp: SearchResponse, *, explain: bool) -> None:
    tr = resp.trace
    if resp.trace.degraded["flag"]:
        echo(f"warning: degraded search: {tr.degraded['reason']}", err=True)
    for note in tr.notes:       # what the search changed in the request (a cut query, ...)
        echo(f"note: {note}", err=True)
    if not resp.results:
        echo(f"No results: {resp.reason}.")
        if resp.hint:
            echo(f"hint: {resp.hint}")
        return
    if explain and tr.fusion_weights.get("multipliers"):
        echo(f"weights: {fusion_weights_line(tr.fusion_weights)}")
    for i, res in enumerate(resp.results, 1):
        band = f"  relevance {res.relevance:.3f} ({res.band})" if res.relevance is not None else ""
        head = f"  {res.section}" if res.section else ""
        lib = " ".join(x for x in (res.library, res.version) if x)
        where = f"{res.kind}/{res.namespace}" + (f" · {lib}" if lib else "")
        echo(f"{i:>2}. {res.passage_id}  [{where}]  score {res.score:.4g}{band}{head}")
        snippet = " ".join(res.text.split())
        echo(f"    {snippet[:240]}{'…' if len(snippet) > 240 else ''}")
        # the date and the speaker, unless the heading already shows them (a turn's "Caroline @ 2023-05-08";
        # its date as written, the stored one in UTC: the day is compared)
        said = " · ".join(x for x in (
            res.event_at and res.event_at[:10] not in res.section and f"dated {res.event_at.replace('.000000', '')}",
            res.speaker and res.speaker not in res.section and f"said by {res.speaker}") if x)
        if said:
            echo(f"    {said}")
        if res.origin:
            echo(f"    from {res.origin}")
        if explain and res.why is not None:
            w = res.why
            parts = [f"{arm} #{a.rank} raw {a.raw:.4g} -> +{a.contribution:.4g}" for arm, a in w.arms.items()]
            said = "".join(f" x {f.name}{f' ({f.label})' if f.label else ''} {f.value:.4g}" for f in w.factors)
            echo(f"    why: {'; '.join(parts)}; fused {w.fused:.4g}{said} = {w.final:.4g}")
            prov = ", ".join(f"{k} {v}" for k, v in w.provenance.items() if v)
            fresh = w.freshness
            echo(f"    from: {prov}; event {fresh.get('event_at') or '-'}, age {fresh.get('age_days')} days")
    foot = f"{len(resp.results)} results"
    if resp.truncated:
        foot += f"; {resp.truncated} more ranked results did not fit (limit/budget)"
    if resp.narrow_hint:
        nh = resp.narrow_hint
        foot += f"; to narrow: {nh['option']} would leave out the {nh['would_drop']} ranked results from elsewhere"
    arms = ", ".join(f"{a.name} {a.candidates}" for a in tr.arms if a.ran)
    echo(f"-- {foot}. arms: {arms}; {tr.filter['in_scope']}/{tr.filter['total']} passages in scope;"
               f" {tr.budget['used']}/{tr.budget['max']} tokens; {tr.latency_ms:.1f} ms")


def fusion_weights_line(fw: dict) -> str:
    """The arm weights this query's fusion used and what moved them (extra adaptive):
    "semantic 0.5, keyword x 0.31 = 0.155, ... (keyword_coverage 0.279)"."""
    mult, parts = fw.get("multipliers", {}), []
    for arm, w in fw.get("weights", {}).items():
        parts.append(f"{arm} x {mult[arm]:.3g} = {w:.4g}" if arm in mult else f"{arm} {w:.4g}")
    said = ", ".join(f"{k} {v:.3f}" for k, v in fw.get("evidence", {}).items())
    return ", ".join(parts) + (f" ({said})" if said else "")
