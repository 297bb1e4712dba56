"""Position conversions and code-action selection of the language server, without a process."""
from __future__ import annotations

import pytest

pytest.importorskip("lsprotocol")

from lsprotocol import types  # noqa: E402

from jaxfuse_lint.core.diagnostics import Applicability, Diagnostic, Edit, Fix, Location  # noqa: E402
from jaxfuse_lint.server import features  # noqa: E402
from jaxfuse_lint.server.positions import code_units, document_lines, from_lsp, to_lsp  # noqa: E402

TEXT = 'a = "é𝜋x"; b = 1\r\nsecond\nlast'  # CRLF, LF, and no final newline


@pytest.mark.parametrize("encoding", ["utf-8", "utf-16", "utf-32"])
def test_round_trip_every_character(encoding):
    lines = document_lines(TEXT)
    for row, line in enumerate(lines, start=1):
        body = line.rstrip("\r\n")
        for column in range(1, len(body) + 2):
            line_no, character = to_lsp(lines, row, column, encoding)
            assert line_no == row - 1
            assert character == len(body[: column - 1].encode(
                {"utf-8": "utf-8", "utf-16": "utf-16-le", "utf-32": "utf-32-le"}[encoding])) // (
                {"utf-8": 1, "utf-16": 2, "utf-32": 4}[encoding])
            assert from_lsp(lines, line_no, character, encoding) == (row, column)


def test_non_ascii_before_a_range():
    lines = document_lines(TEXT)
    column = TEXT.index("x") + 1  # after "é" (1 unit / 2 bytes) and "𝜋" (2 units / 4 bytes)
    assert to_lsp(lines, 1, column, "utf-16") == (0, column - 1 + 1)
    assert to_lsp(lines, 1, column, "utf-8") == (0, column - 1 + 1 + 3)
    assert to_lsp(lines, 1, column, "utf-32") == (0, column - 1)
    # A client position in the middle of the surrogate pair belongs to "𝜋".
    pi = TEXT.index("𝜋")
    assert from_lsp(lines, 0, pi + 1, "utf-16") == (1, pi + 1)
    assert code_units("𝜋", "utf-16") == 2 and code_units("𝜋", "utf-8") == 4


def test_positions_past_the_last_line():
    lines = document_lines(TEXT)
    assert to_lsp(lines, 4, 1) == (2, 4)  # no final newline: the end of "last"
    with_newline = document_lines("x = 1\n")
    assert to_lsp(with_newline, 2, 1) == (1, 0)  # the empty line after the final newline


def _diag(row, col, end_row, end_col, fix=None, code="JF101"):
    return Diagnostic(code, "small-axis-reduction", "msg", "m.py", Location(row, col), Location(end_row, end_col), fix)


def test_code_actions_follow_range_and_only():
    text = "x = 1\ny = 2\nz = 3\n"
    safe = Fix(Applicability.SAFE, "fix y", (Edit("y = 3\n", Location(2, 1), Location(3, 1)),))
    unsafe = Fix(Applicability.UNSAFE, "fix z", (Edit("z = 4\n", Location(3, 1), Location(4, 1)),))
    diags = [_diag(2, 1, 2, 6, safe), _diag(3, 1, 3, 6, unsafe), _diag(1, 1, 1, 2)]
    line2 = types.Range(types.Position(1, 0), types.Position(1, 1))
    everything = types.Range(types.Position(0, 0), types.Position(3, 0))
    calls = []

    def fix_all():
        calls.append(1)
        return "x = 1\ny = 3\nz = 3\n"

    actions = features.code_actions("file:///m.py", 4, text, diags, line2, None, fix_all)
    assert [(a.title, a.kind, a.is_preferred) for a in actions] == [
        ("JF101: fix y", "quickfix", True), ("jaxfuse-lint: fix all safely fixable problems", features.FIX_ALL_KIND, None)]
    assert actions[0].edit.document_changes[0].text_document.version == 4
    actions = features.code_actions("file:///m.py", 4, text, diags, everything, ["quickfix"], fix_all)
    assert [a.title for a in actions] == ["JF101: fix y", "JF101: fix z (unsafe fix)"]
    assert actions[1].is_preferred is False
    before = len(calls)
    actions = features.code_actions("file:///m.py", 4, text, diags, everything, ["source.fixAll"], fix_all)
    assert [a.kind for a in actions] == [features.FIX_ALL_KIND] and len(calls) == before + 1
    (edit,) = actions[0].edit.document_changes[0].edits
    assert edit.range == types.Range(types.Position(1, 0), types.Position(2, 0)) and edit.new_text == "y = 3\n"
    # No safe fix: no fix-all, and the engine is not even asked.
    assert features.code_actions("file:///m.py", 4, text, diags[1:], everything, ["source"], fix_all) == []
    assert len(calls) == before + 1


def test_hover_only_inside_a_diagnostic():
    text = 'r = {"𝜋": jnp.sum(v)}\n'
    start = text.index("jnp") + 1
    d = _diag(1, start, 1, text.index(")}") + 2)
    units_before = start - 1 + 1  # "𝜋" is two UTF-16 units
    inside = features.hover_markdown(text, [d], types.Position(0, units_before))
    assert inside is not None and inside.startswith("# small-axis-reduction (JF101)")
    assert features.hover_markdown(text, [d], types.Position(0, units_before - 1)) is None
    end_units = text.index(")}") + 1 + 1
    assert features.hover_markdown(text, [d], types.Position(0, end_units)) is None  # the end is exclusive
    assert features.hover_markdown(text, [d], types.Position(0, end_units - 1)) is not None
