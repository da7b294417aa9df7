"""Code symbols through tree-sitter grammars (issue 15.2)."""

from memo.ingest.budget import WINDOW, passage_pieces
from memo.ingest.code_parse import split_tree_sitter
from memo.ingest.split_code import split_code

JS = """// Reads config.
import fs from 'node:fs';
/** Load it. */
export function loadConfig(path) {
  return JSON.parse(fs.readFileSync(path));
}
export default class Store extends Base {
  get(k) { return this.m[k]; }
}
const A = 1, B = 2;
/** Retry limits. */
const LIMITS = { soft: 3 };
"""
GO = """package httpx

import "net/http"

// Server serves.
type Server struct{ mux *http.ServeMux }

// Handle registers.
func (s *Server) Handle(p string, h http.Handler) { s.mux.Handle(p, h) }

func New() *Server { return &Server{} }
"""
RS = """use std::io;

/// A point.
#[derive(Debug)]
pub struct Point { x: i32 }

impl Point {
    pub fn new() -> Self { Point { x: 0 } }
}

impl std::fmt::Display for Point {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result { Ok(()) }
}
"""
TS = """interface Opts { a: number }
export type Id = string;
export async function go<T>(o: Opts): Promise<T> { return null as any; }
"""


def _sections(src: str, path: str) -> list[str]:
    return [p.section for p in split_code(src, path, None)]


def test_javascript_symbols_with_their_comments():
    parts = split_code(JS, "src/config.js", None)
    assert [p.section for p in parts] == ["src.config", "src.config.loadConfig", "src.config.Store",
                                          "src.config.LIMITS"]
    assert parts[1].text.startswith("/** Load it. */\nexport function loadConfig(path)")
    # a one-line binding is module code (a run of them shares a passage); a documented one is a definition
    assert parts[0].text == "// Reads config.\nimport fs from 'node:fs';\nconst A = 1, B = 2;"


def test_go_sections_use_the_package_clause():
    """``package httpx`` in server.go: ``httpx.Server.Handle`` (how Go names it), not the file's name."""
    assert _sections(GO, "srv/server.go") == ["httpx", "httpx.Server", "httpx.Server.Handle", "httpx.New"]
    assert _sections("func main() {}\n", "cmd/tool.go") == ["cmd.tool.main"]   # no package clause: the module


def test_requires_and_imports_share_the_module_passage():
    """npm's lib gave one passage per ``const x = require(...)`` (section ``commands.install.{ readdir }``)."""
    src = ("const { readdir } = require('node:fs/promises')\n"
           "const cliEntry = require('node:path').resolve(__dirname, 'cli/entry.js')\n"
           "const { log } = require('proc-log')\n"
           "const open = require('open')({\n  wait: true,\n})\n"
           "const pkg = await import('pkg')\n"
           "class Install {\n  run() {}\n}\n"
           "module.exports = Install\n")
    parts = split_code(src, "commands/install.js", None)
    assert [p.section for p in parts] == ["commands.install", "commands.install.Install"]
    assert parts[0].text.splitlines()[0] == "const { readdir } = require('node:fs/promises')"
    assert "const pkg = await import('pkg')\nmodule.exports = Install" in parts[0].text


def test_destructured_definitions_are_named_by_their_bindings():
    src = "/** Auth. */\nconst { getAuth, token: t, ...rest } = npmFetch\nfunction f() {}\n"
    assert _sections(src, "logout.js") == ["logout.getAuth, t, rest", "logout.f"]


def test_a_file_without_definitions_is_its_module_passage():
    """Only requires and statements: not a line scan that cuts at each ``const``."""
    src = "const a = require('a')\nconst b = require('b')\n\nmodule.exports = (p) => a(p, () => b)\n"
    assert [(p.section, p.text) for p in split_code(src, "cli.js", None)] == [("cli", src.strip().replace("\n\n", "\n"))]


def test_no_passage_is_only_punctuation():
    minified = "const fs=require('fs');;;;;var x=1;;;function g(){return 2};;;;\n"
    assert [(p.section, p.text) for p in split_code(minified, "min.js", None)] == [
        ("min", "const fs=require('fs');\nvar x=1;"), ("min.g", "function g(){return 2}")]
    broken = "const a = require('a');\nfunction f() {\n  return 1;\n}}\n"   # a syntax error: a stray }
    assert [p.text for p in split_code(broken, "bad.js", None)] == ["const a = require('a');",
                                                                    "function f() {\n  return 1;\n}"]


def test_a_long_definition_is_cut_to_the_window_between_lines():
    body = "\n".join(f"  total += compute(values[{i}], 'label {i}', options);" for i in range(120))
    src = f"function sum(values, options) {{\n  let total = 0;\n{body}\n  return total;\n}}\n"
    parts = split_code(src, "sum.js", None)
    assert len(parts) > 1 and {p.section for p in parts} == {"sum.sum"}
    assert all(passage_pieces(p.section, p.text) <= WINDOW for p in parts)
    lines = [line.strip() for p in parts for line in p.text.splitlines()]
    assert lines == [line.strip() for line in src.strip().splitlines()]


def test_rust_items_and_impls():
    parts = split_code(RS, "src/lib.rs", None)
    assert [p.section for p in parts] == ["src.lib", "src.lib.Point", "src.lib.Point",
                                          "src.lib.std::fmt::Display for Point"]
    assert parts[1].text.startswith("/// A point.\n#[derive(Debug)]")


def test_typescript_and_tsx():
    assert _sections(TS, "a.ts") == ["a.Opts", "a.Id", "a.go"]
    assert _sections("export function App() { return <div/>; }\n", "ui/App.tsx") == ["ui.App.App"]


def test_no_definition_and_unknown_language():
    assert split_tree_sitter("console.log(1);\n", "m", "javascript") == split_code("console.log(1);\n", "m.js", None)
    assert split_tree_sitter(";;\n", "m", "javascript") is None
    assert split_tree_sitter("x", "m", "cobol") is None
    assert [(p.section, p.text) for p in split_code("console.log(1);\n", "m.js", None)] == [("m", "console.log(1);")]


def test_split_is_stable_and_keeps_every_line():
    a, b = split_code(GO, "srv/server.go", None), split_code(GO, "srv/server.go", None)
    assert a == b
    text = "\n".join(p.text for p in a)
    for line in GO.splitlines():
        assert line.strip() in text
