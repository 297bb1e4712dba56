"""Locator: positions found by generating only the top-level statements that hold the nodes
(given the source) are the positions the whole module's generation gives."""
from __future__ import annotations

from pathlib import Path

import libcst as cst
import pytest

from jaxfuse_lint.parse.locate import Locator
from jaxfuse_lint.model import SemanticModel

ROOT = Path(__file__).resolve().parent.parent
FILES = [p for p in sorted((ROOT / "fixtures").glob("JF*/*.py")) if p.parent.name != "JF000"]  # JF000: syntax errors
FILES.append(ROOT / "jaxfuse_lint" / "model" / "shape_calls.py")


def nodes_of(module: cst.Module) -> list[cst.CSTNode]:
    found: list[cst.CSTNode] = []

    class Collect(cst.CSTVisitor):
        def on_visit(self, node: cst.CSTNode) -> bool:
            if isinstance(node, (cst.Call, cst.Name, cst.FunctionDef, cst.SimpleStatementLine, cst.For,
                                 cst.Attribute, cst.Subscript, cst.Decorator)):
                found.append(node)
            return True

    module.visit(Collect())
    return found


@pytest.mark.parametrize("path", FILES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_statement_positions_are_the_module_positions(path):
    source = path.read_text()
    module = cst.parse_module(source)
    model = SemanticModel(module, ("jax",), None)
    nodes = nodes_of(module)
    assert nodes
    whole = Locator(module, nodes)
    by_statement = Locator(module, nodes, source=source, parent=model.parent)
    statements = [module.code_for_node(s) for s in module.body]
    # A statement's code found once in the source places it; one found twice (a repeated statement,
    # or its text inside another statement) makes the Locator fall back to the whole module (below).
    unique = all(source.find(c) >= 0 and source.find(c, source.find(c) + 1) < 0 for c in statements)
    assert by_statement.per_statement == unique and not whole.per_statement
    for node in nodes:
        assert by_statement.range(node) == whole.range(node), cst.Module([]).code_for_node(node)[:60]


def test_a_statement_whose_code_appears_twice_falls_back_to_the_whole_module():
    source = "x = f(1)\nx = f(1)\n"
    module = cst.parse_module(source)
    model = SemanticModel(module, ("jax",), None)
    second_call = module.body[1].body[0].value
    located = Locator(module, [second_call], source=source, parent=model.parent)
    assert not located.per_statement
    assert located.range(second_call)[0].row == 2


def test_the_last_statement_of_a_file_without_a_final_newline():
    source = "import jax\n\n\ndef f(x):\n    return jax.jit(g)(x)"
    module = cst.parse_module(source)
    model = SemanticModel(module, ("jax",), None)
    call = module.body[1].body.body[0].body[0].value
    located = Locator(module, [call], source=source, parent=model.parent)
    assert not located.per_statement  # its code ends with a newline the file does not have
    start, end = located.range(call)
    assert (start.row, start.column, end.row, end.column) == (5, 12, 5, 25)
