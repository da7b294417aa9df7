"""memo.cli.plumbing.visible / echo: control characters in what memo prints for people are
shown as escapes, on a terminal as in a pipe (docs/cli-json.md, "Errors")."""

from __future__ import annotations

import io

import pytest

from memo.cli import plumbing
from memo.cli.plumbing import echo, visible

HOSTILE = "invoice total \x1b[2J\x1b[H\x1b[8mhidden\x1b[0m and \x1b]0;pwned-title\x07 osc"


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_visible_escapes_c0_del_and_c1_but_keeps_newline_and_tab() -> None:
    assert visible("a\x1b[2Jb\x07c\x9b31md\x7fe\x00f\r g") == "a\\x1b[2Jb\\x07c\\x9b31md\\x7fe\\x00f\\x0d g"
    assert visible("line one\r\nline two\n\tindented") == "line one\nline two\n\tindented"
    assert visible("plain text, ünïcödé 検索") == "plain text, ünïcödé 検索"


@pytest.mark.parametrize("stream_cls", [Terminal, io.StringIO], ids=["terminal", "pipe"])
@pytest.mark.parametrize("err", [False, True], ids=["stdout", "stderr"])
def test_echo_never_writes_a_control_character(stream_cls: type[io.StringIO], err: bool,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    stream = stream_cls()
    monkeypatch.setattr(plumbing.sys, "stderr" if err else "stdout", stream)
    echo(HOSTILE, err=err)
    out = stream.getvalue()
    assert out == visible(HOSTILE) + "\n"
    assert not any(ord(c) < 32 and c != "\n" or 0x7F <= ord(c) <= 0x9F for c in out), repr(out)
    assert "\\x1b]0;pwned-title\\x07" in out


def test_the_import_bar_shows_a_file_name_as_text(monkeypatch: pytest.MonkeyPatch) -> None:
    """A file named like rich markup ("[/x].md") failed the import on a terminal
    (MarkupError); a control character in a name reached the terminal."""
    from rich.console import Console

    from memo.cli import store_cmds
    from memo.ops.importer import Progress

    out = io.StringIO()
    monkeypatch.setattr(store_cmds, "_err", Console(file=out, force_terminal=True, width=200))
    with store_cmds._progress_bar(True) as update:
        assert update is not None
        update(Progress(done=1, total=2, current="notes/[/x]\x1b]0;t\x07.md"))
    assert "[/x]\\x1b]0;t\\x07.md" in out.getvalue()
