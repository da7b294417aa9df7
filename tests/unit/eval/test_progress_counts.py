"""A first index build and its embedding are counted, not only announced (issue 34.3): the
CLI's progress gets (done, total) through ``memo_eval.run.counter``."""
from __future__ import annotations

from memo_eval import cli as eval_cli
from memo_eval.run import counter


def test_counter_opens_a_count_on_the_first_known_total_and_ticks_the_difference():
    opened: list[tuple[int, str]] = []
    ticks: list[int] = []

    def tick_factory(total, unit="searches"):
        opened.append((total, unit))
        return ticks.append

    progress = counter(tick_factory, "records")
    assert progress is not None
    progress(250, 0)                 # a count with no total yet (a synthetic set): nothing opens
    assert opened == []
    progress(10, 40)
    progress(30, 40)
    progress(40, 40)
    assert opened == [(40, "records")]
    assert ticks == [10, 20, 10]
    assert counter(None, "records") is None


def test_plain_progress_lines_name_the_unit(capsys):
    with eval_cli._plain_progress(every=60) as (status, tick_factory):
        status("scifact: passage vectors")
        tick = tick_factory(5183, "passages embedded")
        tick(1024)
        status("scifact: replay")
        tick_factory(300)
    err = capsys.readouterr().err.splitlines()
    assert any(ln.startswith("memo eval: scifact: passage vectors: 0/5,183 passages embedded (") for ln in err), err
    assert any(ln.startswith("memo eval: scifact: replay: 0/300 searches (") for ln in err), err


def test_plain_progress_says_the_last_count_of_a_short_stage(capsys):
    """A stage shorter than PLAIN_PROGRESS_EVERY showed only its 0/N line, as if nothing was
    done: a count that completes, or whose stage ends first, gets a line with its count."""
    with eval_cli._plain_progress(every=60) as (status, tick_factory):
        status("index")
        tick = tick_factory(300, "records")
        tick(250)
        tick(50)                        # complete: said at once
        status("passage vectors")
        tick = tick_factory(389, "passages embedded")
        tick(100)                       # the stage ends before its count completes
        status("replay")
        tick = tick_factory(40)
        for _ in range(40):
            tick(1)
    err = [ln.rsplit(" (", 1)[0] for ln in capsys.readouterr().err.splitlines()]
    assert err == ["memo eval: started", "memo eval: index...", "memo eval: index: 0/300 records",
                   "memo eval: index: 300/300 records", "memo eval: passage vectors...",
                   "memo eval: passage vectors: 0/389 passages embedded",
                   "memo eval: passage vectors: 100/389 passages embedded", "memo eval: replay...",
                   "memo eval: replay: 0/40 searches", "memo eval: replay: 40/40 searches", "memo eval: done"], err


def test_every_eval_subcommand_json_help_names_docs_eval_md():
    """The eval documents are described in docs/eval.md; the help pointed at docs/cli-json.md,
    which only sends readers on there."""
    import typer

    group = typer.main.get_command(eval_cli.app)
    helps = {name: [p.help for p in cmd.params if "--json" in getattr(p, "opts", ())]
             for name, cmd in group.commands.items()}      # type: ignore[attr-defined]
    assert set(helps) >= {"run", "suite", "compare", "list", "report", "tune", "regress", "fetch", "cache"}
    for name, (text,) in helps.items():
        assert "docs/eval.md" in text and "cli-json" not in text, (name, text)
