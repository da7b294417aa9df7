"""Search commands: ``memo search QUERY`` and ``memo profiles show|diff``.

Parsing and printing only: the pipeline is ``memo.retrieve.search`` (via ``memo.search_api``).
``--json`` prints the whole ``SearchResponse`` (results, why, trace; docs/architecture.md).
"""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from memo.cli.common import DbOption, JsonOption, handle_errors, print_json, skip_teardown
from memo.search_api import search as api_search
from memo.types import PROFILE_ENV, SEARCH_FIELDS, SearchField

if TYPE_CHECKING:
    # memo.search_api imports the pipeline (and memo.profile) itself once it has started
    # the model's load, so that a cold hybrid search overlaps the two: not at this
    # module's import, which comes before the command line is parsed.
    from memo.retrieve import SearchResponse


def search(
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


def _cli_option(f: SearchField) -> inspect.Parameter:
    """A search field (memo.types.SEARCH_FIELDS) as a ``memo search`` option."""
    item: Any = f.type
    kind = " (repeatable)" if f.multiple else ""
    annotation = Annotated[(list[item] if f.multiple else item) | None,  # type: ignore[valid-type]
                           typer.Option(*f.cli, help=f.help + kind)]
    return inspect.Parameter(f.cli_param, inspect.Parameter.KEYWORD_ONLY, annotation=annotation, default=None)


_KW = inspect.Parameter.KEYWORD_ONLY
# query, the search fields (defined once in memo.types.SEARCH_FIELDS), then the command's own.
search.__signature__ = inspect.Signature([  # type: ignore[attr-defined]
    inspect.Parameter("query", inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=Annotated[
        str, typer.Argument(help="What to look for (plain words; memo quotes operators itself).")]),
    *(_cli_option(f) for f in SEARCH_FIELDS),
    inspect.Parameter("mode", _KW, default="auto", annotation=Annotated[
        str, typer.Option("--mode", help="auto, keyword, exact or semantic.")]),
    inspect.Parameter("profile", _KW, default=None, annotation=Annotated[str | None, typer.Option(
        "--profile", envvar=PROFILE_ENV, show_envvar=True,
        help="Profile name or .toml path (default: $MEMO_PROFILE, else zscore).")]),
    inspect.Parameter("limit", _KW, default=None, annotation=Annotated[int | None, typer.Option(
        "--limit", help="Results to return (default: the profile's, 10; at most its limit.max, 100).")]),
    inspect.Parameter("max_tokens", _KW, default=None, annotation=Annotated[int | None, typer.Option(
        "--max-tokens", help="Token budget for all results together.")]),
    inspect.Parameter("explain", _KW, default=False, annotation=Annotated[bool, typer.Option(
        "--explain", help="Show why each result ranks where it does.")]),
    inspect.Parameter("db", _KW, default=None, annotation=DbOption),
    inspect.Parameter("as_json", _KW, default=False, annotation=JsonOption),
])
search = handle_errors(search)


def _print_response(resp: SearchResponse, *, explain: bool) -> None:
    tr = resp.trace
    if resp.trace.degraded["flag"]:
        typer.echo(f"warning: degraded search: {tr.degraded['reason']}", err=True)
    for note in tr.notes:       # what the search changed in the request (a cut query, ...)
        typer.echo(f"note: {note}", err=True)
    if not resp.results:
        typer.echo(f"No results: {resp.reason}.")
        if resp.hint:
            typer.echo(f"hint: {resp.hint}")
        return
    if explain and tr.fusion_weights.get("multipliers"):
        typer.echo(f"weights: {fusion_weights_line(tr.fusion_weights)}")
    for i, res in enumerate(resp.results, 1):
        band = f"  relevance {res.relevance:.3f} ({res.band})" if res.relevance is not None else ""
        head = f"  {res.section}" if res.section else ""
        typer.echo(f"{i:>2}. {res.passage_id}  [{res.kind}/{res.namespace}]  score {res.score:.4g}{band}{head}")
        snippet = " ".join(res.text.split())
        typer.echo(f"    {snippet[:240]}{'…' if len(snippet) > 240 else ''}")
        if res.origin:
            typer.echo(f"    from {res.origin}")
        if explain and res.why is not None:
            w = res.why
            parts = [f"{arm} #{a.rank} raw {a.raw:.4g} -> +{a.contribution:.4g}" for arm, a in w.arms.items()]
            said = "".join(f" x {f.name}{f' ({f.label})' if f.label else ''} {f.value:.4g}" for f in w.factors)
            typer.echo(f"    why: {'; '.join(parts)}; fused {w.fused:.4g}{said} = {w.final:.4g}")
            prov = ", ".join(f"{k} {v}" for k, v in w.provenance.items() if v)
            fresh = w.freshness
            typer.echo(f"    from: {prov}; event {fresh.get('event_at') or '-'}, age {fresh.get('age_days')} days")
    foot = f"{len(resp.results)} results"
    if resp.truncated:
        foot += f"; {resp.truncated} more ranked results did not fit (limit/budget)"
    if resp.narrow_hint:
        nh = resp.narrow_hint
        foot += f"; to narrow: {nh['option']} would leave out the {nh['would_drop']} ranked results from elsewhere"
    arms = ", ".join(f"{a.name} {a.candidates}" for a in tr.arms if a.ran)
    typer.echo(f"-- {foot}. arms: {arms}; {tr.filter['in_scope']}/{tr.filter['total']} passages in scope;"
               f" {tr.budget['used']}/{tr.budget['max']} tokens; {tr.latency_ms:.1f} ms")


def fusion_weights_line(fw: dict) -> str:
    """The arm weights this query's fusion used and what moved them (extra adaptive):
    "semantic 0.5, keyword x 0.31 = 0.155, ... (keyword_coverage 0.279)"."""
    mult, parts = fw.get("multipliers", {}), []
    for arm, w in fw.get("weights", {}).items():
        parts.append(f"{arm} x {mult[arm]:.3g} = {w:.4g}" if arm in mult else f"{arm} {w:.4g}")
    said = ", ".join(f"{k} {v:.3f}" for k, v in fw.get("evidence", {}).items())
    return ", ".join(parts) + (f" ({said})" if said else "")


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
    from memo.profile import load_profile, profile_names  # here: `memo search` does not need it yet

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
    from memo.profile import diff_profiles, load_profile

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
