"""Re-parsing an edited document: only the top-level statements the edit touched.

The language server analyses every version of a document the editor sends. libcst has no
incremental parser, and its parse of a 2,000-line file takes ~100 ms on the benchmark machine
(flax's `nnx/transforms/compilation.py`): most of an editor round-trip. An edit touches a few
lines, though, and a top-level statement's parse depends only on its own text and its
neighbours' (which of them owns the comment and blank lines between them). So
`IncrementalParser` keeps the last text and its module; for a new text it finds the changed
span (common prefix and suffix), re-parses the statements it overlaps plus one unchanged
statement on each side (so that the ownership of the lines at the region's edges is decided
as a full parse decides it), and splices the new statements between the unchanged ones,
which are reused as they are (libcst nodes are immutable).

The result is the module a full parse would give: the same code, and structurally equal
(tests/test_reparse.py checks both on random edits of real files). Where that cannot be
guaranteed cheaply, it parses the whole text instead:
- edits in the first statement, or at or before the first indented block (they decide the
  module's newline, indentation and encoding, which the unchanged statements render with);
- a region whose parse is not a plain run of statements (lines left over after its last
  statement, that a full parse would give to the next one), or that does not render back
  to its own text under the module's settings;
- a region that does not parse on its own (an unclosed bracket or string, a dedent that
  joins statements): the whole text is parsed, and reports the error if there is one.
A text that does not parse leaves the last one that did as the base for the next edit.
"""
from __future__ import annotations

import re
import threading
from bisect import bisect_left, bisect_right

import libcst as cst
from libcst._nodes.internal import CodegenState


class IncrementalParser:
    """Parses successive versions of one document (see the module docstring). Thread-safe: the
    server's analysis thread and its message thread (code actions) may both parse."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._text: str | None = None
        self._module: cst.Module | None = None
        self._starts: list[int] = []  # where each top-level statement (leading lines included) starts
        self._body_end = 0  # where the module's footer starts
        self._first_block = 0  # the first top-level statement with an indented block
        # What the last parse did: None for a full parse, else (statements re-parsed, statements).
        self.last_reparsed: tuple[int, int] | None = None

    def parse(self, text: str) -> cst.Module:
        """The module of `text`; raises what `libcst.parse_module` raises."""
        with self._lock:
            return self._parse(text)

    def _parse(self, text: str) -> cst.Module:
        if self._module is not None and self._text is not None:
            if text == self._text:
                return self._module
            spliced = self._reparse(text)
            if spliced is not None:
                return spliced
        self.last_reparsed = None
        module = cst.parse_module(text)
        self._remember(text, module, *_statement_starts(module, len(text)))
        return module

    def _remember(self, text: str, module: cst.Module, starts: list[int], body_end: int) -> None:
        self._text, self._module, self._starts, self._body_end = text, module, starts, body_end
        self._first_block = next((i for i, s in enumerate(module.body) if _has_indented_block(s)), len(module.body))

    def _reparse(self, text: str) -> cst.Module | None:
        old, module = self._text, self._module
        assert old is not None and module is not None
        n = len(module.body)
        prefix = _common_prefix(old, text)
        suffix = _common_suffix(old, text, min(len(old), len(text)) - prefix)
        changed_end = len(old) - suffix  # the changed span of the old text: [prefix, changed_end)
        starts = self._starts
        ends = [*starts[1:], self._body_end]
        lo = bisect_left(ends, prefix) - 1  # the first statement whose text reaches the change, less one
        hi = bisect_right(starts, changed_end)  # the last statement that starts at or before its end, plus one
        if lo < 1 or lo <= self._first_block or lo >= n:
            return None
        to_end = hi >= n - 1
        hi = min(hi, n - 1)
        start = starts[lo]
        delta = len(text) - len(old)
        end = len(text) if to_end else ends[hi] + delta
        if not (start <= prefix and end - delta >= changed_end):
            return None
        region_text = text[start:end]
        try:
            region = cst.parse_module(region_text)
        except Exception:  # the region alone is not valid: let the whole text decide
            return None
        if not region.body or (region.footer and not to_end):
            return None
        first = region.body[0]
        if region.header:  # the first statement's leading lines: a module puts them in its header
            first = first.with_changes(leading_lines=(*region.header, *first.leading_lines))
        new = [first, *region.body[1:]]
        changes: dict = {"body": (*module.body[:lo], *new, *module.body[hi + 1:])}
        if to_end:
            changes.update(footer=region.footer, has_trailing_newline=region.has_trailing_newline)
        spliced = module.with_changes(**changes)
        # The new statements must render as their text with the module's settings.
        codes = [spliced.code_for_node(s) for s in new]
        rendered = "".join(codes)
        if to_end:
            tail = "".join(spliced.code_for_node(line) for line in region.footer)
            whole = rendered + tail
            if not (whole == region_text or (not region.has_trailing_newline and whole.startswith(region_text)
                                              and whole[len(region_text):] in ("\n", "\r\n", "\r"))):
                return None
            body_end = start + len(rendered)
        else:
            if rendered != region_text:
                return None
            body_end = self._body_end + delta
        new_starts = starts[:lo]
        at = start
        for code in codes:
            new_starts.append(at)
            at += len(code)
        new_starts += [s + delta for s in starts[hi + 1:]]
        self._remember(text, spliced, new_starts, min(body_end, len(text)))
        self.last_reparsed = (len(new), len(spliced.body))
        return spliced


def _common_prefix(a: str, b: str) -> int:
    """Length of the common prefix (binary search over slice comparisons, done in C)."""
    lo, hi = 0, min(len(a), len(b))
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[:mid] == b[:mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo


def _common_suffix(a: str, b: str, limit: int) -> int:
    """Length of the common suffix, at most `limit`."""
    lo, hi = 0, max(0, limit)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[len(a) - mid:] == b[len(b) - mid:]:
            lo = mid
        else:
            hi = mid - 1
    return lo


def _has_indented_block(statement: cst.CSTNode) -> bool:
    """A compound statement with an indented body: the first one decides the module's indent."""
    return isinstance(statement, cst.BaseCompoundStatement) and isinstance(statement.body, cst.IndentedBlock)


class _BoundaryState(CodegenState):
    """Code generation that notes where each top-level statement starts, in tokens."""

    def __init__(self, module: cst.Module) -> None:
        super().__init__(default_indent=module.default_indent, default_newline=module.default_newline)
        self.statements = {id(s) for s in module.body}
        self.marks: list[int] = []

    def before_codegen(self, node: cst.CSTNode) -> None:
        if id(node) in self.statements and not self.indent_tokens:
            self.marks.append(len(self.tokens))


def _statement_starts(module: cst.Module, length: int) -> tuple[list[int], int]:
    """(offset of each top-level statement, offset where the footer starts), from one pass of
    code generation (a full parse pays it once; an incremental one keeps the offsets)."""
    state = _BoundaryState(module)
    for h in module.header:
        h._codegen(state)
    for s in module.body:
        s._codegen(state)
    body_end_token = len(state.tokens)
    wanted = [*state.marks, body_end_token]
    offsets = []
    total = 0
    w = 0
    for i, tok in enumerate(state.tokens):
        while w < len(wanted) and wanted[w] == i:
            offsets.append(total)
            w += 1
        total += len(tok)
    while w < len(wanted):
        offsets.append(total)
        w += 1
    return offsets[:-1], min(offsets[-1], length)


# A text longer than 8 pieces (512 KB: libcst would hold ~230 MB at once) is parsed in pieces of
# this size (`parse_in_pieces`); a shorter one whole, as it costs less time.
PIECE = 64 * 1024
_CUT = re.compile(r"\n(?=[^\s#)\]}])")


def parse_in_pieces(text: str, piece: int = PIECE) -> cst.Module:
    """`libcst.parse_module(text)`, in pieces of about `piece` characters: libcst's native parser
    holds about 450 bytes per byte of source while it parses (a 2 MB file: 900 MB at once), the
    tree it returns a tenth of that. The text is given to an IncrementalParser one longer
    prefix at a time, each cut where a line starts a top-level statement (tried; a cut inside
    a string does not parse and the next one is tried), so each step parses one piece and the
    statement before it, and the result is the module a full parse gives (the incremental
    parser's guarantee). Anything it cannot do so (one statement longer than a few pieces, a text
    that does not parse) is parsed whole, as before; raises what `libcst.parse_module` raises."""
    if len(text) <= 8 * piece:
        return cst.parse_module(text)
    parser = IncrementalParser()
    cuts = [m.end() for m in _CUT.finditer(text)]
    done = 0  # the prefix parsed so far
    i = 0
    while done < len(text):
        target = done + piece
        while i < len(cuts) and cuts[i] < target:
            i += 1
        end = len(text) if i >= len(cuts) or len(text) - cuts[i] < piece // 2 else cuts[i]
        while True:
            prefix = text[:end]
            if parser._module is None:
                try:
                    module = cst.parse_module(prefix)
                except Exception:
                    module = None
                if module is not None and any(_has_indented_block(s) for s in module.body[:-1]):
                    parser._remember(prefix, module, *_statement_starts(module, len(prefix)))
                else:
                    module = None  # the first piece must hold an indented block and a statement after it
            else:
                with parser._lock:
                    module = parser._reparse(prefix)
            if module is not None:
                break
            if end >= len(text) or end - done > 4 * piece:
                return cst.parse_module(text)  # not in pieces: whole, as a plain parse
            i += 1
            end = len(text) if i >= len(cuts) else cuts[i]
        done = end
    return module
