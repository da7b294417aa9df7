"""Top-level symbols of JavaScript, TypeScript, Go and Rust through tree-sitter grammars.

``split_tree_sitter(source, module, language, tsx=False)`` returns one passage per
top-level definition (its source, with the comments and attributes right above it),
section = qualified name:

* JavaScript / TypeScript: functions, classes, interfaces, type aliases, enums,
  namespaces, ``const``/``let``/``var`` bindings (``export`` / ``export default`` unwrapped):
  ``<module>.<name>``;
* Go: functions ``<pkg>.<Name>``, methods ``<pkg>.<Receiver>.<Name>``, types, consts and
  vars, where ``<pkg>`` is the name in the file's ``package`` clause (how Go code names
  them: ``httpx.Server.Shutdown``), the module name when it has none;
* Rust: ``fn``, ``struct``, ``enum``, ``trait``, ``type``, ``const``, ``static``, ``mod``,
  ``macro_rules!`` and ``impl`` blocks (``<module>.<Type>``, or ``<module>.<Trait for Type>``).

Top-level code that defines nothing (imports, a package clause, statements) is gathered,
in file order, into the module's passage (section = the module or package name, cut to
the window when long), so no text is lost and no passage is one ``import`` line: such
one-liners would rank above the code a natural-language query is after.  A binding whose
value is a ``require(...)`` or ``import(...)`` (``const { readdir } = require('fs')``) is an
import, not a definition.  Pieces with no letter or digit (the ``;`` of a minified file,
a stray ``}`` of one that does not parse) are left out.  A one-line ``const``/``let``/``var``
without a comment above it is module code too: a run of them (``const REL_DEV =
'DEV_DEPENDENCY_OF'`` ...) shares one passage instead of a passage a line; a documented
or longer binding stays a definition.  Returns None when the grammar is not installed or
the file holds no text (the caller then keeps the line-scan splitter).
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from memo.ingest.code_passages import fit_code, has_words
from memo.stored import PassageDraft

LANGUAGES = ("javascript", "typescript", "go", "rust")
_COMMENTS = {"comment", "line_comment", "block_comment", "attribute_item", "inner_attribute_item",
             "decorator"}


@lru_cache(maxsize=8)
def _parser(language: str, tsx: bool) -> Any | None:
    try:
        import tree_sitter
        if language == "javascript":
            import tree_sitter_javascript as grammar
            lang = grammar.language()
        elif language == "typescript":
            import tree_sitter_typescript as grammar
            lang = grammar.language_tsx() if tsx else grammar.language_typescript()
        elif language == "go":
            import tree_sitter_go as grammar
            lang = grammar.language()
        elif language == "rust":
            import tree_sitter_rust as grammar
            lang = grammar.language()
        else:
            return None
        return tree_sitter.Parser(tree_sitter.Language(lang))
    except ImportError:
        return None


def _text(node: Any) -> str:
    return node.text.decode("utf-8", "replace") if node is not None and node.text is not None else ""


def _field(node: Any, name: str) -> str:
    return _text(node.child_by_field_name(name))


def _declarator_names(node: Any) -> list[str]:
    """Names bound by a JS/TS ``const a = ..., b = ...``, a Go ``const (...)`` / ``var``."""
    names: list[str] = []
    for child in node.named_children:
        if child.type in ("variable_declarator", "const_spec", "var_spec", "type_spec", "type_alias"):
            n = child.child_by_field_name("name")
            if n is not None and n.type in ("object_pattern", "array_pattern"):
                names.extend(_pattern_names(n))       # const { readdir } = fs: "readdir"
            elif n is not None:
                names.append(_text(n))
        elif child.type in ("const_spec_list", "var_spec_list", "type_spec_list"):
            names.extend(_declarator_names(child))
    return names


def _pattern_names(node: Any) -> list[str]:
    """The names a JS destructuring pattern binds (``{ a, b: c, ...d }``: a, c, d)."""
    if node.type in ("identifier", "shorthand_property_identifier_pattern"):
        return [_text(node)]
    if node.type == "pair_pattern":
        value = node.child_by_field_name("value")
        return _pattern_names(value) if value is not None else []
    if node.type in ("assignment_pattern", "object_assignment_pattern"):
        left = node.child_by_field_name("left")
        return _pattern_names(left) if left is not None else []
    return [name for child in node.named_children for name in _pattern_names(child)]


def _is_import(value: Any) -> bool:
    """Is a binding's value ``require('x')``, ``require('x').y``, ``require('x')(opts)`` or
    ``await import('x')``?"""
    while value is not None:
        if value.type == "call_expression":
            fn = value.child_by_field_name("function")
            if fn is not None and (fn.type == "import" or _text(fn) == "require"):
                return True
            value = fn
        elif value.type in ("member_expression", "subscript_expression"):
            value = value.child_by_field_name("object")
        elif value.type in ("await_expression", "parenthesized_expression"):
            value = value.named_children[0] if value.named_children else None
        else:
            return False
    return False


def _js_name(node: Any) -> str | None:
    t = node.type
    if t == "export_statement":
        decl = node.child_by_field_name("declaration")
        if decl is not None:
            return _js_name(decl)
        value = node.child_by_field_name("value")
        if value is not None:
            return _field(value, "name") or "default"
        return None
    if t in ("function_declaration", "generator_function_declaration", "class_declaration",
             "abstract_class_declaration", "interface_declaration", "type_alias_declaration",
             "enum_declaration", "function_signature", "internal_module", "module"):
        return _field(node, "name") or None
    if t in ("lexical_declaration", "variable_declaration"):
        declarators = [c for c in node.named_children if c.type == "variable_declarator"]
        if declarators and all(_is_import(c.child_by_field_name("value")) for c in declarators):
            return None
        names = _declarator_names(node)
        return ", ".join(names) if names else None
    if t == "ambient_declaration":       # declare module 'x' { ... } / declare function f()
        for child in node.named_children:
            name = _js_name(child)
            if name:
                return name
    if t == "expression_statement":      # namespace Foo {} parses as one in some grammars
        child = node.named_children[0] if node.named_children else None
        if child is not None and child.type in ("internal_module", "module"):
            return _field(child, "name") or None
    return None


def _go_name(node: Any) -> str | None:
    t = node.type
    if t == "function_declaration":
        return _field(node, "name") or None
    if t == "method_declaration":
        recv = node.child_by_field_name("receiver")
        rtype = ""
        if recv is not None:
            for p in recv.named_children:
                ty = p.child_by_field_name("type")
                if ty is not None:
                    rtype = _text(ty).lstrip("*").split("[")[0]
                    break
        name = _field(node, "name")
        return f"{rtype}.{name}" if rtype else name or None
    if t in ("type_declaration", "const_declaration", "var_declaration"):
        names = _declarator_names(node)
        return ", ".join(names) if names else None
    return None


def _rust_name(node: Any) -> str | None:
    t = node.type
    if t == "impl_item":
        ty, trait = _field(node, "type"), _field(node, "trait")
        return f"{trait} for {ty}" if trait else ty or None
    if t in ("function_item", "function_signature_item", "struct_item", "enum_item", "union_item",
             "trait_item", "type_item", "const_item", "static_item", "mod_item", "macro_definition"):
        return _field(node, "name") or None
    return None


_NAMERS = {"javascript": _js_name, "typescript": _js_name, "go": _go_name, "rust": _rust_name}


def _package(root: Any) -> str | None:
    """The name in a Go file's ``package`` clause."""
    for node in root.named_children:
        if node.type == "package_clause":
            for child in node.named_children:
                if child.type == "package_identifier":
                    return _text(child)
    return None


def _one_line_binding(node: Any, text: str) -> bool:
    """A JS/TS ``const``/``let``/``var`` on one line without a comment above it (``const
    REF_VCS = 'vcs'``): module code, where a file's run of such constants shares a passage."""
    decl = node.child_by_field_name("declaration") if node.type == "export_statement" else node
    return decl is not None and decl.type in ("lexical_declaration", "variable_declaration") and "\n" not in text


def split_tree_sitter(source: str, module: str, language: str, tsx: bool = False) -> list[PassageDraft] | None:
    parser = _parser(language, tsx)
    if parser is None:
        return None
    data = source.encode("utf-8", "surrogatepass")
    root = parser.parse(data).root_node
    if language == "go":
        module = _package(root) or module
    namer = _NAMERS[language]
    symbols: list[PassageDraft] = []
    loose: list[str] = []                 # top-level code that defines nothing
    pending_start: int | None = None      # first byte of comments right above the next node

    def piece(start: int, end: int) -> str:
        return data[start:end].decode("utf-8", "replace").strip()

    for node in root.children:
        if node.type in _COMMENTS:
            if pending_start is None:
                pending_start = node.start_byte
            continue
        name = namer(node)
        start = pending_start if pending_start is not None else node.start_byte
        pending_start = None
        text = piece(start, node.end_byte)
        if name is None or (namer is _js_name and _one_line_binding(node, text)):
            loose.append(text)
        else:
            symbols.extend(fit_code(f"{module}.{name}", text))
    if pending_start is not None:
        loose.append(piece(pending_start, len(data)))
    return fit_code(module, "\n".join(x for x in loose if has_words(x))) + symbols or None
