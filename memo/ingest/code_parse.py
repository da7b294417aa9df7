"""Top-level symbols of JavaScript, TypeScript, Go and Rust through tree-sitter grammars.

``split_tree_sitter(source, module, language, tsx=False)`` returns one passage per
top-level definition (its source, with the comments and attributes right above it),
section = qualified name:

* JavaScript / TypeScript: functions, classes, interfaces, type aliases, enums,
  namespaces, ``const``/``let``/``var`` bindings (``export`` / ``export default`` unwrapped):
  ``<module>.<name>``;
* Go: functions ``<module>.<Name>``, methods ``<module>.<Receiver>.<Name>``, types,
  consts and vars;
* Rust: ``fn``, ``struct``, ``enum``, ``trait``, ``type``, ``const``, ``static``, ``mod``,
  ``macro_rules!`` and ``impl`` blocks (``<module>.<Type>``, or ``<module>.<Trait for Type>``).

Top-level code that defines nothing (imports, a package clause, statements) is kept as
passages with the module name as section, so no text is lost.  Returns None when the
grammar is not installed or the file defines nothing the grammar recognises (the caller
then keeps the line-scan splitter).
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from memo.ingest.windows import windowed
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
            if n is not None:
                names.append(_text(n))
        elif child.type in ("const_spec_list", "var_spec_list", "type_spec_list"):
            names.extend(_declarator_names(child))
    return names


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


def split_tree_sitter(source: str, module: str, language: str, tsx: bool = False) -> list[PassageDraft] | None:
    parser = _parser(language, tsx)
    if parser is None:
        return None
    data = source.encode("utf-8", "surrogatepass")
    root = parser.parse(data).root_node
    namer = _NAMERS[language]
    out: list[PassageDraft] = []
    pending_start: int | None = None      # first byte of comments right above the next node
    loose: list[tuple[int, int]] = []     # top-level code that defines nothing
    found = False

    def emit_loose() -> None:
        if loose:
            text = data[loose[0][0]:loose[-1][1]].decode("utf-8", "replace").strip()
            if text:
                out.extend(windowed(PassageDraft(text=text, section=module)))
            loose.clear()

    for node in root.children:
        if node.type in _COMMENTS:
            if pending_start is None:
                pending_start = node.start_byte
            continue
        name = namer(node)
        start = pending_start if pending_start is not None else node.start_byte
        pending_start = None
        if name is None:
            loose.append((start, node.end_byte))
            continue
        emit_loose()
        found = True
        text = data[start:node.end_byte].decode("utf-8", "replace").strip()
        out.extend(windowed(PassageDraft(text=text, section=f"{module}.{name}")))
    if pending_start is not None:
        loose.append((pending_start, len(data)))
    emit_loose()
    return out if found else None
