"""The semantic arm's embedded text: the query without the common entities it names
(``entities.strip_common``), and the trace saying so."""

from __future__ import annotations

import numpy as np
import pytest
from retrieve_helpers import FakeSemantic

from memo.profile import load_profile
from memo.retrieve import SearchRequest, search
from memo.retrieve.arms.shared import strip_spans, written_as_name
from memo.store.connect import write_tx
from memo.store.records import insert_record
from memo.stored import PassageDraft, RecordDraft


@pytest.mark.parametrize(("query", "spans", "out"), [
    ("What are Nate's favorite desserts?", ["nate"], "What are favorite desserts?"),
    ("what did caroline paint", ["caroline"], "what did paint"),
    ("When did Caroline and Melanie meet?", ["caroline", "melanie"], "When did and meet?"),
    ("Where does Jon Snow live?", ["jon snow"], "Where does live?"),
    ("Natasha and Nate", ["nate"], "Natasha and"),              # whole words only
    ("Nate’s dog", ["nate"], "dog"),                           # typographic apostrophe
    ("no names here", ["nate"], "no names here"),
])
def test_strip_spans(query, spans, out):
    assert strip_spans(query, spans) == out


class Recording(FakeSemantic):
    def __init__(self) -> None:
        super().__init__({})
        self.texts: list[str] = []

    def embed_query(self, text: str) -> np.ndarray:
        self.texts.append(text)
        return np.zeros(384, dtype=np.float32)


@pytest.fixture
def chat(conn):
    # 30 turns by two speakers: each is in half the passages, so both are common.
    turns = [("Nate" if i % 2 else "Joanna", f"turn {i} about desserts and games") for i in range(30)]
    draft = RecordDraft(body="\n".join(f"{s}: {t}" for s, t in turns), kind="conversation", namespace="chat")
    with write_tx(conn):
        insert_record(conn, draft, tuple(PassageDraft(text=t, speaker=s) for s, t in turns))
    return conn


def _semantic(conn, query, profile):
    svc = Recording()
    res = search(conn, SearchRequest(query, mode="auto", response_format="explain"), profile,
                 {"semantic": svc})
    arm = next(a for a in res.trace.arms if a.name == "semantic")
    return svc.texts, arm.reason


def test_common_names_are_left_out_of_the_embedded_query_and_the_trace_says_so(chat):
    profile = load_profile("zscore")
    texts, reason = _semantic(chat, "What are Nate's favorite desserts?", profile)
    # the text ranked by, then the query as typed (abstention's similarity evidence)
    assert texts == ["What are favorite desserts?", "What are Nate's favorite desserts?"]
    assert reason.endswith("embeds the query without Nate (common in scope)")
    # off: embedded as typed
    texts, reason = _semantic(chat, "What are Nate's favorite desserts?",
                              profile.with_overrides({"entities.strip_common": False}))
    assert texts == ["What are Nate's favorite desserts?"] and "without" not in reason
    # nothing but the name: embedded as typed
    texts, _ = _semantic(chat, "Nate", profile)
    assert texts == ["Nate"]


def test_a_common_name_written_as_a_word_stays(chat):
    """Issue 29: "git" in a question over git's release notes is a word that says which
    passages answer, although the corpus holds "GIT" as a common name; only a name the
    query writes capitalised is left out."""
    texts, reason = _semantic(chat, "what are nate's favorite desserts?", load_profile("zscore"))
    assert texts == ["what are nate's favorite desserts?"] and "without" not in reason


@pytest.mark.parametrize(("query", "span", "named"), [
    ("What did Caroline paint?", "caroline", True), ("make git blame skip", "git", False),
    ("Jon Snow said", "jon snow", True), ("what is jon snow's dog", "jon snow", False), ("no", "", False)])
def test_written_as_name(query, span, named):
    assert written_as_name(query, span) is named


def test_a_name_that_is_not_common_stays(conn):
    # Ana speaks once among 30 turns: a distinctive name, kept in the embedded text.
    turns = [("Ben", f"turn {i} about the garden") for i in range(29)] + [("Ana", "my tomatoes are red")]
    draft = RecordDraft(body="\n".join(t for _, t in turns), kind="conversation", namespace="chat")
    with write_tx(conn):
        insert_record(conn, draft, tuple(PassageDraft(text=t, speaker=s) for s, t in turns))
    texts, reason = _semantic(conn, "What did Ana and Ben plant?", load_profile("zscore"))
    assert texts == ["What did Ana and plant?", "What did Ana and Ben plant?"] and reason.endswith("without Ben (common in scope)")


def test_abstention_judges_similarity_on_the_query_as_typed():
    from memo.retrieve.abstention import abstain, relevance
    from memo.retrieve.arms.semantic import TypedVote
    from memo.retrieve.types import Candidate, Evidence

    stripped_only = Evidence(1, 0.30, 1.0)                      # below the floor 0.39
    with_typed = Evidence(1, 0.30, 1.0, (TypedVote(0.45),))      # the typed query's cosine is above it
    cands = [Candidate(1, {"semantic": stripped_only}, 1.0), Candidate(2, {"semantic": with_typed}, 1.0)]
    # relevance is the best raw cosine the passage has, typed or stripped (issue 27.5)
    assert relevance(cands[0]) == 0.30 and relevance(cands[1]) == 0.45
    assert relevance(Candidate(3, {"semantic": Evidence(1, 0.50, 1.0, (TypedVote(0.45),))}, 1.0)) == 0.50
    assert relevance(Candidate(4, {"keyword": Evidence(1, 7.0, 1.0)}, 1.0)) is None
    kept, dropped = abstain(cands, 0.39)
    assert [c.pk for c in kept] == [2] and dropped == [1]


def test_profile_rejects_a_non_boolean():
    from memo.errors import ProfileError

    with pytest.raises(ProfileError, match="true or false"):
        load_profile("rrf").with_overrides({"entities.strip_common": 1})
