"""``memo fact add / list / get / supersede / forget``: a thin skin over memo.ops.facts.

Each command parses, calls one library function and prints (``--json``: one JSON document,
schemas in docs/cli-json.md; errors: one line / a JSON error document and the error's
exit code).
"""

from __future__ import annotations

from typing import Annotated

import typer

from memo.cli.common import DbOption, JsonOption, echo, handle_errors, print_json, states_of
from memo.ops import facts as fops
from memo.ops.paging import fetch_page
from memo.store.db import open_db
from memo.stored import Fact, FactDraft

EvidenceOpt = Annotated[list[str] | None, typer.Option(
    "--evidence", "-e", help="Evidence: a passage id '<record>:<n>', a record id (all its passages) or a "
                             "record/passage ext_id (repeat for several).")]
NamespaceOpt = Annotated[str, typer.Option("--namespace", "-n", help="Namespace of the fact.")]
YesOpt = Annotated[bool, typer.Option("--yes", "-y", help="Confirm forgetting more than one fact.")]
SubjectOpt = Annotated[str | None, typer.Option("--subject", help="Subject (optional).")]
PredicateOpt = Annotated[str | None, typer.Option("--predicate", help="Predicate (optional).")]
ObjectOpt = Annotated[str | None, typer.Option("--object", help="Object (optional).")]
EventDateOpt = Annotated[str | None, typer.Option("--event-date", help="When it happened (ISO-8601).")]
_OPTION_OF = {"object": "--object", "event_at": "--event-date"}   # a report's field -> this CLI's option

fact_app = typer.Typer(name="fact", help="Facts: short statements that vote for their evidence passages in search.",
                       no_args_is_help=True)


def _show(f: Fact) -> None:
    echo(f"{f.id}  [{f.namespace}]  {f.text}")
    for label, value in (("subject", f.subject), ("predicate", f.predicate), ("object", f.object),
                         ("event", f.event_at), ("recorded", f.recorded_at), ("superseded", f.superseded_at),
                         ("by", f.superseded_by), ("forgotten", f.forgotten_at), ("author", f.author),
                         ("source", f.source)):
        if value:
            echo(f"  {label:<11}{value}")
    for e in f.evidence:
        state = "" if e.live else "  (not live)"
        echo(f"  evidence   {e.passage_id}{state}: {e.text[:100]}")


@fact_app.command("add")
@handle_errors
def add(text: Annotated[str, typer.Argument(help="The fact, one statement.")], evidence: EvidenceOpt = None,
        namespace: NamespaceOpt = "default",
        subject: SubjectOpt = None, predicate: PredicateOpt = None, object_: ObjectOpt = None,
        event_date: EventDateOpt = None,
        trust: Annotated[float, typer.Option("--trust", help="How far to trust it, 0..1.")] = 1.0,
        author: Annotated[str | None, typer.Option("--author", help="Who or what wrote it.")] = None,
        source: Annotated[str | None, typer.Option("--source", help="Where it came from.")] = None,
        db: DbOption = None, as_json: JsonOption = False) -> None:
    """Add a fact tied to its evidence passages (all in one transaction)."""
    # create=False: a fact cites passages, so it can never be added to a new, empty database.
    report = fops.add_fact(open_db(db, create=False), FactDraft(
        text=text, evidence=tuple(evidence or ()), namespace=namespace, subject=subject, predicate=predicate,
        object=object_, event_at=event_date, trust=trust, author=author, source=source))
    if as_json:
        print_json(report)
        return
    echo(f"{report.status} {report.fact_id} (evidence {', '.join(report.evidence)})")
    if report.near_duplicate_of is not None:
        echo(f"note: {report.note}", err=True)
    if report.status == "added" and not report.embedded:
        echo("note: saved; its vector is queued for embedding; `memo backfill` embeds it", err=True)


@fact_app.command("list")
@handle_errors
def list_(namespace: Annotated[list[str] | None, typer.Option("--namespace", "-n", help="Namespace (repeat).")] = None,
          evidence: Annotated[str | None, typer.Option("--evidence", help="Only facts citing this passage or record id.")] = None,
          all_: Annotated[bool, typer.Option("--all", help="Include superseded and forgotten facts.")] = False,
          limit: Annotated[int, typer.Option("--limit", help="At most this many.")] = 50,
          offset: Annotated[int, typer.Option("--offset", help="Skip this many (the next page: --offset N).")] = 0,
          db: DbOption = None, as_json: JsonOption = False) -> None:
    """List facts, newest first (live only unless --all)."""
    conn = open_db(db, create=False)
    facts, next_offset = fetch_page(
        lambda n: fops.list_facts(conn, namespaces=tuple(namespace or ()), evidence=evidence,
                                  include_forgotten=all_, include_superseded=all_, limit=n, offset=offset),
        limit, offset)
    if as_json:
        print_json({"facts": facts, "count": len(facts), "next_offset": next_offset})
        return
    for f in facts:
        states = states_of(f.superseded_at, f.forgotten_at)
        flags = f" ({states})" if states else ""      # both when both: --all shows every fact
        echo(f"{f.id}  [{f.namespace}]  {f.text[:100]}{flags}  <- {', '.join(e.passage_id for e in f.evidence)}")
    if next_offset is not None:
        echo(f"-- facts {offset + 1:,}-{next_offset:,} shown, more exist: --offset {next_offset} "
             f"for the next page, or a larger --limit")
    elif not facts:
        # as `memo list`: an empty page says so, and which facts it left out
        echo(f"no facts past --offset {offset}" if offset else
             "no facts match these filters" if namespace or evidence else
             "no facts" if all_ else "no live facts (--all lists the superseded and forgotten ones)")


@fact_app.command("get")
@handle_errors
def get(fact_id: Annotated[str, typer.Argument(help="Fact id.")], db: DbOption = None,
        as_json: JsonOption = False) -> None:
    """Show one fact with its evidence passages."""
    fact = fops.get_fact(open_db(db, create=False), fact_id)
    if as_json:
        print_json(fact)
    else:
        _show(fact)


@fact_app.command("supersede")
@handle_errors
def supersede(fact_id: Annotated[str, typer.Argument(help="The fact to replace.")],
              text: Annotated[str, typer.Argument(help="The new wording.")], evidence: EvidenceOpt = None,
              subject: SubjectOpt = None, predicate: PredicateOpt = None, object_: ObjectOpt = None,
              event_date: EventDateOpt = None,
              db: DbOption = None, as_json: JsonOption = False) -> None:
    """Write a new version of a fact; the old one stays for as_of.  Fields not given are
    copied, except the object and event date when the new text no longer names the old object."""
    report = fops.supersede_fact(open_db(db, create=False), fact_id, text, evidence=tuple(evidence or ()),
                                 subject=subject, predicate=predicate, object=object_, event_at=event_date)
    if as_json:
        print_json(report)
        return
    echo(f"superseded {report.old_id} by {report.new_id}")
    if report.dropped:
        echo(f"note: not carried over from the old version (its text no longer names them): "
             f"{', '.join(_OPTION_OF[f] for f in report.dropped)}; give them to keep them", err=True)
    if report.stale_evidence:
        every = len(report.stale_evidence) == len(report.evidence)
        echo(f"note: {'all its' if every else str(len(report.stale_evidence))} evidence passage(s) "
             f"{'are' if every else 'of it are'} in no current record ({', '.join(report.stale_evidence[:5])}"
             f"{' …' if len(report.stale_evidence) > 5 else ''}); give --evidence from the current version", err=True)


@fact_app.command("forget")
@handle_errors
def forget(fact_ids: Annotated[list[str], typer.Argument(help="Fact ids.")], yes: YesOpt = False,
           db: DbOption = None, as_json: JsonOption = False) -> None:
    """Hide facts from search and list (soft delete; `memo purge` removes them for good)."""
    report = fops.forget_facts(open_db(db, create=False), fact_ids, confirm=yes)
    if as_json:
        print_json(report)
    else:
        echo(f"forgot {len(report.forgotten)} fact(s)"
                   + (f"; {len(report.already_forgotten)} were already forgotten" if report.already_forgotten else ""))


def register(app: typer.Typer) -> None:
    app.add_typer(fact_app, name="fact")
