"""Tags in one form (memo.text.tags): ``--tag '#person'`` finds what ``tags: [person]`` or an
inline ``#person`` stored, and a markdown note's inline tags are its tags (Obsidian's).
Before, inline tags were text only and ``--tag '#person'`` matched nothing."""

from __future__ import annotations

from pathlib import Path

import pytest

from memo import ops
from memo.errors import ValidationError
from memo.ingest.files import iter_files
from memo.ops.records import ListFilter
from memo.stored import RecordDraft
from memo.text.tags import MAX_INLINE_TAGS, inline_tags, tag_form

NOTE = """Marta Nowak, frontend engineer.
#person #team/frontend
See issue #123, C# code, http://example.com/#anchor and &#123;.
# A heading, not a tag
`#inline-code` is code.
```sh
#!/bin/sh
echo #fenced
```
Done #done. #café #a-b_c
"""


def test_inline_tags_as_obsidian_reads_them() -> None:
    assert inline_tags(NOTE) == ("person", "team/frontend", "done", "café", "a-b_c")


def test_inline_tags_are_capped() -> None:
    many = " ".join(f"#t{i}x" for i in range(MAX_INLINE_TAGS + 10))
    assert len(inline_tags(many)) == MAX_INLINE_TAGS


@pytest.mark.parametrize(("given", "stored"), [("#person", "person"), (" person ", "person"),
                                               ("team/frontend", "team/frontend"), ("Person", "Person")])
def test_tag_form(given: str, stored: str) -> None:
    assert tag_form(given) == stored


def test_a_markdown_notes_inline_tags_are_its_tags(tmp_path: Path) -> None:
    (tmp_path / "marta.md").write_text("---\ntags: [people]\n---\nMarta Nowak.\n#person #people\n")
    (tmp_path / "plain.txt").write_text("A text file's #words are text.\n")
    items = {i.rel: i for i in iter_files(tmp_path.resolve(), RecordDraft(body=""))}
    assert items["marta.md"].draft.tags == ("people", "person")
    assert items["plain.txt"].draft.tags == ()


def test_a_hash_tag_filter_finds_the_tag(fresh_db) -> None:  # noqa: ANN001
    rid = ops.add_record(fresh_db, RecordDraft(body="Ana Lima, designer.", tags=("#person",))).record_id
    assert ops.get(fresh_db, rid).tags == ("person",)           # stored without its '#'
    for asked in ("person", "#person"):
        assert [r.id for r in ops.list_records(fresh_db, ListFilter(tags=(asked,)))] == [rid]


def test_a_tag_of_a_hash_alone_is_refused(fresh_db) -> None:  # noqa: ANN001
    with pytest.raises(ValidationError, match="empty without its '#'"):
        ops.add_record(fresh_db, RecordDraft(body="x", tags=("#",)))
