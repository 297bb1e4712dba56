"""The `%%jaxfuse_lint` cell magic (`%load_ext jaxfuse_lint`).

    %%jaxfuse_lint [--unsafe-fixes] [--run] [--no-fix]
    <cell>

Lints the cell with the notebook's earlier cells as context (IPython's `In`
history: a function defined in an earlier cell and jitted in this one is
traced), prints only this cell's findings, with rows counted from the cell's
first line, and offers the fixed cell as the next input
(`set_next_input`). It runs nothing: the cell itself is executed only with
`--run`, after linting, as written. Like `check`, it never imports jax.

IPython magics and shell escapes in the cells are turned into plain Python by
IPython's own input transformer for the analysis, and kept as written in the
fixed cell.
"""
from __future__ import annotations

import difflib
import os
import shlex
from dataclasses import dataclass, field
from typing import Any

CELL_NAME = "<cell>"


@dataclass
class CellReport:
    """What linting one cell found, and the cell with fixes applied (None when nothing changes)."""

    diagnostics: list[Any] = field(default_factory=list)  # rows relative to the cell
    fixed_cell: str | None = None
    notes: list[str] = field(default_factory=list)

    def render(self) -> str:
        from jaxfuse_lint.core.diagnostics import Applicability

        lines = []
        for d in self.diagnostics:
            mark = " [*]" if d.fix is not None and d.fix.applicability is Applicability.SAFE else ""
            lines.append(f"{CELL_NAME}:{d.location.row}:{d.location.column}: {d.code}{mark} {d.message}")
        if not self.diagnostics:
            lines.append("All checks passed!")
        lines += [f"note: {n}" for n in self.notes]
        return "\n".join(lines)


def lint_cell(cell: str, context_cells: list[str], *, settings: Any = None, unsafe: bool = False,
              transform: Any = None) -> CellReport:
    """Lint `cell` after `context_cells`; report only the cell's findings, rows relative to it.

    `transform` turns a cell's IPython syntax into Python (IPython's
    `transform_cell`); without it cells are taken as Python.
    """
    from jaxfuse_lint.engine.pipeline import check_source, fix_source

    if settings is None:
        from jaxfuse_lint.core.config import load_settings

        settings = load_settings(None, start=os.getcwd())
    transform = transform or (lambda text: text)
    # Where each earlier cell's lines sit in the concatenation (messages name lines).
    starts: list[tuple[int, int]] = []  # (first line, cell number as In[] counts)
    parts: list[str] = []
    line = 1
    for number, c in enumerate(context_cells, 1):
        if not c.strip():
            continue
        text = _ensure_newline(transform(c))
        starts.append((line, number))
        parts.append(text)
        line += text.count("\n")
    prefix = "".join(parts)
    python_cell = _ensure_newline(transform(cell))
    offset = prefix.count("\n")
    combined = prefix + python_cell
    cell_lines = python_cell.count("\n")

    report = CellReport()
    result = check_source(combined, CELL_NAME, settings)
    report.notes += result.errors
    for d in result.diagnostics:
        if offset < d.location.row <= offset + cell_lines:
            report.diagnostics.append(_shift(d, offset, starts))
    if not any(d.fix is not None for d in report.diagnostics):
        return report
    outcome = fix_source(combined, CELL_NAME, settings, unsafe=unsafe)
    first = _cell_start(combined, outcome.source, offset)
    if first is None:
        report.notes.append("one fix rewrites this cell together with earlier cells; fix the notebook "
                            "with `jaxfuse-lint --fix` instead")
        return report
    fixed_lines = outcome.source.splitlines(keepends=True)
    if "".join(fixed_lines[:first]) != prefix:
        report.notes.append("the fixes also change earlier cells; only this cell is offered")
    fixed_cell = _restore_magics(cell, python_cell, "".join(fixed_lines[first:]))
    if fixed_cell != _ensure_newline(cell):
        report.fixed_cell = fixed_cell
    return report


def _ensure_newline(text: str) -> str:
    return text if text.endswith("\n") else text + "\n"


def _shift(d: Any, offset: int, starts: list[tuple[int, int]]) -> Any:
    import dataclasses
    import re

    from jaxfuse_lint.core.diagnostics import Location

    def moved(loc: Location) -> Location:
        return dataclasses.replace(loc, row=loc.row - offset)

    fix = d.fix
    if fix is not None:
        fix = dataclasses.replace(fix, edits=tuple(
            dataclasses.replace(e, location=moved(e.location), end_location=moved(e.end_location)) for e in fix.edits))

    def renumber(m: re.Match) -> str:
        row = int(m.group(1))
        if row > offset:
            return f"line {row - offset}"
        first, number = max((s for s in starts if s[0] <= row), default=(1, 0))
        return f"In[{number}] line {row - first + 1}"

    message = re.sub(r"\bline (\d+)\b", renumber, d.message)
    return dataclasses.replace(d, message=message, location=moved(d.location), end_location=moved(d.end_location),
                               fix=fix,
                               noqa_row=None if d.noqa_row is None else d.noqa_row - offset)


def _cell_start(original: str, fixed: str, start: int) -> int | None:
    """The line of `fixed` where the cell (original lines `start`..end, the tail of the text) begins;
    None when one change covers both earlier cells and the cell."""
    matcher = difflib.SequenceMatcher(None, original.splitlines(keepends=True), fixed.splitlines(keepends=True),
                                      autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal" and i1 <= start < i2:
            return j1 + (start - i1)
        if tag != "equal" and i1 < start < i2:
            return None
        if tag != "equal" and start == i1:
            return j1  # a change starting at the cell's first line is the cell's
        if tag != "equal" and start == i2 and i1 != i2:
            return j2  # a change ending where the cell begins belongs to the earlier cells
    return len(fixed.splitlines())


def _restore_magics(raw: str, python: str, fixed: str) -> str:
    """Put IPython syntax back: a transformed line the fixes left alone is the raw line again."""
    raw_lines, py_lines = _ensure_newline(raw).splitlines(keepends=True), python.splitlines(keepends=True)
    if raw_lines == py_lines or len(raw_lines) != len(py_lines):
        return fixed
    back = {py: r for r, py in zip(raw_lines, py_lines) if r != py}
    return "".join(back.get(line, line) for line in fixed.splitlines(keepends=True))


# --- IPython ------------------------------------------------------------------------------


def register(ipython: Any) -> None:
    ipython.register_magic_function(_magic_for(ipython), magic_kind="cell", magic_name="jaxfuse_lint")


def _magic_for(ipython: Any):
    def jaxfuse_lint(line: str, cell: str) -> None:
        """Lint this cell (earlier cells are context) and offer the fixed cell.

        Options: --unsafe-fixes (also offer unsafe fixes), --no-fix (only report),
        --run (run the cell as written after linting it).
        """
        options = shlex.split(line)
        unknown = [o for o in options if o not in ("--unsafe-fixes", "--no-fix", "--run")]
        if unknown:
            print(f"jaxfuse-lint: unknown option {unknown[0]} (options: --unsafe-fixes, --no-fix, --run)")
            return
        history = list(ipython.user_ns.get("In", []))
        # In[-1] is this very cell (with its %%jaxfuse_lint line); In[0] is empty. Earlier
        # linted cells count as the code they hold.
        context = [_without_magic_line(c) for c in history[1:-1]] if history else []
        from jaxfuse_lint.core.config import ConfigError

        try:
            report = lint_cell(cell, context, unsafe="--unsafe-fixes" in options,
                               transform=_transformer(ipython))
        except ConfigError as exc:
            print(f"jaxfuse-lint: error: {exc}")
            return
        print(report.render())
        if report.fixed_cell is not None and "--no-fix" not in options:
            ipython.set_next_input(report.fixed_cell.rstrip("\n"), replace=False)
            # Printed too: a notebook run headless (nbclient, papermill) has no next input to show.
            print("The fixed cell (also in the next input, where the front end shows one): review it and run it.")
            print(_indented(report.fixed_cell))
        if "--run" in options:
            ipython.run_cell(cell)

    return jaxfuse_lint


def _indented(cell: str) -> str:
    return "".join("    " + line if line.strip() else line for line in cell.rstrip("\n").splitlines(keepends=True))


def _without_magic_line(cell: str) -> str:
    if cell.lstrip().startswith("%%jaxfuse_lint"):
        return cell.lstrip().partition("\n")[2]
    return cell


def _transformer(ipython: Any):
    transform = getattr(ipython, "transform_cell", None)
    if transform is None:
        return None

    def safe(text: str) -> str:
        try:
            return transform(text)
        except Exception:  # noqa: BLE001 - IPython could not read it: lint it as written
            return text

    return safe
