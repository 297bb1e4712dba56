"""Fixes read like code a person would commit (issue 36, item 7): on every fixture's fixed and
unsafe output (fixtures/<CODE>/*.fixed.py, *.unsafe.py), the lines a fix writes fit in 88
columns (or in the width of the lines they replace, when those were wider), and a statement a fix
writes repeats no long operand (it is bound to a name first)."""
from __future__ import annotations

import ast
import difflib
from collections import Counter
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
LINE_LENGTH = 88
# A line that was already too long may grow by a longer module prefix (`np.ones` -> `jnp.ones`).
PREFIX_GROWTH = 4
# A statement repeats an operand too much when its extra copies add more than this many characters
# (and the user's statement did not repeat one as often).
REPEATED_CHARACTERS = 20
OUTPUTS = sorted([*ROOT.glob("fixtures/JF*/*.fixed.py"), *ROOT.glob("fixtures/JF*/*.unsafe.py")])


def code_part(line: str) -> str:
    """The line without a trailing comment (the fixtures' annotations): what the fix wrote."""
    return line.split("  # ", 1)[0].rstrip()


def written_lines(original: list[str], fixed: list[str]) -> list[tuple[int, int]]:
    """(1-based row in the output, the width allowed) for every line the fix wrote."""
    out = []
    matcher = difflib.SequenceMatcher(None, original, fixed, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            continue
        replaced = max((len(code_part(line)) for line in original[i1:i2]), default=0)
        width = replaced + PREFIX_GROWTH if replaced > LINE_LENGTH else LINE_LENGTH
        out += [(j + 1, width) for j in range(j1, j2)]
    return out


def hunks(original: list[str], fixed: list[str]) -> list[tuple[set[int], set[int]]]:
    """(rows of the original, rows of the output) of each change, 1-based."""
    matcher = difflib.SequenceMatcher(None, original, fixed, autojunk=False)
    return [({i + 1 for i in range(i1, i2)}, {j + 1 for j in range(j1, j2)})
            for tag, i1, i2, j1, j2 in matcher.get_opcodes() if tag != "equal"]


def plain(node: ast.AST) -> bool:
    """A name's attribute or lane (`x.T`, `x[..., 0]`, `x.shape[1]`): short and cheap to write again."""
    while isinstance(node, (ast.Attribute, ast.Subscript)):
        if isinstance(node, ast.Subscript) and not all(
                isinstance(e, (ast.Constant, ast.Slice, ast.Name)) for e in
                (node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice])):
            return False
        node = node.value
    return isinstance(node, ast.Name)


def repeated(node: ast.AST) -> dict[str, int]:
    """Operands (calls, subscripts, attributes, arithmetic) written more than once in `node`, with
    how many characters their extra copies add."""
    counts = Counter(ast.unparse(n) for n in ast.walk(node)
                     if isinstance(n, (ast.BinOp, ast.Call, ast.Subscript)) and not plain(n))
    return {text: len(text) * (k - 1) for text, k in counts.items() if k > 1}


def copies(node: ast.AST) -> int:
    """How often the most repeated operand of `node` is written."""
    counts = Counter(ast.unparse(n) for n in ast.walk(node)
                     if isinstance(n, (ast.BinOp, ast.Call, ast.Subscript)) and not plain(n))
    return max(counts.values(), default=0)


def statements_at(tree: ast.Module, rows: set[int]) -> list[ast.stmt]:
    """The innermost simple statements that contain one of `rows`."""
    return [n for n in ast.walk(tree) if isinstance(n, ast.stmt) and not hasattr(n, "body")
            and any(n.lineno <= r <= (n.end_lineno or n.lineno) for r in rows)]


def source_of(output: Path) -> Path:
    return output.with_name(output.name.split(".")[0] + ".py")


@pytest.mark.parametrize("output", OUTPUTS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_fixed_lines_fit_the_line_length(output):
    original, fixed = source_of(output).read_text().splitlines(), output.read_text().splitlines()
    long = [f"{row}: {len(code_part(fixed[row - 1]))} > {width}: {fixed[row - 1].strip()}"
            for row, width in written_lines(original, fixed) if len(code_part(fixed[row - 1])) > width]
    assert not long, "\n".join(long)


@pytest.mark.parametrize("output", OUTPUTS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_fixed_statements_repeat_no_long_operand(output):
    original_text, text = source_of(output).read_text(), output.read_text()
    before_tree, after_tree = ast.parse(original_text), ast.parse(text)
    bad = []
    for old_rows, new_rows in hunks(original_text.splitlines(), text.splitlines()):
        allowed = max((copies(s) for s in statements_at(before_tree, old_rows)), default=0)
        for stmt in statements_at(after_tree, new_rows):
            for operand, extra in repeated(stmt).items():
                written = extra // len(operand) + 1
                if extra > REPEATED_CHARACTERS and written > allowed:
                    bad.append(f"line {stmt.lineno}: `{operand}` written {written} times")
    assert not bad, "\n".join(bad)


def test_the_checks_catch_what_issue_36_saw():
    wide = "    return (x[:, None, :] * w)[..., 0] + (x[:, None, :] * w)[..., 1] + (x[:, None, :] * w)[..., 2]"
    [stmt] = ast.parse(wide.strip()).body
    assert repeated(stmt)["x[:, None, :] * w"] > REPEATED_CHARACTERS and copies(stmt) == 3
    assert written_lines(["    return jnp.sum(x[:, None, :] * w, axis=-1)"], [wide]) == [(1, LINE_LENGTH)]
    assert len(wide) > LINE_LENGTH
