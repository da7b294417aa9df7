"""The namespace rule (``memo.text.namespaces``): a namespace that would print as terminal
escapes ("a\\x1bb"), reversed ("x\\u202ey"), with invisible characters or with whitespace
at an end cannot be written; everything that prints as itself can.  Before, any non-blank
string was stored, and ``memo stats`` / ``memo list`` showed names no one could type back."""

from __future__ import annotations

import unicodedata

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memo.errors import ValidationError
from memo.text.namespaces import check_namespace, namespace_problem
from tests.fast_examples import examples

BIDI = "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"
CONTROL = [chr(c) for c in (*range(0x20), *range(0x7F, 0xA0))]
# The characters refused anywhere in a namespace, by what the error calls them.
REFUSED = st.one_of(
    st.sampled_from(CONTROL),
    st.sampled_from(BIDI),
    st.characters(categories=("Cf",), exclude_characters="\u200c\u200d"),
    st.sampled_from("\u2028\u2029"),
)
# What people name collections with: letters and marks of any script, digits, punctuation,
# symbols (emoji), inner spaces, and the joiners some scripts spell with.
PRINTABLE = st.one_of(st.characters(categories=("L", "M", "N", "P", "S")), st.sampled_from(" \u00a0\u3000\u200c\u200d"))
GOOD = st.text(PRINTABLE, min_size=1, max_size=40).filter(lambda s: s == s.strip() and s.strip() != "")
SETTINGS = settings(max_examples=examples(300), deadline=None)


@pytest.mark.parametrize(("namespace", "message"), [
    ("a\x1bb", r"namespace 'a\x1bb' holds a control character U+001B at character 1"),
    ("a\tb", r"namespace 'a\tb' holds a control character U+0009 at character 1"),
    ("work\n", r"namespace 'work\n' holds a control character U+000A at character 4"),
    ("x\x9b31m", r"namespace 'x\x9b31m' holds a control character U+009B at character 1"),
    ("x\u202ey", r"namespace 'x\u202ey' holds a bidi control U+202E (RIGHT-TO-LEFT OVERRIDE) at character 1"),
    ("\u2066ops\u2069", r"namespace '\u2066ops\u2069' holds a bidi control U+2066 (LEFT-TO-RIGHT ISOLATE) "
                        "at character 0"),
    ("ops\u200e", r"namespace 'ops\u200e' holds a bidi control U+200E (LEFT-TO-RIGHT MARK) at character 3"),
    ("o\u200bps", r"namespace 'o\u200bps' holds an invisible format character U+200B (ZERO WIDTH SPACE) "
                  "at character 1"),
    ("ops\U000e0041", r"namespace 'ops\U000e0041' holds an invisible format character U+E0041 "
                      "(TAG LATIN CAPITAL LETTER A) at character 3"),
    ("a\u2028b", r"namespace 'a\u2028b' holds a line break U+2028 (LINE SEPARATOR) at character 1"),
    (" work", "namespace ' work' starts with whitespace"),
    ("work ", "namespace 'work ' ends with whitespace"),
    ("work\u00a0", r"namespace 'work\xa0' ends with whitespace"),
    ("", "namespace is empty"),
    ("   ", "namespace is empty"),
    (3, "namespace must be text, not int"),
])
def test_refused_with_the_character_named_as_an_escape(namespace: object, message: str) -> None:
    with pytest.raises(ValidationError) as err:
        check_namespace(namespace)
    assert str(err.value) == message
    assert err.value.exit_code == 2 and "letters, digits" in err.value.hint
    assert namespace_problem(namespace) == message


@pytest.mark.parametrize("namespace", ["default", "team notes", "locomo/conv-26", "ops.v2_prod", "Zürich",
                                       "東京", "مدیریت\u200cپروژه", "👩\u200d💻", "a" * 200])
def test_names_people_use_are_accepted(namespace: str) -> None:
    check_namespace(namespace)
    assert namespace_problem(namespace) is None


def test_a_long_namespace_is_cut_in_its_error() -> None:
    problem = namespace_problem("n" * 150 + "\x1b")
    assert problem == f"namespace '{'n' * 80}...' holds a control character U+001B at character 150"


@SETTINGS
@given(GOOD)
def test_any_printable_name_is_accepted(namespace: str) -> None:
    assert namespace_problem(namespace) is None


@SETTINGS
@given(st.text(PRINTABLE, max_size=20), REFUSED, st.text(PRINTABLE, max_size=20))
def test_a_refused_character_anywhere_is_named(before: str, bad: str, after: str) -> None:
    namespace = "x" + before + bad + after + "x"
    problem = namespace_problem(namespace)
    assert problem is not None
    first = next(i for i, ch in enumerate(namespace) if namespace_problem(f"x{ch}x") is not None)
    assert f"U+{ord(namespace[first]):04X}" in problem and f"at character {first}" in problem
    # the message itself prints as it is: no control or bidi character reaches a terminal
    assert problem.isprintable() and not set(problem) & set(BIDI), problem


@SETTINGS
@given(st.text(max_size=30))
def test_accepted_means_it_prints_as_itself(namespace: str) -> None:
    """Whatever is accepted has no character a terminal or a bidi algorithm acts on, and no
    whitespace at an end."""
    if namespace_problem(namespace) is not None:
        return
    assert namespace == namespace.strip() != ""
    for ch in namespace:
        assert unicodedata.category(ch) not in ("Cc", "Zl", "Zp"), repr(namespace)
        assert ch not in BIDI
        assert unicodedata.category(ch) != "Cf" or ch in "\u200c\u200d", repr(namespace)


def test_a_namespace_longer_than_the_cap_is_refused():
    """A 5,000-character namespace was stored and then named in every empty answer over MCP."""
    from memo.text.limits import MAX_NAMESPACE_CHARS

    assert namespace_problem("n" * MAX_NAMESPACE_CHARS) is None
    problem = namespace_problem("n" * 5000)
    assert problem is not None and "5,000 characters long, over 200" in problem and len(problem) < 200
