"""Profiles: loading, validation (file + key named), overrides, flat(), diff."""

from __future__ import annotations

from pathlib import Path

import pytest

from memo.errors import ProfileError
from memo.profile import Profile, diff_profiles, load_profile, profile_names

REPO_PROFILES = Path(__file__).resolve().parents[2] / "profiles"


def test_seed_profiles_are_base_and_the_default_is_an_overlay_of_extras():
    """rrf is base.toml unchanged, minmax changes only the fusion (the seed as written, every
    extra off); the default (zscore) changes the fusion and turns extras on, nothing else."""
    from memo.profile_keys import EXTRAS, KEYS

    base, rrf, minmax, zscore = (load_profile(n) for n in ("base", "rrf", "minmax", "zscore"))
    assert diff_profiles(base, rrf) == {"name": ("base", "rrf")}
    assert diff_profiles(rrf, minmax) == {"name": ("rrf", "minmax"), "fusion.method": ("rrf", "minmax")}
    assert rrf.extras_on() == minmax.extras_on() == ()
    extra_keys = {k.name for k in KEYS if k.extra}
    changed = set(diff_profiles(minmax, zscore)) - {"name", "fusion.method"}
    assert changed and changed <= extra_keys
    assert set(zscore.extras_on()) <= set(EXTRAS)
    # each extra switched off alone leaves the others on
    for extra in zscore.extras_on():
        off = zscore.without_extra(extra)
        assert set(off.extras_on()) == set(zscore.extras_on()) - {extra}


def test_an_overlay_lists_only_what_it_changes_and_older_files_still_load(tmp_path):
    overlay = _write(tmp_path, 'extends = "minmax"\n[fusion]\nk = 20\n')
    p = load_profile(str(overlay))
    assert (p.fusion.method, p.fusion.k, p.extends) == ("minmax", 20, ("minmax", "base"))
    # a file without 'extends' overlays base: an older profile that lacks newer keys loads
    old = _write(tmp_path, "[fusion]\nmethod = \"minmax\"\nk = 60\n[weights]\nsemantic = 0.7\n", "old.toml")
    q = load_profile(str(old))
    assert q.weights["semantic"] == 0.7 and q.weights["keyword"] == 0.5 and q.context.boost == 0.0
    # older key names are read as their new names; retired keys at their neutral value are accepted
    legacy = _write(tmp_path, "[retrieve]\nkeyword_index = \"fts5\"\n[vectors]\nsidecar_min = 7\n"
                              "[fact]\nvote = \"best\"\nspread = 0.0\n", "legacy.toml")
    r = load_profile(str(legacy))
    assert (r.index.keyword, r.index.sidecar_min) == ("fts5", 7)
    with pytest.raises(ProfileError, match="fact.spread.*removed"):
        load_profile(str(_write(tmp_path, "[fact]\nspread = 0.5\n", "spread.toml")))
    # a cycle and a missing parent are named
    (tmp_path / "a.toml").write_text('extends = "./b.toml"\n', encoding="utf-8")
    (tmp_path / "b.toml").write_text('extends = "./a.toml"\n', encoding="utf-8")
    with pytest.raises(ProfileError, match="cycle"):
        load_profile(str(tmp_path / "a.toml"))
    with pytest.raises(ProfileError, match="no profile named"):
        load_profile(str(_write(tmp_path, 'extends = "nosuch"\n', "orphan.toml")))


def test_every_key_is_in_base_and_in_the_table_once():
    from memo.profile_keys import KEYS, RENAMED, RETIRED

    names = [k.name for k in KEYS]
    assert len(names) == len(set(names))
    assert not set(RENAMED) & set(names) and not set(RETIRED) & set(names)
    import tomllib
    base = tomllib.loads((REPO_PROFILES / "base.toml").read_text(encoding="utf-8"))
    in_file = {f"{s}.{f}" for s, table in base.items() if s not in ("weights", "models") for f in table}
    assert in_file == set(names)
    for shipped in REPO_PROFILES.glob("*.toml"):      # overlays name only keys of the table
        if shipped.stem != "base":
            load_profile(str(shipped))


def test_docs_profiles_md_is_generated_from_the_table():
    from memo.profile_docs import render_keys

    text = (REPO_PROFILES.parent / "docs" / "profiles.md").read_text(encoding="utf-8")
    assert render_keys() in text, "docs/profiles.md is stale: run python -m memo.profile_docs --write"


def test_shipped_profiles_load_with_the_seed_constants():
    assert {"rrf", "minmax"} <= set(profile_names())
    p = load_profile("rrf")
    assert isinstance(p, Profile) and p.name == "rrf" and p.fusion.method == "rrf"
    assert p.retrieve.fetch_depth == 100 and p.fusion.k == 60
    assert p.retrieve.keyword_section_weight == 1.0          # unweighted bm25, as before the key
    assert dict(p.weights) == {"semantic": 0.5, "keyword": 0.5, "exact": 0.3, "fact": 0.4, "entity": 0.4,
                               "graph": 0.5}
    assert (p.recency.floor, p.recency.half_life_days, p.recency.aging_kinds) == (0.8, 90.0, ("note", "conversation"))
    assert (p.cutoff.min_results, p.cutoff.gap) == (3, 0.5)
    assert (p.limit.default, p.limit.max) == (10, 100)
    g = p.models["granite-embedding-small-english-r2"]
    assert (g.semantic_floor, g.weak, g.moderate, g.strong) == (0.72, 0.72, 0.80, 0.88)
    m = p.models["all-minilm-l6-v2-int8"]
    assert (m.semantic_floor, m.weak, m.moderate, m.strong) == (0.39, 0.36, 0.36, 0.61)
    assert load_profile("minmax").fusion.method == "minmax"
    assert load_profile(REPO_PROFILES / "rrf.toml") == p


def test_bands():
    m = load_profile("rrf").models["granite-embedding-small-english-r2"]
    assert [m.band(x) for x in (0.9, 0.88, 0.85, 0.75, 0.6, None)] == \
        ["strong", "strong", "moderate", "weak", "below", None]


def _write(tmp_path: Path, text: str, name: str = "custom.toml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


BASE = (REPO_PROFILES / "base.toml").read_text(encoding="utf-8")


@pytest.mark.parametrize("edit, key", [
    (lambda s: s.replace("k = 60", "k = 60\nkk = 1"), "fusion.kk"),
    (lambda s: 'extends = 3\n' + s, "extends"),
    (lambda s: s + "\n[extra]\nx = 1\n", "extra"),
    (lambda s: s.replace("k = 60", "k = 0"), "fusion.k"),
    (lambda s: s.replace("k = 60", 'k = "sixty"'), "fusion.k"),
    (lambda s: s.replace('method = "rrf"', 'method = "borda"'), "fusion.method"),
    (lambda s: s.replace("gap = 0.5", "gap = 0.0"), "cutoff.gap"),
    (lambda s: s.replace("floor = 0.8", "floor = 1.5"), "recency.floor"),
    (lambda s: s.replace('aging_kinds = ["note", "conversation"]', 'aging_kinds = ["blog"]'), "recency.aging_kinds"),
    (lambda s: s.replace("graph = 0.5", "graph = 0.5\nrerank = 1.0"), "weights.rerank"),
    (lambda s: s.replace("strong = 0.88", "strong = 0.70"), "models.granite-embedding-small-english-r2"),
    (lambda s: s.replace("strong = 0.88", "strong = 0.88\nstrongest = 0.9"), "models.granite-embedding-small-english-r2.strongest"),
    (lambda s: s.replace("default = 10", "default = 500"), "limit.default"),
    (lambda s: s.replace("keyword_section_weight = 1.0", "keyword_section_weight = 0.0"),
     "retrieve.keyword_section_weight"),
    (lambda s: s.replace("keyword_section_weight = 1.0", "keyword_section_weight = 101.0"),
     "retrieve.keyword_section_weight"),
])
def test_bad_files_name_the_file_and_the_key(tmp_path, edit, key):
    path = _write(tmp_path, edit(BASE))
    with pytest.raises(ProfileError) as err:
        load_profile(str(path))
    assert str(path.resolve()) in str(err.value) and f"'{key}" in str(err.value)


def test_invalid_toml_and_missing_profiles(tmp_path):
    with pytest.raises(ProfileError, match="not valid TOML"):
        load_profile(str(_write(tmp_path, "[fusion\n")))
    with pytest.raises(ProfileError, match="no profile named"):
        load_profile("nope")
    with pytest.raises(ProfileError):
        load_profile("../etc/passwd")


def test_with_overrides_validates_and_returns_a_new_profile():
    p = load_profile("rrf")
    q = p.with_overrides({"fusion.k": 20, "weights.semantic": 0.3, "recency.aging_kinds": "note",
                          "models.all-minilm-l6-v2-int8.strong": 0.7, "models.new-model.semantic_floor": 0.1,
                          "models.new-model.weak": 0.2, "models.new-model.moderate": 0.3,
                          "models.new-model.strong": 0.4})
    assert q.fusion.k == 20 and q.weights["semantic"] == 0.3 and q.recency.aging_kinds == ("note",)
    assert q.models["new-model"].strong == 0.4 and p.fusion.k == 60
    for bad in ({"fusion.kk": 1}, {"fusion.k": -1}, {"weights.bogus": 1.0}, {"nosection": 1},
                {"models.new-model.weak": 0.1}):
        with pytest.raises(ProfileError):
            p.with_overrides(bad)


def test_flat_and_diff():
    a, b = load_profile("rrf"), load_profile("minmax")
    flat = a.flat()
    assert flat["fusion.k"] == 60 and flat["weights.exact"] == 0.3
    assert flat["recency.aging_kinds"] == "note,conversation"
    assert flat["models.granite-embedding-small-english-r2.strong"] == 0.88
    assert all(isinstance(v, str | int | float) for v in flat.values())
    assert diff_profiles(a, b) == {"name": ("rrf", "minmax"), "fusion.method": ("rrf", "minmax")}
    # flat() round-trips through with_overrides
    again = a.with_overrides({k: v for k, v in flat.items() if k != "name"})
    assert again.flat() == flat


def test_user_profile_folder_adds_and_shadows_names(tmp_path, monkeypatch):
    """Names resolve in the user's folder first ($MEMO_PROFILES_DIR, else
    <user config dir>/memo/profiles), then in the profiles shipped inside the package."""
    # default: the XDG config dir the autouse fixture points at
    import os

    from memo.profile import profile_dirs, shipped_profile_dir, user_profile_dir
    assert user_profile_dir() == Path(os.environ["XDG_CONFIG_HOME"]) / "memo" / "profiles"
    assert (shipped_profile_dir() / "rrf.toml").is_file()     # importlib.resources: memo/profiles
    mine = tmp_path / "profiles"
    mine.mkdir()
    monkeypatch.setenv("MEMO_PROFILES_DIR", str(mine))
    assert profile_dirs()[0] == mine
    text = 'extends = "base"\n[fusion]\nk = 7\n'
    (mine / "fast.toml").write_text(text, encoding="utf-8")
    assert "fast" in profile_names() and load_profile("fast").fusion.k == 7
    (mine / "rrf.toml").write_text(text, encoding="utf-8")          # a user's rrf wins over the shipped one
    assert load_profile("rrf").fusion.k == 7 and load_profile("rrf").source == str((mine / "rrf.toml").resolve())
    with pytest.raises(ProfileError) as err:
        load_profile("nope")
    assert str(mine) in err.value.hint


def test_the_default_models_bands_are_the_same_in_the_profile_and_the_registry():
    """The pipeline reads the profile's bands, `memo models` and the bands bench the
    registry's (memo/embed/models.toml): a recalibration must change both (issue 32)."""
    from memo.embed.registry import load_registry

    spec = load_registry().get(None)
    m = load_profile("zscore").models[spec.id]
    assert (m.semantic_floor, m.weak, m.moderate, m.strong) == (
        spec.bands.semantic_floor, spec.bands.weak, spec.bands.moderate, spec.bands.strong)


def test_a_profile_section_is_frozen_equal_by_value_hashable_and_copyable() -> None:
    """Sections are made by type() from the key table (no dataclass code generation at a
    process's first load, issue 31.2); they keep what the frozen dataclasses gave."""
    import copy
    import dataclasses

    from memo.profile import load_profile

    a, b = load_profile("rrf"), load_profile("minmax")
    assert a.retrieve == b.retrieve and hash(a.retrieve) == hash(b.retrieve)
    assert a.fusion != b.fusion and a.fusion != a.retrieve
    assert repr(a.fusion).startswith("FusionCfg(method='rrf', k=")
    with pytest.raises(dataclasses.FrozenInstanceError):
        a.fusion.k = 1                      # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        del a.fusion.k
    with pytest.raises(AttributeError):
        a.fusion.extra = 1                  # type: ignore[attr-defined]
    assert copy.copy(a.fusion) == a.fusion and copy.deepcopy(a.fusion) == a.fusion
    cls = type(a.fusion)
    with pytest.raises(TypeError, match="missing"):
        cls(method="rrf")
    with pytest.raises(TypeError, match="unknown"):
        cls(**{f: getattr(a.fusion, f) for f in cls._fields}, bogus=1)
    assert a.with_overrides({"fusion.k": 7}).fusion.k == 7 and a.fusion.k != 7


def test_a_bad_key_in_an_extended_file_names_that_file(tmp_path, monkeypatch):
    """child.toml extends bad.toml, which holds the bad value: the error names bad.toml (and
    that child's 'extends' led there), not child.toml, which holds no bad key."""
    mine = tmp_path / "profiles"
    mine.mkdir()
    monkeypatch.setenv("MEMO_PROFILES_DIR", str(mine))
    (mine / "bad.toml").write_text("[fusion]\nk = 0\n", encoding="utf-8")
    (mine / "child.toml").write_text('extends = "bad"\n[limit]\ndefault = 5\n', encoding="utf-8")
    (mine / "grandchild.toml").write_text('extends = "child"\n', encoding="utf-8")
    bad = str((mine / "bad.toml").resolve())
    for name, via in (("child", "child.toml"), ("grandchild", "grandchild.toml -> child.toml")):
        with pytest.raises(ProfileError) as err:
            load_profile(name)
        msg = str(err.value)
        assert msg.startswith(f"{bad} (reached through 'extends' of {via}): key 'fusion.k'"), msg
    # a bad parent key the child overrides is no error (as before); a child's own bad key names it
    # (new files, not rewrites: a parsed file is cached by its mtime)
    (mine / "fixed.toml").write_text('extends = "bad"\n[fusion]\nk = 20\n', encoding="utf-8")
    assert load_profile("fixed").fusion.k == 20
    (mine / "own.toml").write_text('extends = "rrf"\n[fusion]\nk = 0\n', encoding="utf-8")
    with pytest.raises(ProfileError) as err:
        load_profile("own")
    assert str(err.value).startswith(f"{(mine / 'own.toml').resolve()}: key 'fusion.k'")
    # a cross-key rule broken by the parent (limit.default above limit.max) names the parent too
    (mine / "limits.toml").write_text("[limit]\ndefault = 40\nmax = 30\n", encoding="utf-8")
    (mine / "uses.toml").write_text('extends = "limits"\n[fusion]\nk = 20\n', encoding="utf-8")
    with pytest.raises(ProfileError, match=r"limits\.toml \(reached through 'extends' of uses\.toml\): "
                                           r"key 'limit.default'"):
        load_profile("uses")
