"""Choose the splitter for a record: by kind, then by what the text looks like.

* code         -> split_code (symbols; language from the import path's extension)
* conversation -> split_conversation (turns with speaker and date)
* note / doc   -> split_markdown when the body has headings, else split_paragraphs

Passages a caller already supplies (LoCoMo turns, BEIR abstracts) are kept, only
windowed when too long, so their ids and ext_ids stay what the adapter chose.
"""

from __future__ import annotations

from pathlib import PurePosixPath

from memo.errors import ValidationError
from memo.ingest.documents import DOCUMENT_EXTENSIONS
from memo.ingest.html_text import HTML_EXTENSIONS
from memo.ingest.split_code import split_code
from memo.ingest.split_markdown import looks_like_markdown, split_markdown
from memo.ingest.split_text import split_conversation, split_paragraphs
from memo.ingest.windows import windowed
from memo.stored import PassageDraft, RecordDraft
from memo.types import TURN_KINDS

MARKDOWN_EXTENSIONS = {".md", ".markdown", ".mdx"}


def split_record(draft: RecordDraft) -> tuple[PassageDraft, ...]:
    if draft.passages:
        out = [w for p in draft.passages for w in windowed(p)]
    elif draft.kind == "code":
        out = split_code(draft.body, draft.import_path, draft.title,
                         language=str(draft.meta["language"]) if "language" in draft.meta else None)
    elif draft.kind in TURN_KINDS:
        out = split_conversation(draft.body, default_date=draft.event_at)
    else:
        suffix = PurePosixPath(draft.import_path or "").suffix.lower()
        # An HTML page's, a PDF's, a Word document's and an e-book's text is markdown (memo.ingest.html_text,
        # .documents), headings or not.
        if (suffix in MARKDOWN_EXTENSIONS or suffix in HTML_EXTENSIONS or suffix in DOCUMENT_EXTENSIONS
                or looks_like_markdown(draft.body)):
            out = split_markdown(draft.body, title=draft.title)
        else:
            out = split_paragraphs(draft.body, section=draft.title or "")
    if not out:
        raise ValidationError("text has no content to index (empty after splitting)")
    return tuple(out)
