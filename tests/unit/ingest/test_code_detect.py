"""memo.ingest.code_detect: a BEIR corpus of function bodies becomes code records, prose stays doc."""

from __future__ import annotations

import textwrap

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memo.ingest.beir import beir_draft
from memo.ingest.code_detect import looks_like_code

CODE = {
    "python": '''
        def exists(path):
            try:
                os.stat(path)
            except (OSError, ValueError):
                return False
            return True
        ''',
    "python with a long docstring": '''
        def which(cmd, mode=os.F_OK | os.X_OK, path=None):
            """Given a command, mode, and a PATH string, return the path which
            conforms to the given mode on the PATH, or None if there is no such
            file.

            `mode` defaults to os.F_OK | os.X_OK. `path` defaults to the result
            of os.environ.get("PATH"), or can be overridden with a custom search
            path.  Nothing here is code, and there is more of it than of code.
            """
            if os.path.dirname(cmd):
                return cmd
            return None
        ''',
    "python call over lines": '''
        def finalize_options(self):
            self.set_undefined_options('build',
                                       ('build_temp', 'build_clib'),
                                       ('debug', 'debug'),
                                       ('force', 'force'))
            self.libraries = self.distribution.libraries
        ''',
    "javascript": '''
        function readConfig(path) {
          const text = fs.readFileSync(path, 'utf8');
          return JSON.parse(text);
        }
        ''',
    "go": '''
        func (s *Server) Close() error {
            s.mu.Lock()
            defer s.mu.Unlock()
            return s.listener.Close()
        }
        ''',
    "java": '''
        public static int indexOf(int[] a, int key) {
            for (int i = 0; i < a.length; i++) {
                if (a[i] == key) return i;
            }
            return -1;
        }
        ''',
    "one line": "def get_vid(url): return match1(url, r'youtu.be/([^?/]+)')",
}

PROSE = {
    "abstract": "Alterations of the architecture of cerebral white matter in the developing human brain "
                "can affect cortical development (p < 0.05; n = 17). We used diffusion tensor imaging.",
    "wrapped release note": '''
         * "git fetch --all", when passed "--no-tags", did not honor the
           "--no-tags" option while fetching from individual remotes (the same
           issue existed with "--tags"), which has been corrected.
         * if the configuration says so, for example with "fetch.prune",
           the remote-tracking branches are pruned (see
           git-fetch(1) for details).
        ''',
    "markdown with a code block": '''
        Read a file in one call:

        ```js
        const data = fs.readFileSync('/etc/passwd', 'utf8');
        console.log(data);
        ```
        ''',
    "a chat turn": "Caroline: I went to the LGBTQ support group yesterday and it was so powerful.",
    "a title only": "Kiss and Tell (1945 film)",
    "empty": "",
}


@pytest.mark.parametrize("name", sorted(CODE))
def test_code_reads_as_code(name: str) -> None:
    assert looks_like_code(textwrap.dedent(CODE[name]))


@pytest.mark.parametrize("name", sorted(PROSE))
def test_prose_reads_as_prose(name: str) -> None:
    assert not looks_like_code(textwrap.dedent(PROSE[name]))


def test_the_docstring_does_not_outvote_its_function() -> None:
    """Counted with the docstring's lines the long-docstring function is 3 code lines of 10."""
    body = textwrap.dedent(CODE["python with a long docstring"])
    assert looks_like_code(body)
    assert not looks_like_code(body.replace('"""', ""))


def test_beir_gives_code_records_for_code_and_doc_records_for_prose() -> None:
    code = beir_draft({"_id": "f1", "title": "", "text": textwrap.dedent(CODE["python"])})
    prose = beir_draft({"_id": "d1", "title": "Brains", "text": PROSE["abstract"]})
    assert code is not None and code.kind == "code"
    assert prose is not None and prose.kind == "doc"
    # The passage is the adapter's either way: only the kind differs.
    assert code.passages[0].ext_id == "f1" and code.passages[0].text == textwrap.dedent(CODE["python"]).strip()


_WORD = st.text(alphabet="abcdefghijklmnopqrstuvwxyz", min_size=1, max_size=9)
_SENTENCE = st.lists(_WORD, min_size=7, max_size=16).map(lambda ws: " ".join(ws).capitalize() + ".")


@settings(max_examples=200, deadline=None)
@given(st.lists(_SENTENCE, min_size=1, max_size=12), st.integers(min_value=30, max_value=90))
def test_sentences_wrapped_anywhere_stay_prose(sentences: list[str], width: int) -> None:
    assert not looks_like_code(textwrap.fill(" ".join(sentences), width=width))


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=400))
def test_any_text_gets_an_answer(text: str) -> None:
    assert looks_like_code(text) in (True, False)
