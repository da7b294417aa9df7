"""Search commands: ``memo search QUERY`` and ``memo profiles show|diff``.

``memo search``'s options are data (``memo.cli.options.SEARCH_OPTIONS``); this module makes
the typer command of them, which parses every command line ``memo.cli.fast_search`` leaves
to it (``--help``, usage errors, the unusual forms).  Both run ``memo.cli.search_core``.
"""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import Annotated, Any

import typer

from memo.cli.common import JsonOption, echo, handle_errors, print_json, typer_annotation
from memo.cli.options import QUERY_HELP, QUERY_PARAM, SEARCH_OPTIONS
from memo.cli.search_core import fusion_weights_line, run_search

__all__ = ["fusion_weights_line", "search"]


def search(query: str, **options: Any) -> None:
    """Search the knowledge base (scope -> arms -> fusion -> recency -> abstention -> cutoff -> limit -> budget)."""
    run_search(query, **options)


_KW = inspect.Parameter.KEYWORD_ONLY
# The query, then every option as memo.cli.options defines it.
search.__signature__ = inspect.Signature([  # type: ignore[attr-defined]
    inspect.Parameter(QUERY_PARAM, inspect.Parameter.POSITIONAL_OR_KEYWORD,
                      annotation=Annotated[str, typer.Argument(help=QUERY_HELP)]),
    *(inspect.Parameter(o.param, _KW, default=o.default, annotation=typer_annotation(o)) for o in SEARCH_OPTIONS),
])
search = handle_errors(search)


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
    # here: `memo search` does not need them yet
    from memo.errors import ProfileError
    from memo.profile import load_profile, profile_names, resolve_profile_path

    if name is None:
        doc: Any = {"profiles": [], "invalid": []}
        for n in profile_names():
            # One broken file in the profile folder must not hide the others: the list goes
            # on, the file is named apart with its error (naming it still fails: exit 2).
            try:
                doc["profiles"].append({"name": n, "source": str(load_profile(n).source)})
            except ProfileError as err:
                doc["invalid"].append({"name": n, "path": str(resolve_profile_path(n)), "error": str(err)})
        if as_json:
            print_json(doc)
        else:
            width = max((len(e["name"]) for e in doc["profiles"]), default=0)   # names of any length
            for entry in doc["profiles"]:
                echo(f"{entry['name']:<{width}}  {entry['source']}")
            for bad in doc["invalid"]:
                where = "" if bad["path"] in bad["error"] else f" ({bad['path']})"
                echo(f"warning: profile {bad['name']} is not usable{where}: {bad['error']}", err=True)
        return
    prof = load_profile(Path(name) if name.endswith(".toml") else name)
    flat = prof.flat()
    if as_json:
        print_json({"name": prof.name, "source": prof.source, "constants": flat})
        return
    echo(f"# {prof.name}: {prof.source}")
    for key, value in flat.items():
        if key != "name":
            echo(f"{key} = {value!r}")


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
        echo(f"{pa.name} and {pb.name} hold the same constants")
    for key, (va, vb) in diff.items():
        echo(f"{key}: {va!r} -> {vb!r}")


def register(app: typer.Typer) -> None:
    app.command("search")(search)
    app.add_typer(profiles_app, name="profiles")
