"""Jupyter notebooks (`.ipynb`) as a source: cells in, cells out.

A notebook is read with nbformat's reader, and its Python code cells are joined into one
module, so that analysis crosses cells the way the kernel's namespace does (a function
defined in one cell and jitted in a later one is traced). Between two cells goes a
boundary comment line; rows map back to (cell, row in cell), with ruff's conventions:
cells are numbered 1-based among *all* cells (markdown included), diagnostics print as
`nb.ipynb:cell 4:12:5`, and JSON output carries the cell in its `"cell"` field.

IPython syntax (`%time`, `%%timeit` cell headers, `!ls`, `x = !cmd`, `?obj`, `obj??`)
is masked for parsing and put back byte for byte when fixes are written
(ipython_syntax.py). A cell IPython dedents before running it (its first code line is
indented) is joined as the body of an `if 1:` boundary line when every code line shares
that indentation (rows, columns and fixes stay exact), else dedented line by line as
IPython <= 8 does (columns mapped back, no fixes in that cell). Cells
whose magic makes them another language (`%%bash`, `%%writefile`, ...) and non-Python
notebooks are left out.

Fixes are applied to the joined module by the engine; the fixed text is split back at the
boundary lines and each changed cell's `source` value is replaced in the notebook's own JSON
text, in place (json_splice.py): every other byte (outputs, metadata, line breaks, escapes,
number spellings, duplicate keys) stays as it was. A fix that would move or remove a boundary
or a magic is refused (the notebook is left as it was).
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, replace, field
from typing import Any, Callable

from jaxfuse_lint.core.diagnostics import Diagnostic, Edit, Fix, Location
from jaxfuse_lint.parse.ipython_syntax import PYTHON_CELL_MAGICS, MaskError, mask_lines, unmask_lines, unmask_text
from jaxfuse_lint.core.lines import split_lines

SUFFIX = ".ipynb"

_BOUNDARY = "# jaxfuse-lint-cell {index}\n"
# Before a cell IPython dedents (its first code line is indented): the cell's lines become
# the body of `if 1:`, so rows and columns stay the cell's own.
_BOUNDARY_INDENTED = "if 1:  # jaxfuse-lint-cell {index}\n"
_BOUNDARY_RE = re.compile(r"(?:if 1:  )?# jaxfuse-lint-cell (\d+)\r?\n?\Z")
_INDENT = re.compile(r"[ \t]+")
# How messages refer to other lines (rules' `LineOf` parts).
_LINE_REF = re.compile(r"\b(line) (\d+)\b")
_JSON_SPACE = re.compile(r"[ \t\n\r]*")


def is_boundary_line(line: str) -> bool:
    """Whether `line` (a comment) is the boundary this module puts between two cells."""
    return _BOUNDARY_RE.fullmatch(line) is not None


def is_notebook(filename: str | None) -> bool:
    return bool(filename) and str(filename).lower().endswith(SUFFIX)


class NotebookError(ValueError):
    """The file is not a notebook this tool can read (its message is shown to users)."""


@dataclass
class Cell:
    number: int  # 1-based among all cells
    source: str  # the cell's text as stored
    start_row: int  # first row of the cell in the joined module (1-based)
    n_rows: int  # rows the cell takes in the joined module (without the boundary)
    indent: str = ""  # the indentation IPython removes from every line (`_dedented_by`)
    # IPython <= 8 removes the first line's indentation only from the lines that start with it
    # (`_first_line_indent`): those rows of the module are shifted left by len(shift) columns.
    shift: str = ""
    shifted_rows: frozenset = frozenset()
    joined: str = ""  # the cell's text as it is in the module (a shifted cell must come back unchanged)


@dataclass
class Notebook:
    """A parsed notebook and the Python module its code cells make."""

    raw: str  # the file's text
    # The JSON as far as it is read (`_outline`): the version, the kernel's language, each cell's
    # type and source.
    data: dict[str, Any]
    cells: list[Cell]  # the code cells that are in the module, in order
    module: str  # the joined, masked Python source
    magics: list[list[str]] = field(default_factory=list)  # original lines of each masked escape
    python: bool = True  # False: a notebook in another language (nothing to check)
    # Cells that do not parse (`isolate_unparsable`): blank in the module, never written back.
    broken: set[int] = field(default_factory=set)
    # Where each cell's `source` value is in `raw` (None: the cell has none).
    source_spans: list[tuple[int, int] | None] = field(default_factory=list)

    # -- rows -------------------------------------------------------------------------------------
    def cell_at(self, row: int) -> tuple[Cell, int] | None:
        """(cell, row in cell) of a row of the module; a boundary row belongs to the cell before."""
        found = None
        for cell in self.cells:
            if cell.start_row <= row:
                found = cell
            else:
                break
        if found is None:
            return None
        return found, row - found.start_row + 1

    def module_row(self, cell: int | None, row: int) -> int:
        """The row of the module that is ROW of CELL (`cell_at`'s inverse)."""
        start = next((c.start_row for c in self.cells if c.number == cell), 1)
        return start + row - 1

    def locate(self, loc: Location) -> tuple[int, Location]:
        hit = self.cell_at(loc.row)
        if hit is None:
            return 1, loc
        cell, row = hit
        if row > cell.n_rows + 1:
            row = cell.n_rows + 1
        if row in cell.shifted_rows:
            return cell.number, Location(row, loc.column + len(cell.shift))
        return cell.number, Location(row, loc.column)

    def to_cells(self, d: Diagnostic) -> Diagnostic:
        """A diagnostic on the module, located in its cell (its edits too; a fix whose edits
        cross a cell boundary cannot be shown per cell and is left out)."""
        cell, start = self.locate(d.location)
        end_cell, end = self.locate(d.end_location)
        if end_cell != cell:
            end = start
        fix = d.fix
        if fix is not None and any(c.shift and c.number == cell for c in self.cells):
            fix = None  # a cell IPython dedents line by line: its fixes cannot be mapped back
        if fix is not None:
            edits = []
            for e in fix.edits:
                c1, s = self.locate(e.location)
                c2, t = self._edit_end(e, c1)
                if c1 != c2:
                    fix = None
                    break
                content = e.content
                cell_obj = next(c for c in self.cells if c.number == c1) if self.cells else None
                if (cell_obj is not None and t.row > cell_obj.n_rows and content.endswith("\n")
                        and not cell_obj.source.endswith("\n") and cell_obj.n_rows):
                    # The module gave the cell's last line a newline the cell does not have:
                    # the edit ends at the end of that line, and adds no final newline.
                    end_of_cell = Location(cell_obj.n_rows, len(split_lines(cell_obj.source)[-1]) + 1)
                    if s.row > cell_obj.n_rows:  # an insertion after the last line
                        s, content = end_of_cell, "\n" + content[:-1]
                    else:
                        content = content[:-1]
                    t = end_of_cell
                edits.append(Edit(unmask_text(content, self.magics), s, t, cell=c1))
            else:
                fix = Fix(fix.applicability, fix.message, tuple(edits), fix.detail)
        noqa = self.locate(Location(d.noqa_row, 1))[1].row if d.noqa_row else None
        premises = tuple(replace(p, source=self._lines_in_cells(p.source, cell)) for p in d.premises)
        return Diagnostic(code=d.code, name=d.name, message=self._lines_in_cells(d.message, cell),
                          filename=d.filename, location=start, end_location=end, fix=fix, noqa_row=noqa,
                          extra=dict(d.extra), cell=cell, premises=premises)

    def _lines_in_cells(self, message: str, cell: int) -> str:
        """Messages name other lines ('decorated with `jax.jit` on line 31'): rows of the
        module, told as rows of their cell, with the cell when it is another one."""
        def repl(m: re.Match) -> str:
            number, row = self.locate(Location(int(m.group(2)), 1))
            row_text = f"{m.group(1)} {row.row}"
            return row_text if number == cell else f"cell {number}, {m.group(1)} {row.row}"

        return _LINE_REF.sub(repl, message)

    def _edit_end(self, e: Edit, start_cell: int) -> tuple[int, Location]:
        # Whole-line edits end at column 1 of the row after them: that row may be the next
        # boundary (or past the end), which still belongs to the edit's own cell.
        for cell in self.cells:
            if cell.number == start_cell and e.end_location.row <= cell.start_row + cell.n_rows:
                return start_cell, Location(e.end_location.row - cell.start_row + 1, e.end_location.column)
        return self.locate(e.end_location)

    # -- cells that do not parse ----------------------------------------------------------------------
    def isolate_unparsable(self, verdict: Callable[[str], Diagnostic | str | None]) -> list[Diagnostic | str]:
        """IPython compiles each cell on its own, so one cell's syntax error stops only that cell.
        `verdict` judges each cell's text (placed at its own rows of the module, so that what it
        reports is located like any diagnostic of the module); the cells it rejects are blanked
        in the module (same rows: everything else stays where it was) and left out of the
        fixes written back. Returns its diagnostics, located in their cells."""
        out: list[Diagnostic] = []
        lines = split_lines(self.module)
        for cell in self.cells:
            first = cell.start_row - 1 - (1 if cell.indent else 0)  # an indented cell's `if 1:` line
            if first < 0:
                continue
            text = "\n" * first + "".join(lines[first:cell.start_row - 1 + cell.n_rows])
            found = verdict(text)
            if found is not None:
                self.broken.add(cell.number)
                if isinstance(found, str):
                    out.append(found.replace(": not checked:", f": cell {cell.number} not checked:", 1))
                else:
                    found.message = found.message.replace("Could not parse file:", "Could not parse this cell "
                                                          "(the other cells are checked):", 1)
                    out.append(self.to_cells(found))
        if self.broken:
            kept = []
            for cell in self.cells:
                body = lines[cell.start_row - 1:cell.start_row - 1 + cell.n_rows]
                if cell.number in self.broken and body:
                    body = [f"{cell.indent}pass\n"] + ["\n"] * (len(body) - 1)
                kept.append((cell, body))
            parts = []
            for cell, body in kept:
                parts.extend(lines[len(parts):cell.start_row - 1])  # the boundary line before it
                parts.extend(body)
            parts.extend(lines[len(parts):])
            self.module = "".join(parts)
        return out

    # -- writing back -----------------------------------------------------------------------------
    def cell_sources(self, fixed_module: str) -> dict[int, str]:
        """Cell number -> new source, from the fixed module; NotebookError when the fixed text
        no longer has the boundaries or the masked lines where they belong."""
        chunks: list[list[str]] = [[]]
        leading = bool(self.cells) and self.cells[0].indent != ""  # the first cell has a boundary too
        expected = [c.number for c in (self.cells if leading else self.cells[1:])]
        seen: list[int] = []
        for line in split_lines(fixed_module):
            m = _BOUNDARY_RE.fullmatch(line)
            if m:
                seen.append(int(m.group(1)))
                chunks.append([])
            else:
                chunks[-1].append(line)
        if seen != expected:
            raise NotebookError("a fix moved a cell boundary")
        if leading:
            if any(line.strip() for line in chunks[0]):
                raise NotebookError("a fix added code before an indented cell")
            chunks = chunks[1:]
        out: dict[int, str] = {}
        used: set[int] = set()
        for cell, lines in zip(self.cells, chunks):
            if cell.number in self.broken:  # not analysed, so not fixed: its text (and magics) as they were
                unmask_lines(split_lines(cell.joined), self.magics, used)
                out[cell.number] = cell.source
                continue
            if cell.indent and _dedented_by(lines) != cell.indent:
                raise NotebookError(f"a fix changed the indentation of cell {cell.number}, which IPython dedents")
            if cell.shift:
                if "".join(lines) != cell.joined:
                    raise NotebookError(f"a fix changed cell {cell.number}, which IPython dedents line by line")
                unmask_lines(lines, self.magics, used)  # its magics are accounted for
                out[cell.number] = cell.source
                continue
            try:
                text = "".join(unmask_lines(lines, self.magics, used))
            except MaskError as exc:
                raise NotebookError(str(exc)) from None
            if text != cell.source and not cell.source.endswith("\n\n"):
                # The module puts blank lines after what a fix adds at a cell's end (an
                # import before the next cell's code): a cell keeps the ending it had.
                text = text.rstrip("\n") + ("\n" if cell.source.endswith("\n") else "")
            elif not cell.source.endswith("\n") and text.endswith("\n"):
                text = text[:-1]
            out[cell.number] = text
        if used != set(range(len(self.magics))):
            raise NotebookError("a fix removed an IPython magic or shell escape")
        return out

    def with_sources(self, sources: dict[int, str]) -> str:
        """The notebook's JSON text with these cell sources: only the bytes of those cells'
        `source` values change (json_splice.py), each written as the value it replaces was (a
        list of lines or one string, its layout and escapes); everything else stays as it was."""
        from jaxfuse_lint.parse.json_splice import string_list_like, splice

        replacements = {}
        for number, text in sources.items():
            span = self.source_spans[number - 1] if number <= len(self.source_spans) else None
            if span is None:  # read() found these cells: the text holds them
                raise NotebookError(f"cell {number}: its source cannot be written back (no `source` in the file)")
            start, end = span
            replacements[(start, end)] = string_list_like(self.raw, start, end, split_lines(text))
        return splice(self.raw, replacements)

    def cell_source(self, number: int) -> str:
        return source_text(self.data["cells"][number - 1])


def source_text(cell: dict[str, Any]) -> str:
    source = cell.get("source", "")
    return "".join(source) if isinstance(source, list) else str(source)


# -- reading ------------------------------------------------------------------------------------------

def read(raw: str) -> Notebook:
    """Parse a notebook's text; NotebookError for anything that is not an nbformat 4 notebook.

    Only what locating the cells needs is decoded (`_outline`): the cells' types and sources, the
    version and the kernel's language. Outputs, attachments and metadata are checked to be valid
    JSON and stepped over, never built in memory (a notebook with pictures is mostly base64)."""
    from nbformat import reader

    data, spans = _outline(raw)
    if "nbformat" not in data:  # nbformat's reader would call it version 1
        missing = " or \"metadata\"" if "metadata" not in data else ""
        if isinstance(data.get("cells"), list):
            raise NotebookError(f"a notebook without its metadata: no \"nbformat\" version{missing} (an nbformat 4 "
                                f"notebook has them; saving it from Jupyter writes them)")
        raise NotebookError(f"not a Jupyter notebook (no \"nbformat\" version{missing})")
    try:
        major, _minor = reader.get_version(data)
    except Exception:
        major = None
    if major != 4:
        raise NotebookError(f"nbformat {major if major is not None else 'unknown'} is not supported "
                            f"(only nbformat 4; `jupyter nbconvert --to notebook` upgrades it)")
    cells = data.get("cells")
    if not isinstance(cells, list) or not all(isinstance(c, dict) for c in cells):
        raise NotebookError("not a Jupyter notebook (no list of cells)")
    for i, c in enumerate(cells, 1):
        s = c.get("source", "")
        if not (isinstance(s, str) or (isinstance(s, list) and all(isinstance(x, str) for x in s))):
            raise NotebookError(f"cell {i}: its source is neither text nor a list of lines")
    nb = Notebook(raw, data, [], "", python=_is_python(data), source_spans=spans)
    if nb.python:
        _join(nb)
    return nb


# What is decoded of the notebook and of each cell (of the notebook's `metadata`, only the kernel's
# language): everything else is stepped over.
_TOP_KEYS = ("nbformat", "nbformat_minor", "metadata", "cells")
_METADATA_KEYS = ("language_info", "kernelspec")
_CELL_KEYS = ("cell_type", "source")


def _outline(raw: str) -> tuple[dict[str, Any], list[tuple[int, int] | None]]:
    """(the notebook's JSON as `json.loads` reads it, but of its cells only their type and source
    and of its metadata only the kernel's language; where each cell's source value is in the text).
    Anything else than a cell list is kept as it is, for the checks that say what is wrong with it.
    NotebookError when the text is not one valid JSON value."""
    from jaxfuse_lint.parse.json_splice import SpliceError, elements, members, skip_value

    start = _skip_space(raw, 0)
    try:
        end = skip_value(raw, start)
        if _skip_space(raw, end) != len(raw):
            raise SpliceError(f"extra data at offset {end}")
    except SpliceError as exc:
        raise NotebookError(f"not valid JSON ({_json_error(raw) or exc})") from None
    if raw[start:start + 1] != "{":
        raise NotebookError("not a Jupyter notebook (the JSON is not an object)")
    data: dict[str, Any] = {}
    spans: list[tuple[int, int] | None] = []
    for key, s, e in members(raw, start):
        if key not in _TOP_KEYS:
            continue
        if key == "metadata" and raw[s] == "{":
            data[key] = {k: json.loads(raw[vs:ve]) for k, vs, ve in members(raw, s) if k in _METADATA_KEYS}
        elif key == "cells" and raw[s] == "[":
            cells: list[Any] = []
            spans = []
            for cs, ce in elements(raw, s):
                if raw[cs] != "{":
                    cells.append(json.loads(raw[cs:ce]))
                    spans.append(None)
                    continue
                cell: dict[str, Any] = {}
                span = None
                for k, vs, ve in members(raw, cs):
                    if k in _CELL_KEYS:
                        cell[k] = json.loads(raw[vs:ve])
                        if k == "source":
                            span = (vs, ve)
                cells.append(cell)
                spans.append(span)
            data[key] = cells
        else:
            data[key] = json.loads(raw[s:e])
    return data, spans


def _skip_space(text: str, i: int) -> int:
    return _JSON_SPACE.match(text, i).end()  # type: ignore[union-attr]


def cell_outline(raw: str) -> tuple[list[Any], list[tuple[int, int] | None]]:
    """The cells of a notebook's text (their type and source only: `_outline`), and where each
    one's `source` value is in the text (None for a cell without one); NotebookError when the text
    is not JSON or has no list of cells."""
    data, spans = _outline(raw)
    cells = data.get("cells")
    if not isinstance(cells, list):
        raise NotebookError("not a Jupyter notebook (no list of cells)")
    return cells, spans


def cells_of(raw: str) -> list[Any]:
    """`cell_outline`'s cells."""
    return cell_outline(raw)[0]


def _json_error(raw: str) -> str | None:
    try:
        json.loads(raw)
    except json.JSONDecodeError as exc:
        # json's messages may end in "at" ("Unterminated string starting at"): the position follows.
        at = "" if exc.msg.endswith(" at") else " at"
        return f"{exc.msg}{at} line {exc.lineno} column {exc.colno}"
    return None


def _is_python(data: dict[str, Any]) -> bool:
    meta = data.get("metadata") or {}
    lang = (meta.get("language_info") or {}).get("name") or (meta.get("kernelspec") or {}).get("language")
    return not isinstance(lang, str) or lang.lower() in ("python", "python3", "ipython", "ipython3", "")


def _join(nb: Notebook) -> None:
    parts: list[str] = []
    row = 1
    for number, cell in enumerate(nb.data["cells"], 1):
        if cell.get("cell_type") != "code":
            continue
        text = source_text(cell)
        lines = split_lines(text)
        # IPython drops leading blank lines and the cell's indentation before it looks for `%%`; Colab
        # also reads its form lines (`#@title`, `#@markdown`) before a cell magic.
        first = next((ln.strip() for ln in lines if ln.strip() and not ln.lstrip().startswith("#@")), "")
        if first.startswith("%%"):
            name = first[2:].split(None, 1)[0] if first[2:].strip() else ""
            if name not in PYTHON_CELL_MAGICS:
                continue  # another language: not part of the module
        masked = mask_lines(lines, nb.magics)
        indent = _dedented_by(masked)
        shift = "" if indent else _first_line_indent(masked)
        shifted: frozenset = frozenset()
        if shift:
            shifted = frozenset(i for i, ln in enumerate(masked, 1) if ln.startswith(shift))
            masked = [ln[len(shift):] if i in shifted else ln for i, ln in enumerate(masked, 1)]
        if parts or indent:
            parts.append((_BOUNDARY_INDENTED if indent else _BOUNDARY).format(index=number))
            row += 1
        body = "".join(masked)
        if body and not body.endswith(("\n", "\r")):
            body += "\n"
        nb.cells.append(Cell(number, text, row, len(masked), indent, shift, shifted, body))
        parts.append(body)
        row += len(masked)
    nb.module = "".join(parts)


def _dedented_by(lines: list[str]) -> str:
    """The indentation IPython removes from a cell before running it: its first line with
    code (blank lines first are dropped) is indented, and every line with code starts with
    that same whitespace. (IPython up to 8 removes the first line's indentation from the
    lines that start with it; later versions `textwrap.dedent` the cell: where every code
    line starts with it, both remove exactly it.) "" when the cell is not indented, or when
    its lines disagree (then it is left as it is, as Python would see it)."""
    code = [ln for ln in lines if ln.strip() and not ln.lstrip().startswith("#")]
    if not code:
        return ""
    m = _INDENT.match(code[0])
    if m is None:
        return ""
    indent = m.group(0)
    return indent if all(ln.startswith(indent) for ln in code) else ""


def _first_line_indent(lines: list[str]) -> str:
    """IPython <= 8's `leading_indent`: the indentation of the first line (blank lines first are
    dropped), unless that line is a comment; it is then removed from every line that starts
    with it. Used where `_dedented_by` finds no indentation common to every code line."""
    first = next((ln for ln in lines if ln.strip()), "")
    m = _INDENT.match(first)
    if m is None or first.lstrip().startswith("#"):
        return ""
    return m.group(0)


# -- for the engine and the runner ------------------------------------------------------------------------

def decode_text(source: bytes | str) -> str:
    if isinstance(source, str):
        return source
    return source.decode("utf-8-sig")


def python_text(raw: str) -> str | None:
    """The notebook's code as one Python module (None when it cannot be read): what the
    project index prescans."""
    try:
        return read(raw).module
    except NotebookError:
        return None
