"""Labels that name a file's section (``<path suffix>#<heading>``, docs/eval.md)."""

from memo_eval.index import _section_label, _section_labels, section_matches


def test_heading_match_ignores_backticks_case_and_signature():
    assert section_matches("File system > Callback API > `fs.readFile(path[, options], callback)`", ["fs.readfile"])
    assert not section_matches("File system > `fs.readFileSync(path[, options])`", ["fs.readfile"])
    assert section_matches("Errors > Node.js error codes > `ERR_HTTP_HEADERS_SENT`", ["err_http_headers_sent"])
    assert not section_matches("Errors > Node.js error codes > `ERR_HTTP2_HEADERS_SENT`", ["err_http_headers_sent"])
    assert section_matches("shlex.split", ["shlex.split"])


def test_multi_heading_label_matches_the_end_of_the_path():
    want = ["determining module system", "introduction"]
    assert section_matches("Modules: Packages > Determining module system > Introduction", want)
    assert not section_matches("Modules: Packages > Introduction", want)


def test_label_found_by_path_suffix():
    labels = {"api/fs.md#fs.readFile", "api/fs.md", "other.md#x"}
    by_path = _section_labels(labels)
    assert set(by_path) == {"api/fs.md", "other.md"}
    assert _section_label("/usr/share/doc/nodejs/api/fs.md", "File system > `fs.readFile(p, cb)`", by_path) \
        == "api/fs.md#fs.readFile"
    assert _section_label("/usr/share/doc/nodejs/api/fs.md", "File system > `fs.stat(p, cb)`", by_path) is None
    assert _section_label("/x/notapi/fs.md", "File system > `fs.readFile(p, cb)`", by_path) is None


def test_a_code_symbol_is_named_by_any_whole_dotted_tail():
    """memo stores ``pystd.copy.deepcopy`` for ``deepcopy`` in ``pystd/copy.py`` (the module
    part comes from the folder imported); ``copy.py#copy.deepcopy``, the form the docs show,
    named nothing (a user probe)."""
    by_path = _section_labels({"copy.py#copy.deepcopy", "pystd/copy.py#deepcopy", "copy.py#py.deepcopy"})
    dotted = {"copy.py": [(lb, w) for lb, w in by_path["copy.py"] if lb == "copy.py#copy.deepcopy"]}
    assert _section_label("/home/me/pystd/copy.py", "pystd.copy.deepcopy", dotted, code=True) == "copy.py#copy.deepcopy"
    assert _section_label("/home/me/pystd/copy.py", "pystd.copy.deepcopy", dotted, code=False) is None
    assert _section_label("/home/me/pystd/copy.py", "pystd.copy.deepcopy", {"pystd/copy.py": by_path["pystd/copy.py"]},
                          code=True) == "pystd/copy.py#deepcopy"
    only_tail = {"copy.py": [(lb, w) for lb, w in by_path["copy.py"] if lb == "copy.py#py.deepcopy"]}
    assert _section_label("/home/me/pystd/copy.py", "pystd.copy.deepcopy", only_tail, code=True) is None   # not "py."
    assert not section_matches("pystd.copy.mydeepcopy", ["deepcopy"], code=True)
    assert not section_matches("Guide > Using deepcopy", ["deepcopy"], code=False)


def test_an_absolute_path_with_a_section():
    by_path = _section_labels({"/srv/kb/pip/caching.md#Where is the cache stored"})
    assert _section_label("/srv/kb/pip/caching.md", "Caching > Where is the cache stored", by_path) \
        == "/srv/kb/pip/caching.md#Where is the cache stored"
