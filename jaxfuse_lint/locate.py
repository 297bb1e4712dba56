"""Positions for the few nodes that are reported.

libcst's PositionProvider records a range for every node of the module (about
1.5x the parse on the jax source). A report needs a handful. This runs the same
code generation once per file, but records token offsets only for the nodes it
was asked about, then turns offsets into 1-based rows and columns.
"""
from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Iterable, Iterator

import libcst as cst
from libcst._nodes.internal import CodegenState

from jaxfuse_lint.diagnostics import Location


@dataclass(frozen=False)
class _LocatingState(CodegenState):
    targets: frozenset = frozenset()
    marks: dict = field(default_factory=dict)

    def before_codegen(self, node: cst.CSTNode) -> None:
        if node in self.targets and node not in self.marks:
            self.marks[node] = [len(self.tokens), None, False]

    def after_codegen(self, node: cst.CSTNode) -> None:
        mark = self.marks.get(node)
        if mark is not None and mark[1] is None:
            mark[1] = len(self.tokens)

    @contextmanager
    def record_syntactic_position(self, node: cst.CSTNode, *, start_node=None, end_node=None) -> Iterator[None]:
        # The syntactic start skips leading blank lines, comments and decorators of statements.
        if node in self.targets:
            start = len(self.tokens)
            yield
            self.marks[node] = [start, len(self.tokens), True]
        else:
            yield


class Locator:
    """Maps nodes of one module to (start, end) Locations."""

    def __init__(self, module: cst.Module, nodes: Iterable[cst.CSTNode]) -> None:
        self.module = module
        targets = frozenset(nodes)
        state = _LocatingState(
            default_indent=module.default_indent,
            default_newline=module.default_newline,
            targets=targets,
        )
        if targets:
            module._codegen(state)
        tokens = state.tokens
        self._ranges: dict[cst.CSTNode, tuple[Location, Location]] = {}
        if not state.marks:
            return
        # Offsets of every token boundary that was marked, in one pass over the tokens.
        wanted = sorted({i for s, e, _ in state.marks.values() for i in (s, e) if i is not None})
        offsets: dict[int, int] = {}
        total = 0
        w = 0
        for i, tok in enumerate(tokens):
            while w < len(wanted) and wanted[w] == i:
                offsets[i] = total
                w += 1
            total += len(tok)
        while w < len(wanted):
            offsets[wanted[w]] = total
            w += 1
        code = "".join(tokens)
        self.code = code
        for node, (s, e, _) in state.marks.items():
            start = offsets[s]
            end = offsets[e if e is not None else s]
            # Whitespace-inclusive ranges may start with indentation or blank lines: trim them.
            while start < end and code[start] in " \t\r\n\f\\":
                start += 1
            while end > start and code[end - 1] in " \t\r\n\f":
                end -= 1
            self._ranges[node] = (_location(code, start), _location(code, end))

    def range(self, node: cst.CSTNode) -> tuple[Location, Location]:
        r = self._ranges.get(node)
        if r is None:
            return Location(1, 1), Location(1, 1)
        return r

    def start(self, node: cst.CSTNode) -> Location:
        return self.range(node)[0]

    def line(self, node: cst.CSTNode) -> int:
        return self.range(node)[0].row


def _location(code: str, offset: int) -> Location:
    row = code.count("\n", 0, offset) + 1
    line_start = code.rfind("\n", 0, offset) + 1
    return Location(row, offset - line_start + 1)
