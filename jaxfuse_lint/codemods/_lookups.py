"""Lookups in the tree a fix rewrites: a call's arguments, literal booleans, docstrings, the block
that lists a statement, document order, whether one node lies inside another, and the names an
expression reads."""
from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

from jaxfuse_lint.model.scopes import walk

if TYPE_CHECKING:
    from jaxfuse_lint.model import SemanticModel


def keyword_names(call_node: cst.Call) -> set[str]:
    return {a.keyword.value for a in call_node.args if a.keyword is not None}


def n_positional(call_node: cst.Call) -> int:
    return sum(1 for a in call_node.args if a.keyword is None and not a.star)


def has_star(call_node: cst.Call) -> bool:
    return any(a.star for a in call_node.args)


def literal_bool(e: cst.BaseExpression | None) -> bool | None:
    if isinstance(e, cst.Name) and e.value in ("True", "False"):
        return e.value == "True"
    return None


def is_docstring(stmt: cst.CSTNode) -> bool:
    return (isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1 and isinstance(stmt.body[0], cst.Expr)
            and isinstance(stmt.body[0].value, (cst.SimpleString, cst.ConcatenatedString)))


def containing_block(model: "SemanticModel", stmt: cst.CSTNode) -> cst.CSTNode | None:
    """The IndentedBlock or Module whose body lists `stmt` directly."""
    parent = model.parent(stmt)
    if isinstance(parent, (cst.IndentedBlock, cst.Module)) and stmt in parent.body:
        return parent
    return None


def document_order(model: "SemanticModel") -> dict[cst.CSTNode, int]:
    """Pre-order position of every node (cached on the model)."""
    cached = getattr(model, "_jf_document_order", None)
    if cached is None:
        cached = {n: i for i, n in enumerate(walk(model.module))}
        model._jf_document_order = cached  # type: ignore[attr-defined]
    return cached


def is_inside(model: "SemanticModel", node: cst.CSTNode, container: cst.CSTNode) -> bool:
    return node is container or any(a is container for a in model.ancestors(node))


class _OpaqueName(cst.Name):
    """A marker among the names an expression reads (`value == "<scope>"`): libcst refuses to
    build a `Name` that is not an identifier, and the marker is never written into code."""

    def _validate(self) -> None:
        pass


# What `free_name_nodes` lists for a lambda or a comprehension: callers treat it as opaque.
_NESTED_SCOPE = _OpaqueName("<scope>")


def free_name_nodes(expr: cst.CSTNode) -> list[cst.Name]:
    """Name nodes read in `expr` (attribute names, keywords and lambda-internal names excluded)."""
    out: list[cst.Name] = []
    stack: list[tuple[cst.CSTNode, cst.CSTNode | None, str]] = [(expr, None, "")]
    while stack:
        node, parent, fname = stack.pop()
        if isinstance(node, cst.Name):
            if isinstance(parent, cst.Attribute) and fname == "attr":
                continue
            if isinstance(parent, cst.Arg) and fname == "keyword":
                continue
            if node.value in ("True", "False", "None"):
                continue
            out.append(node)
            continue
        if isinstance(node, (cst.Lambda, cst.ListComp, cst.SetComp, cst.DictComp, cst.GeneratorExp)):
            out.append(_NESTED_SCOPE)  # a nested scope: callers treat it as opaque
            continue
        for f in _fields(node):
            v = getattr(node, f)
            if isinstance(v, cst.CSTNode):
                stack.append((v, node, f))
            elif isinstance(v, (list, tuple)):
                for item in v:
                    if isinstance(item, cst.CSTNode):
                        stack.append((item, node, f))
    return out


def _fields(node: cst.CSTNode) -> list[str]:
    import dataclasses

    return [f.name for f in dataclasses.fields(node)
            if not f.name.startswith(("whitespace", "lpar", "rpar", "comma", "semicolon", "leading_lines",
                                      "lines_after", "header", "footer", "colon", "equal", "star", "dot",
                                      "lbracket", "rbracket", "lbrace", "rbrace", "operator"))]
