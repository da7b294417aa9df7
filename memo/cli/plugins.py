"""Command groups that other distributions add to ``memo`` (issue 27.7).

memo's library never imports the evaluation harness (it sits above memo, see
tests/unit/test_layers.py).  The harness, the ``memo-kb-eval`` distribution (import package
``memo_eval``, folder eval/), declares its typer app under the entry-point group
``memo.cli_plugins``::

    [project.entry-points."memo.cli_plugins"]
    eval = "memo_eval.cli:app"

memo knows the slot (``SLOTS``: its name, its line in ``memo --help``, how to install what
fills it) and registers a placeholder command under that name.  Only when the command line
names the slot (``memo eval ...``) does ``MemoGroup.resolve_command`` look the entry point up
(``importlib.metadata``) and load it; every other command, ``memo --help`` included, neither
scans the metadata nor imports the harness.  When nothing provides the slot, the placeholder
answers any arguments (``--help`` too) with one line naming the install command and exits
with ``ExtraMissing``'s code (11).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import typer
from typer._click import Command

from memo.errors import ExtraMissing

if TYPE_CHECKING:
    from importlib.metadata import EntryPoint

ENTRY_POINT_GROUP = "memo.cli_plugins"


@dataclass(frozen=True)
class Slot:
    name: str
    help: str          # its line in `memo --help` (the plugin's own help once installed)
    what: str          # what fills it, in the one-line message
    provider: str      # the distribution that fills it
    install: str       # how to add it


SLOTS: dict[str, Slot] = {
    "eval": Slot(name="eval",
                 help="Evaluate search quality: replay labelled queries, compare, tune, regress.",
                 what="the evaluation harness", provider="memo-kb-eval", install='pip install "memo-kb[eval]"'),
}


def missing(slot: Slot, detail: str = "") -> ExtraMissing:
    more = f"; {detail}" if detail else ""
    return ExtraMissing(f"memo {slot.name} needs {slot.what} ({slot.provider}), not installed here{more}",
                        hint=slot.install)


def entry_points(**selection: str) -> Any:
    """``importlib.metadata.entry_points``, imported on first use: importlib.metadata costs a
    process tens of ms, which only ``memo eval`` pays."""
    from importlib.metadata import entry_points as installed

    return installed(**selection)


def find_entry_point(name: str) -> EntryPoint | None:
    """The installed entry point that fills slot ``name`` (the first, if several do)."""
    return next(iter(entry_points(group=ENTRY_POINT_GROUP, name=name)), None)


def load(name: str) -> Command | None:
    """The click command that fills slot ``name``, or None when nothing installed provides it.
    A provider that is installed but fails to import raises ``ExtraMissing`` (one line)."""
    ep = find_entry_point(name)
    if ep is None:
        return None
    try:
        obj: Any = ep.load()
    except ImportError as exc:
        raise missing(SLOTS[name], f"{ep.value} does not import: {exc}") from None
    return typer.main.get_command(obj) if isinstance(obj, typer.Typer) else obj


def register(app: typer.Typer) -> None:
    """A placeholder command per slot: its help line for ``memo --help``; run (the slot's
    provider not installed) it says how to install it, whatever the arguments."""
    for slot in SLOTS.values():
        app.command(slot.name, help=slot.help, add_help_option=False,
                    context_settings={"ignore_unknown_options": True, "allow_extra_args": True,
                                      "allow_interspersed_args": False})(_placeholder(slot))


def _placeholder(slot: Slot) -> Any:
    def placeholder() -> None:
        raise missing(slot)

    placeholder.__name__ = slot.name
    return placeholder
