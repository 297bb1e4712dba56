"""The same code in two places gets the same answer: each flagged statement of the fixtures is
duplicated in place (a second identical block right after it, in the same function or at module
level), and the copy must get exactly the findings the original gets, at the same places relative
to it, while the original keeps its own. A finding that depends on which of two identical blocks
it is in (flow resolved to the wrong definition, a name bound in both) fails here.

Only the findings inside the duplicated statement are compared: a second copy of a call may
rightly change findings elsewhere (a function now called from two places). A `return` is
repeated as an expression statement before it where the rule judges the value wherever it is
(JF401, JF404, JF406), not where it judges what the function does with it (JF302's factories).
JF404 reports a name once per function: a second read of it in the same function is the same
finding."""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import libcst as cst
import pytest
from libcst.metadata import MetadataWrapper, PositionProvider

from tests.fixture_harness import FIXTURES, case_settings
from jaxfuse_lint.engine.pipeline import check_source

CODES = ("JF301", "JF302", "JF401", "JF404", "JF406")
# Rules whose finding is about a value, wherever the expression is: a `return` can be repeated
# as an expression statement.
VALUE_RULES = ("JF401", "JF404", "JF406")
# Rules that report once per name and function.
ONCE_PER_NAME = ("JF404",)
CASES = [p for code in CODES for p in sorted((FIXTURES / code).glob("*.py"))
         if not p.name.endswith((".fixed.py", ".unsafe.py"))]


def _findings(source: str, path: Path, code: str) -> list[tuple[int, int, str]]:
    settings = case_settings(path, code)
    result = check_source(source, str(path), settings)
    assert not result.errors, result.errors
    return sorted((d.location.row, d.location.column, d.code) for d in result.diagnostics if d.code == code)


def _statement_for(module: cst.Module, row: int, returns: bool):
    """The innermost statement around `row` that can be repeated as it is: not a `def`/`class`
    (that would define a second function under the same name), not a `return` (the copy would
    end the function) unless `returns` (it is then repeated as an expression statement)."""
    wrapper = MetadataWrapper(module, unsafe_skip_copy=True)
    positions = wrapper.resolve(PositionProvider)
    best = None
    for node, pos in positions.items():
        if not isinstance(node, (cst.SimpleStatementLine, cst.BaseCompoundStatement)):
            continue
        if not (pos.start.line <= row <= pos.end.line):
            continue
        if isinstance(node, (cst.FunctionDef, cst.ClassDef)):
            continue
        if isinstance(node, cst.SimpleStatementLine) and any(isinstance(s, (cst.Global, cst.Nonlocal))
                                                              for s in node.body):
            continue
        if isinstance(node, cst.SimpleStatementLine) and any(isinstance(s, cst.Return) for s in node.body) and (
                not returns or len(node.body) != 1 or node.body[0].value is None):
            continue
        if best is None or (pos.end.line - pos.start.line) < (best[1].end.line - best[1].start.line):
            best = (node, pos)
    return best


class _Duplicate(cst.CSTTransformer):
    def __init__(self, target: cst.CSTNode) -> None:
        self.target = target

    def on_leave(self, original, updated):
        if original is self.target:
            copy = updated.deep_clone().with_changes(leading_lines=[])
            if isinstance(updated, cst.SimpleStatementLine) and isinstance(updated.body[0], cst.Return):
                # `return E` -> `E` then `return E`: the value computed twice, the function unchanged.
                first = copy.with_changes(body=[cst.Expr(copy.body[0].value)])
                return cst.FlattenSentinel([first.with_changes(leading_lines=updated.leading_lines),
                                            updated.with_changes(leading_lines=[])])
            return cst.FlattenSentinel([updated, copy])
        return updated


def _cases():
    for path in CASES:
        code = path.parent.name
        source = path.read_text()
        for row, col, _ in _findings(source, path, code):
            yield pytest.param(path, code, row, id=f"{code}/{path.name}:{row}:{col}")


@pytest.mark.parametrize("path,code,row", list(_cases()))
def test_a_second_identical_block_gets_the_same_findings(path, code, row):
    source = path.read_text()
    module = cst.parse_module(source)
    found = _statement_for(module, row, returns=code in VALUE_RULES)
    if found is None:
        pytest.skip("the finding is in a def header or a return: nothing to repeat in place")
    stmt, pos = found
    start, end = pos.start.line, pos.end.line
    height = end - start + 1
    before = _findings(source, path, code)
    inside = [(r - start, c) for r, c, _ in before if start <= r <= end]
    duplicated = module.visit(_Duplicate(stmt)).code
    after = _findings(duplicated, path, code)
    original_now = [(r - start, c) for r, c, _ in after if start <= r <= end]
    copy_now = [(r - start - height, c) for r, c, _ in after if start + height <= r <= end + height]
    if isinstance(stmt, cst.SimpleStatementLine) and isinstance(stmt.body[0], cst.Return):
        # The copy (`E`) comes first, without the `return ` before its value.
        shift = len("return") + len(stmt.body[0].whitespace_after_return.value) \
            if isinstance(stmt.body[0].whitespace_after_return, cst.SimpleWhitespace) else 7
        original_now, copy_now = copy_now, [(r, c + shift) for r, c in original_now]
    if code in ONCE_PER_NAME:
        # The first of two identical reads is reported; the second is the same finding.
        assert original_now == inside or copy_now == inside, (inside, original_now, copy_now)
        return
    assert original_now == inside, f"the original block's findings changed: {inside} -> {original_now}"
    assert copy_now == inside, f"the copy of lines {start}-{end} gets {copy_now}, the original {inside}"
