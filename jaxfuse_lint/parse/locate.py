"""Positions for the few nodes that are reported.

libcst's PositionProvider records a range for every node of the module (about
1.5x the parse on the jax source). A report needs a handful. This runs the same
code generation, but records token offsets only for the nodes it was asked about,
then turns offsets into 1-based rows and columns; given the source, it generates
only the top-level statements that hold those nodes (see Locator).
"""
from __future__ import annotations

import bisect
import re
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Callable, Iterable, Iterator

import libcst as cst
from libcst._nodes.internal import CodegenState

from jaxfuse_lint.core.diagnostics import Location


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


# At most this many top-level statements are found one by one in the source (each search scans
# the source: with a statement per finding, a long file's cost grew with its size squared).
MAX_STATEMENTS = 64


class Locator:
    """Maps nodes of one module to (start, end) Locations.

    With the module's `source` and its parent links (`parent`), the code is generated only for
    the top-level statements that hold the nodes, each found in the source by its code (the
    statement's text is unique there, as a function's or a class's is): a few milliseconds
    where the whole module's generation takes ~40 ms for 2,000 lines, which the language
    server paid on every edit of a file with findings. Otherwise, or when a statement's code is
    not found exactly once, the whole module is generated."""

    def __init__(self, module: cst.Module, nodes: Iterable[cst.CSTNode], *, source: str | None = None,
                 parent: Callable[[cst.CSTNode], cst.CSTNode | None] | None = None) -> None:
        self.module = module
        self._ranges: dict[cst.CSTNode, tuple[Location, Location]] = {}
        self.per_statement = False  # whether only the statements holding the nodes were generated
        targets = frozenset(nodes)
        if not targets:
            return
        if source is not None and parent is not None:
            ranges = self._by_statement(targets, source, parent)
            if ranges is not None:
                self._ranges = ranges
                self.per_statement = True
                return
        code, marks = _generate(module, module, targets)
        self._ranges = _ranges(code, marks, 0)

    def _by_statement(self, targets: frozenset, source: str, parent) -> dict | None:
        groups: dict[cst.CSTNode, set[cst.CSTNode]] = {}
        for node in targets:
            top, up = node, parent(node)
            while up is not None and up is not self.module:
                top, up = up, parent(up)
            if up is not self.module:
                return None  # not under this module's body (or no parent links)
            groups.setdefault(top, set()).add(node)
        if len(groups) > MAX_STATEMENTS:
            return None  # each is found by scanning the source: past this, generating it all is cheaper
        ranges: dict[cst.CSTNode, tuple[Location, Location]] = {}
        for statement, members in groups.items():
            code, marks = _generate(self.module, statement, frozenset(members))
            at = source.find(code)
            if at < 0 or source.find(code, at + 1) >= 0:
                return None
            ranges.update(_ranges(code, marks, source.count("\n", 0, at)))
        return ranges

    def range(self, node: cst.CSTNode) -> tuple[Location, Location]:
        r = self._ranges.get(node)
        if r is None:
            return Location(1, 1), Location(1, 1)
        return r

    def start(self, node: cst.CSTNode) -> Location:
        return self.range(node)[0]

    def line(self, node: cst.CSTNode) -> int:
        return self.range(node)[0].row


def _generate(module: cst.Module, node: cst.CSTNode, targets: frozenset) -> tuple[str, dict]:
    """The code of `node` (the module, or one of its top-level statements) and the token
    marks of `targets` in it."""
    state = _LocatingState(default_indent=module.default_indent, default_newline=module.default_newline,
                           targets=targets)
    node._codegen(state)
    tokens = state.tokens
    if not state.marks:
        return "".join(tokens), {}
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
    marks = {node: (offsets[s], offsets[e if e is not None else s]) for node, (s, e, _) in state.marks.items()}
    return "".join(tokens), marks


def _ranges(code: str, marks: dict, rows_before: int) -> dict:
    """Locations of marked (start, end) offsets in `code`, which starts a line after
    `rows_before` lines of the file."""
    out = {}
    # Where each line starts, once: counting the newlines before each offset cost the length of
    # the code per node (quadratic when a long module is generated for many findings).
    starts = [0] + [m.end() for m in re.finditer("\n", code)]
    for node, (start, end) in marks.items():
        # Whitespace-inclusive ranges may start with indentation or blank lines: trim them.
        while start < end and code[start] in " \t\r\n\f\\":
            start += 1
        while end > start and code[end - 1] in " \t\r\n\f":
            end -= 1
        a, b = _location(starts, start), _location(starts, end)
        out[node] = (Location(a.row + rows_before, a.column), Location(b.row + rows_before, b.column))
    return out


def _location(starts: list[int], offset: int) -> Location:
    """The 1-based row and column of `offset`, given where each line starts."""
    row = bisect.bisect_right(starts, offset)
    return Location(row, offset - starts[row - 1] + 1)
