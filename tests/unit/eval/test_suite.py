"""The suite's runs, its rule for the default and its table (memo_eval.suite)."""

from __future__ import annotations

from pathlib import Path

from memo.profile import load_profile
from memo_eval import suite as S


def test_every_domain_resolves_and_names_a_choose_and_a_report_split():
    ds = S.domains()
    names = [d.name for d in ds]
    assert len(names) == len(set(names))
    assert {"scifact", "locomo", "locomo-obs", "chats", "nodedocs", "relnotes", "codesearch", "codesearch-nl",
            "hotpotqa"} <= set(names)
    for d in ds:
        assert d.choose != d.report
        if "/" in d.dataset:
            assert Path(S.resolve_dataset(d.dataset)).exists(), d.dataset


def test_the_runs_are_the_seed_the_default_its_arms_and_each_extra_off():
    labelled = S.specs("zscore")
    labels = [label for label, _ in labelled]
    assert labels[:5] == ["zscore", "seed rrf", "seed minmax", "keyword arm", "semantic arm"]
    extras = load_profile("zscore").extras_on()
    assert labels[5:] == [f"- {e}" for e in extras]
    for (label, spec), extra in zip(labelled[5:], extras, strict=True):
        off = spec.load()
        assert extra not in off.extras_on() and set(off.extras_on()) == set(extras) - {extra}, label


def _result(rows):
    labels = list(dict.fromkeys(r["label"] for r in rows))
    return {"split": "report", "profile": labels[0], "labels": labels,
            "domains": list(dict.fromkeys(r["domain"] for r in rows)), "rows": rows, "seconds": 1.0}


def _row(domain, label, ndcg, p=None, delta=None):
    return {"domain": domain, "split": "test", "label": label, "ndcg_10": ndcg, "recall_10": ndcg, "n": 10,
            "p": p, "delta": delta}


def test_the_rule_keeps_an_extra_that_raises_the_macro_and_hurts_no_domain():
    rows = [_row("a", "zscore", 0.60), _row("b", "zscore", 0.50),
            _row("a", "- good", 0.55, 0.01, -0.05), _row("b", "- good", 0.50, 1.0, 0.0),
            _row("a", "- hurts", 0.55, 0.01, -0.05), _row("b", "- hurts", 0.53, 0.02, 0.03),
            _row("a", "- idle", 0.60, 1.0, 0.0), _row("b", "- idle", 0.50, 1.0, 0.0)]
    v = S.verdicts(_result(rows))
    assert v["good"]["keep"] and v["good"]["hurts"] == []
    assert not v["hurts"]["keep"] and v["hurts"]["hurts"] == ["b"]      # b is better without it
    assert not v["idle"]["keep"]                                        # no gain: off in the default
    table = S.render(_result(rows))
    assert table.startswith(S.BEGIN) and table.endswith(S.END)
    assert "| - hurts | 0.5500 / 0.5500 (p 0.01) | 0.5300 / 0.5300 (p 0.02) | 0.5400 |" in table
    assert "| hurts | +0.0100 | b | fails |" in table


def test_fusion_checks_hold_the_default_to_its_best_arm_and_the_better_seed():
    rows = [_row("a", "zscore", 0.60), _row("a", "seed rrf", 0.55), _row("a", "seed minmax", 0.58),
            _row("a", "keyword arm", 0.40), _row("a", "semantic arm", 0.604),
            _row("b", "zscore", 0.50), _row("b", "seed rrf", 0.45), _row("b", "seed minmax", 0.49),
            _row("b", "keyword arm", 0.30), _row("b", "semantic arm", 0.52),
            _row("c", "zscore", 0.50), _row("c", "seed rrf", 0.506), _row("c", "seed minmax", 0.40),
            _row("c", "keyword arm", 0.30), _row("c", "semantic arm", 0.40)]
    c = S.fusion_checks(_result(rows))
    assert c["a"]["holds"] and c["a"]["best_arm"] == "semantic arm"          # 0.004 below: inside the margin
    assert not c["b"]["holds"] and round(c["b"]["vs_best_arm"], 6) == -0.02  # below its semantic arm
    assert not c["c"]["holds"] and c["c"]["best_seed"] == "seed rrf"         # below the seed's rrf
    table = S.render(_result(rows))
    assert "| b | -0.0200 (semantic arm) | +0.0100 (seed minmax) | fails |" in table
    assert "| a | -0.0040 (semantic arm) | +0.0200 (seed minmax) | holds |" in table


def test_write_docs_replaces_the_table_between_the_markers(tmp_path):
    doc = tmp_path / "eval.md"
    doc.write_text(f"# x\n\n{S.BEGIN}\nold\n{S.END}\n\ntail\n", encoding="utf-8")
    S.write_docs(f"{S.BEGIN}\nnew\n{S.END}", doc)
    assert doc.read_text(encoding="utf-8") == f"# x\n\n{S.BEGIN}\nnew\n{S.END}\n\ntail\n"
