"""Search commands: ``memo search QUERY`` and ``memo profiles show|diff``.

Parsing and printing only: the pipeline is ``memo.retrieve.search`` (via ``memo.search_api``).
``--json`` prints the whole ``SearchResponse`` (results, why, trace; docs/architecture.md).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from memo.cli.common import DbOption, JsonOption, handle_errors, print_json
from memo.profile import diff_profiles, load_profile, profile_names
from memo.retrieve import SearchResponse
from memo.search_api import search as api_search

ListOpt = list[str] | None


@handle_errors
def search(
    query: Annotated[str, typer.Argument(help="What to look for (plain words; memo quotes operators itself).")],
    namespace: Annotated[ListOpt, typer.Option("--namespace", "-n", help="Only this namespace (repeatable).")] = None,
    kind: Annotated[ListOpt, typer.Option("--kind", "-k", help="Only this kind: note, conversation, doc, code (repeatable).")] = None,
    source: Annotated[ListOpt, typer.Option("--source", help="Only this source (repeatable).")] = None,
    library: Annotated[str | None, typer.Option("--library", help="Only this library.")] = None,
    version: Annotated[str | None, typer.Option("--version", help="Only this library version.")] = None,
    tag: Annotated[ListOpt, typer.Option("--tag", "-t", help="Records carrying this tag (repeatable: all required).")] = None,
    date_from: Annotated[str | None, typer.Option("--from", help="Event date on or after (ISO date/time).")] = None,
    date_to: Annotated[str | None, typer.Option("--to", help="Event date on or before (a bare date includes the day).")] = None,
    min_trust: Annotated[float | None, typer.Option("--min-trust", help="Only records with trust >= this (0..1).")] = None,
    as_of: Annotated[str | None, typer.Option("--as-of", help="Search the knowledge base as it was at this time.")] = None,
    mode: Annotated[str, typer.Option("--mode", help="auto, keyword, exact or semantic.")] = "auto",
    profile: Annotated[str, typer.Option("--profile", help="Profile name (profiles/NAME.toml) or path.")] = "rrf",
    limit: Annotated[int | None, typer.Option("--limit", help="Results to return (default 10, at most 100).")] = None,
    max_tokens: Annotated[int | None, typer.Option("--max-tokens", help="Token budget for all results together.")] = None,
    explain: Annotated[bool, typer.Option("--explain", help="Show why each result ranks where it does.")] = False,
    db: DbOption = None,
    as_json: JsonOption = False,
) -> None:
    """Search the knowledge base (scope -> arms -> fusion -> recency -> abstention -> cutoff -> limit -> budget)."""
    resp = api_search(query, db=db, namespaces=namespace or (), kinds=kind or (), sources=source or (),
                      library=library, version=version, tags=tag or (), date_from=date_from,
                      date_to=date_to, min_trust=min_trust, as_of=as_of, mode=mode, profile=profile,
                      limit=limit, max_tokens=max_tokens, explain=explain)
    if as_json:
        print_json(resp)
        return
    _print_response(resp, explain=explain)


def _print_response(resp: SearchResponse, *, explain: bool) -> None:
    tr = resp.trace
    if resp.trace.degraded["flag"]:
        typer.echo(f"warning: degraded search: {tr.degraded['reason']}", err=True)
    if not resp.results:
        typer.echo(f"No results: {resp.reason}.")
        if resp.hint:
            typer.echo(f"hint: {resp.hint}")
        return
    for i, res in enumerate(resp.results, 1):
        band = f"  relevance {res.relevance:.3f} ({res.band})" if res.relevance is not None else ""
        head = f"  {res.section}" if res.section else ""
        typer.echo(f"{i:>2}. {res.passage_id}  [{res.kind}/{res.namespace}]  score {res.score:.4g}{band}{head}")
        snippet = " ".join(res.text.split())
        typer.echo(f"    {snippet[:240]}{'…' if len(snippet) > 240 else ''}")
        if explain and res.why is not None:
            w = res.why
            parts = [f"{arm} #{a.rank} raw {a.raw:.4g} -> +{a.contribution:.4g}" for arm, a in w.arms.items()]
            typer.echo(f"    why: {'; '.join(parts)}; fused {w.fused:.4g} x recency {w.recency_factor:.4g}"
                       f" = {w.final:.4g}")
            prov = ", ".join(f"{k} {v}" for k, v in w.provenance.items() if v)
            fresh = w.freshness
            typer.echo(f"    from: {prov}; event {fresh.get('event_at') or '-'}, age {fresh.get('age_days')} days")
    foot = f"{len(resp.results)} results"
    if resp.truncated:
        foot += f"; {resp.truncated} more did not fit (limit/budget)"
    if resp.narrow_hint:
        nh = resp.narrow_hint
        foot += f"; narrow with {nh['option']} (drops {nh['would_drop']})"
    arms = ", ".join(f"{a.name} {a.candidates}" for a in tr.arms if a.ran)
    typer.echo(f"-- {foot}. arms: {arms}; {tr.filter['in_scope']}/{tr.filter['total']} passages in scope;"
               f" {tr.budget['used']}/{tr.budget['max']} tokens; {tr.latency_ms:.1f} ms")


# --- profiles ----------------------------------------------------------------------------
profiles_app = typer.Typer(help="Search profiles: every constant of the search pipeline (docs/profiles.md).",
                           no_args_is_help=True)


@profiles_app.command("show")
@handle_errors
def profiles_show(
    name: Annotated[str | None, typer.Argument(help="Profile name or path (omit to list profiles).")] = None,
    as_json: JsonOption = False,
) -> None:
    """Show a profile's constants (or list the profiles)."""
    if name is None:
        names = profile_names()
        doc: Any = {"profiles": [{"name": n, "source": str(load_profile(n).source)} for n in names]}
        if as_json:
            print_json(doc)
        else:
            for entry in doc["profiles"]:
                typer.echo(f"{entry['name']:<12}{entry['source']}")
        return
    prof = load_profile(Path(name) if name.endswith(".toml") else name)
    flat = prof.flat()
    if as_json:
        print_json({"name": prof.name, "source": prof.source, "constants": flat})
        return
    typer.echo(f"# {prof.name}: {prof.source}")
    for key, value in flat.items():
        if key != "name":
            typer.echo(f"{key} = {value!r}")


@profiles_app.command("diff")
@handle_errors
def profiles_diff(
    a: Annotated[str, typer.Argument(help="First profile (name or path).")],
    b: Annotated[str, typer.Argument(help="Second profile (name or path).")],
    as_json: JsonOption = False,
) -> None:
    """Keys whose values differ between two profiles."""
    pa, pb = load_profile(a), load_profile(b)
    diff = {k: v for k, v in diff_profiles(pa, pb).items() if k != "name"}
    if as_json:
        print_json({"a": pa.name, "b": pb.name,
                    "differences": [{"key": k, "a": va, "b": vb} for k, (va, vb) in diff.items()]})
        return
    if not diff:
        typer.echo(f"{pa.name} and {pb.name} hold the same constants")
    for key, (va, vb) in diff.items():
        typer.echo(f"{key}: {va!r} -> {vb!r}")


def register(app: typer.Typer) -> None:
    app.command("search")(search)
    app.add_typer(profiles_app, name="profiles")
