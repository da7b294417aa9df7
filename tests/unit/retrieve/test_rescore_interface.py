"""Stage 4's one interface (issue 27.3): a new rescorer is one module plus its profile keys.

The toy rescorer below lifts passages whose text holds a digit.  Adding it touches only this
module (its class) and the key table (one ``Key``), monkeypatched in: the pipeline's
``RESCORERS``, why, the trace, the CLI line and explain pick it up without knowing its name.
"""

from __future__ import annotations

import dataclasses

import pytest
from retrieve_helpers import add, assert_why_reproduces_final

from memo import profile_keys
from memo.profile import load_profile
from memo.retrieve import SearchRequest, pipeline, search
from memo.retrieve.rescore import NOTHING, Rescored
from memo.retrieve.types import Factor


class Digits:
    """A toy extra: a passage whose section holds a digit scores x (1 + digits.boost)."""

    name = "digits"

    def rescore(self, cands, inp):
        boost = inp.profile.digits.boost
        if boost <= 0:
            return NOTHING
        given = {c.pk: Factor(self.name, 1.0 + boost, "has a digit")
                 for c in cands if any(ch.isdigit() for ch in inp.meta[c.pk].section)}
        return Rescored(given, ("digits",) if given else ())


@pytest.fixture
def toy(monkeypatch, tmp_path):
    key = profile_keys.Key("digits.boost", "float", "toy: a passage holding a digit scores x (1 + boost)",
                           0.0, 10.0, extra="digits")
    monkeypatch.setattr(profile_keys, "KEYS", (*profile_keys.KEYS, key))
    monkeypatch.setattr(profile_keys, "EXTRAS", {**profile_keys.EXTRAS, "digits": "toy"})
    monkeypatch.setattr(pipeline, "RESCORERS", (*pipeline.RESCORERS, Digits()))
    # base.toml gains the key (off; here a copy in the user's profile folder, which shadows the
    # shipped one) and an overlay turns it on
    from memo.profile import shipped_profile_dir

    shipped = (shipped_profile_dir() / "base.toml").read_text(encoding="utf-8")
    (tmp_path / "base.toml").write_text(shipped + "\n[digits]\nboost = 0.0\n", encoding="utf-8")
    (tmp_path / "toy.toml").write_text('extends = "base"\n[digits]\nboost = 1.0\n', encoding="utf-8")
    monkeypatch.setenv("MEMO_PROFILES_DIR", str(tmp_path))
    return load_profile("toy"), load_profile("base")


def test_a_toy_rescorer_needs_one_module_and_its_keys_and_explain_stays_exact(conn, toy):
    on, off = toy
    assert on.digits.boost == 1.0 and off.digits.boost == 0.0
    add(conn, "the backup runs nightly", kind="doc", section="Ops > backup")
    add(conn, "the backup runs at 2 am", kind="doc", section="Ops > backup v2")
    add(conn, "unrelated words here", kind="doc", section="Misc")
    request = SearchRequest("backup runs", mode="keyword", response_format="explain")
    lifted = search(conn, request, on.with_overrides({"cutoff.gap": 1.0}))
    plain = search(conn, request, off.with_overrides({"cutoff.gap": 1.0}))
    assert [r.why.factor("digits") for r in lifted.results] == [2.0, 1.0]
    assert lifted.results[0].section == "Ops > backup v2"
    assert lifted.trace.rescore == {"digits": ("digits",)}
    assert all(r.why.factor("digits") == 1.0 for r in plain.results) and "digits" not in plain.trace.rescore
    for r in (*lifted.results, *plain.results):
        assert_why_reproduces_final(r)
    # the profile machinery knows the extra: on in the overlay, switched off by name
    assert "digits" in on.extras_on() and on.without_extra("digits").digits.boost == 0.0
    # why serialises it like any factor (JSON for the CLI, MCP and the web UI)
    from memo.serialize import to_jsonable

    doc = to_jsonable(lifted.results[0].why)
    assert {"name": "digits", "value": 2.0, "label": "has a digit"} in doc["factors"]
    assert dataclasses.is_dataclass(lifted.results[0].why.factors[-1])
