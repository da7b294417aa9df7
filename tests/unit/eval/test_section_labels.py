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
