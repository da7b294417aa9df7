"""Code symbols through tree-sitter grammars (issue 15.2)."""

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
"""
GO = """package server

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
    assert [p.section for p in parts] == ["src.config", "src.config.loadConfig", "src.config.Store", "src.config.A, B"]
    assert parts[1].text.startswith("/** Load it. */\nexport function loadConfig(path)")


def test_go_methods_are_qualified_by_receiver():
    assert _sections(GO, "srv/server.go") == ["srv.server", "srv.server.Server", "srv.server.Server.Handle",
                                               "srv.server.New"]


def test_rust_items_and_impls():
    parts = split_code(RS, "src/lib.rs", None)
    assert [p.section for p in parts] == ["src.lib", "src.lib.Point", "src.lib.Point",
                                          "src.lib.std::fmt::Display for Point"]
    assert parts[1].text.startswith("/// A point.\n#[derive(Debug)]")


def test_typescript_and_tsx():
    assert _sections(TS, "a.ts") == ["a.Opts", "a.Id", "a.go"]
    assert _sections("export function App() { return <div/>; }\n", "ui/App.tsx") == ["ui.App.App"]


def test_no_definition_falls_back_and_unknown_language():
    assert split_tree_sitter("console.log(1);\n", "m", "javascript") is None
    assert split_tree_sitter("x", "m", "cobol") is None
    assert [(p.section, p.text) for p in split_code("console.log(1);\n", "m.js", None)] == [("m", "console.log(1);")]


def test_split_is_stable_and_keeps_every_line():
    a, b = split_code(GO, "srv/server.go", None), split_code(GO, "srv/server.go", None)
    assert a == b
    text = "\n".join(p.text for p in a)
    for line in GO.splitlines():
        assert line.strip() in text
