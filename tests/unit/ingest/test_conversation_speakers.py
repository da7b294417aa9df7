"""Which labels before a colon are speakers (memo.ingest.split_text._speakers): a line of
prose with a colon became a turn by a speaker named "The plan was simple"."""

from memo.ingest.split_text import split_conversation


def _turns(text: str) -> list[tuple[str | None, str]]:
    return [(p.speaker, p.text) for p in split_conversation(text)]


def test_prose_with_a_colon_continues_the_turn():
    got = _turns("2023-07-01\nCaroline: I have a plan.\nThe plan was simple: go to Paris and eat.\n"
                 "Note to self: buy bread\nMelanie: Sounds good!\n")
    assert got == [("Caroline", "I have a plan.\nThe plan was simple: go to Paris and eat.\nNote to self: buy bread"),
                   ("Melanie", "Sounds good!")]


def test_names_roles_and_repeated_labels_are_speakers():
    got = _turns("user: hi\nassistant: hello\nDr. Jane Smith: a word\nQ: why?\nA: because\n"
                 "team lead: first\nteam lead: second\n")
    assert [s for s, _ in got] == ["user", "assistant", "Dr. Jane Smith", "Q", "A", "team lead", "team lead"]


def test_a_first_line_of_prose_is_a_turn_without_speaker():
    assert _turns("The agenda for today: budget\nAnn: ok\n") == [(None, "The agenda for today: budget"), ("Ann", "ok")]
