"""IPython syntax in notebook cells: masked for parsing, put back byte for byte.

A line magic (`%load_ext x`), a shell escape (`!ls`, `x = !ls`), help (`?obj`, `obj??`)
or the header of a Python cell magic (`%%time`) becomes a placeholder statement of as
many lines (`pass`, or `x = ...` for an assignment) tagged with its index, so the cell
parses as Python and rows do not move. `%time stmt` / `%timeit stmt` keep their
statement, which is Python: the magic becomes `if 1:` padded to the same width, so the
statement is analysed (and fixed) with the columns it has. After fixes, the tagged lines
are replaced by the originals; a fix that moved or dropped one is refused.
"""
from __future__ import annotations

import re

from jaxfuse_lint.core.lines import split_lines

# Cell magics whose body is Python run by the kernel: only the `%%` line is masked.
PYTHON_CELL_MAGICS = frozenset({"time", "timeit", "capture", "prun", "debug", "python", "python3", "pypy"})

_MAGIC_TAG = "# jaxfuse-lint-magic {index}"
_MAGIC_RE = re.compile(r"# jaxfuse-lint-magic (\d+)(\+?)\s*\Z")  # `+`: a continuation line
# `%time stmt` / `%timeit stmt`: the statement is Python and is analysed (and fixed); the
# magic becomes `if 1:` padded to the same width, so columns stay where they were.
_TIMED = re.compile(r"^([ \t]*)(%timeit |%time )(?=[^\s-])")
_TIMED_ANY = re.compile(r"^([ \t]*)(%timeit\s+|%time\s+)")
_TIMED_TAG = "  # jaxfuse-lint-timed {index}"
_TIMED_RE = re.compile(r"  # jaxfuse-lint-timed (\d+)\Z")
# `x = !ls`, `a, b = %sx cmd`: an assignment from a shell escape or a line magic.
_ASSIGN_ESCAPE = re.compile(r"^(\s*)([A-Za-z_][\w.]*(?:\s*,\s*[A-Za-z_][\w.]*)*)\s*=\s*[!%]")
# `obj?`, `obj.attr??`: help.
_HELP_SUFFIX = re.compile(r"^\s*[A-Za-z_][\w.]*\?\??\s*$")


class MaskError(ValueError):
    """A fix changed masked IPython syntax (the fix is refused)."""


def _escape_kind(line: str, first: bool) -> str | None:
    """'stmt' for a line that is IPython syntax, 'assign' for `x = !cmd`, else None."""
    stripped = line.strip()
    if not stripped:
        return None
    if first and stripped.startswith("%%"):
        return "stmt"
    if stripped[0] in "%!?" or (stripped.startswith("%%")):
        return "stmt"
    if _HELP_SUFFIX.match(line):
        return "stmt"
    if _ASSIGN_ESCAPE.match(line):
        return "assign"
    return None


class _Scanner:
    """Just enough of the tokenizer to know whether a line starts inside a string or brackets
    (where `%` and `!` are Python)."""

    def __init__(self) -> None:
        self.quote: str | None = None  # the open string's delimiter
        self.depth = 0
        self.continued = False  # the previous line ended with a backslash

    @property
    def at_statement_start(self) -> bool:
        return self.quote is None and self.depth == 0 and not self.continued

    def feed(self, line: str) -> None:
        i, n = 0, len(line)
        while i < n:
            c = line[i]
            if self.quote is not None:
                if c == "\\":
                    i += 2
                    continue
                if line.startswith(self.quote, i):
                    i += len(self.quote)
                    self.quote = None
                    continue
                i += 1
                continue
            if c == "#":
                break
            if c in "'\"":
                triple = line[i:i + 3]
                self.quote = triple if triple in ("'''", '"""') else c
                i += len(self.quote)
                continue
            if c in "([{":
                self.depth += 1
            elif c in ")]}":
                self.depth = max(0, self.depth - 1)
            i += 1
        body = line.rstrip("\r\n")
        self.continued = body.endswith("\\") and self.quote is None
        if self.quote is not None and len(self.quote) == 1:
            self.quote = None  # an unterminated one-line string ends with its line


def _timed(line: str) -> str | None:
    """`%time f(x)` as `if 1: f(x)` (same width), when the statement is one simple line."""
    m = _TIMED.match(line)
    if m is None:
        return None
    body = line.rstrip("\r\n")
    if "#" in body:
        return None  # a comment (or a `#` in a string): the tag could not go at the end
    if _escape_kind(body[m.end():], False) is not None:
        return None  # `%time !cmd`, `%time x = %env`: IPython syntax, masked as a whole
    probe = _Scanner()
    probe.feed(body[m.end():])
    if not probe.at_statement_start:
        return None  # spans lines
    return m.group(1) + "if 1:".ljust(len(m.group(2))) + body[m.end():]


def _timed_assignment(line: str) -> re.Match | None:
    """`%time x = !cmd`: the assignment from IPython syntax that the magic times (its target
    stays bound in the masked cell)."""
    m = _TIMED_ANY.match(line)
    return _ASSIGN_ESCAPE.match(line[m.end():]) if m is not None else None


def _untime(body: str, ending: str, original: str) -> str:
    """A masked `%time` line (perhaps changed by a fix) with its magic back."""
    m = _TIMED.match(original)
    assert m is not None
    stripped = body.lstrip(" \t")
    indent = body[: len(body) - len(stripped)]
    pad = "if 1:".ljust(len(m.group(2)))
    if not stripped.startswith(pad):
        raise MaskError("a fix changed the statement of a %time magic")
    line = indent + m.group(2) + stripped[len(pad):] + ending
    return original if line == original or (line.rstrip("\r\n") == original.rstrip("\r\n")) else line


def mask_lines(lines: list[str], magics: list[list[str]]) -> list[str]:
    """The cell's lines with each IPython escape replaced by a placeholder of as many lines
    (`pass`, or `x = ...` for an assignment, tagged with its index into `magics`)."""
    out: list[str] = []
    scanner = _Scanner()
    i = 0
    while i < len(lines):
        line = lines[i]
        kind = _escape_kind(line, i == 0) if scanner.at_statement_start else None
        timed = _timed(line) if kind == "stmt" and not (i == 0 and line.startswith("%%")) else None
        if timed is not None:
            index = len(magics)
            magics.append([line])
            out.append(timed + _TIMED_TAG.format(index=index) + line[len(line.rstrip("\r\n")):])
            scanner.feed(timed)
            i += 1
            continue
        if kind is None:
            scanner.feed(line)
            out.append(line)
            i += 1
            continue
        group = [line]
        while group[-1].rstrip("\r\n").endswith("\\") and i + len(group) < len(lines):
            group.append(lines[i + len(group)])
        index = len(magics)
        magics.append(group)
        tag = _MAGIC_TAG.format(index=index)
        indent = line[: len(line) - len(line.lstrip())]
        assigned = _ASSIGN_ESCAPE.match(line) if kind == "assign" else _timed_assignment(line)
        if assigned is not None:
            stmt = f"{indent}{assigned.group(2)} = ...  {tag}"
        else:
            stmt = f"{indent}pass  {tag}"
        for k, g in enumerate(group):
            ending = g[len(g.rstrip("\r\n")):]
            out.append((stmt if k == 0 else tag + "+") + ending)
        i += len(group)
    return out


def unmask_lines(lines: list[str], magics: list[list[str]], used: set[int]) -> list[str]:
    """Masked lines back to the cell's text; `used` collects the magics put back. Raises
    MaskError when a fix moved, split or duplicated a masked line."""
    out = []
    continuation: tuple[int, int] | None = None  # (magic, continuation lines still to come)
    for line in lines:
        body = line.rstrip("\r\n")
        timed = _TIMED_RE.search(body)
        if timed is not None and not (continuation is not None and continuation[1]):
            index = int(timed.group(1))
            if index >= len(magics) or index in used:
                raise MaskError("a fix duplicated an IPython magic")
            used.add(index)
            out.append(_untime(body[: timed.start()], line[len(body):], magics[index][0]))
            continue
        m = _MAGIC_RE.search(body)
        if continuation is not None and continuation[1]:
            if m is None or not m.group(2) or int(m.group(1)) != continuation[0]:
                raise MaskError("a fix split an IPython magic or shell escape")
            continuation = (continuation[0], continuation[1] - 1)
            continue
        if m is None:
            out.append(line)
            continue
        index = int(m.group(1))
        if m.group(2) or index >= len(magics) or index in used:
            raise MaskError("a fix duplicated an IPython magic or shell escape")
        used.add(index)
        out.extend(magics[index])
        continuation = (index, len(magics[index]) - 1)
    if continuation is not None and continuation[1]:
        raise MaskError("a fix split an IPython magic or shell escape")
    return out


def unmask_text(content: str, magics: list[list[str]]) -> str:
    """Text with the masked lines it carries put back (an edit's new text: no checks)."""
    out = []
    for line in split_lines(content):
        body = line.rstrip("\r\n")
        timed = _TIMED_RE.search(body)
        m = _MAGIC_RE.search(body)
        if timed is not None and int(timed.group(1)) < len(magics):
            try:
                out.append(_untime(body[: timed.start()], line[len(body):], magics[int(timed.group(1))][0]))
            except MaskError:
                out.append(line)
        elif m is not None and int(m.group(1)) < len(magics):
            if not m.group(2):
                out.extend(magics[int(m.group(1))])
        else:
            out.append(line)
    return "".join(out)
