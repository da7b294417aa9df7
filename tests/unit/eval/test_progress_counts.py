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
