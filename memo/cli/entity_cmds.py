"""``memo entities list / show NAME``: a thin skin over memo.ops.entities (``--json``: one
JSON document, schemas in docs/cli-json.md)."""

from __future__ import annotations

from typing import Annotated

import typer

from memo.cli.common import DbOption, JsonOption, echo, handle_errors, print_json
from memo.ops import entities as eops
from memo.ops.paging import fetch_page
from memo.store.db import open_db

NamespaceOpt = Annotated[list[str] | None, typer.Option("--namespace", "-n", help="Only these namespaces (repeat).")]
LimitOpt = Annotated[int, typer.Option("--limit", help="At most this many rows.")]

entities_app = typer.Typer(name="entities", help="Entities named in passages (people, places, identifiers, "
                                                 "tags...): the entity and graph search arms use them.",
                           no_args_is_help=True)


@entities_app.command("list")
@handle_errors
def list_(namespace: NamespaceOpt = None,
          contains: Annotated[str | None, typer.Option("--contains", help="Only keys containing this text.")] = None,
          limit: LimitOpt = 50,
          offset: Annotated[int, typer.Option("--offset", help="Skip this many (the next page: --offset N).")] = 0,
          db: DbOption = None, as_json: JsonOption = False) -> None:
    """Entities, most mentioned first (live passages only)."""
    conn = open_db(db, write=False)
    rows, next_offset = fetch_page(
        lambda n: eops.list_entities(conn, namespaces=tuple(namespace or ()), contains=contains, limit=n,
                                     offset=offset), limit, offset)
    if as_json:
        print_json({"entities": rows, "next_offset": next_offset})
        return
    for e in rows:
        echo(f"{e.passages:>6}  {e.name}  ({e.kind})")
    if next_offset is not None:
        echo(f"-- entities {offset + 1:,}-{next_offset:,} shown, more exist: --offset {next_offset} "
             f"for the next page, or a larger --limit")
    elif not rows:
        echo(f"no entities past --offset {offset}" if offset else "no entities")


@entities_app.command("show")
@handle_errors
def show(name: Annotated[str, typer.Argument(help="Entity name or alias (case does not matter).")],
         namespace: NamespaceOpt = None, limit: LimitOpt = 50,
         db: DbOption = None, as_json: JsonOption = False) -> None:
    """One entity: the passages that mention it and the entities mentioned with it."""
    d = eops.show_entity(open_db(db, write=False), name, namespaces=tuple(namespace or ()), limit=limit)
    if as_json:
        print_json(d)
        return
    echo(f"{d.name}  ({d.kind}; key {d.key!r}; {d.passages} passages; aliases: {', '.join(d.aliases)})")
    for m in d.mentions:
        via = f"  via fact {m.via_fact}" if m.via_fact else ""
        echo(f"  {m.passage_id}  [{m.namespace}] x{m.count}{via}: {m.text[:100]}")
    if d.co_mentioned:
        echo("  mentioned with: " + ", ".join(f"{c.name} ({c.passages})" for c in d.co_mentioned))


def register(app: typer.Typer) -> None:
    app.add_typer(entities_app)
