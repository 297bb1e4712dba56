"""Load a source string as an isolated module, so two versions of one file coexist.

`verify` needs the original and the fixed text of the same file alive at once:
each gets its own module object under a unique name. The module sits in
`sys.modules` only while its top level runs (dataclasses, pickling and
`typing.get_type_hints` look it up there) and is removed afterwards, so nothing
the user later imports sees it. The file's directory is put on `sys.path` for
the same span, so sibling imports (`from helpers import ...`) resolve as they
would when running the file.

A notebook (`.ipynb`) is read as the module its code cells make, joined in order
the way the kernel runs them (jaxfuse_lint.parse.notebook): IPython lines are masked
(shell escapes and other magics do nothing, `%time`/`%timeit` run their
statement once). Its text is put in `linecache` under the notebook's path, so
JAX's source lines and tracebacks show the cells' code rather than the JSON,
and `source_row` turns a row of that module into `cell N:ROW` for messages.
"""
from __future__ import annotations

import itertools
import linecache
import os
import sys
import traceback
import types
from dataclasses import dataclass
from typing import Any, Callable

from jaxfuse_lint.verify.errors import VerifyError

_counter = itertools.count()

# Called with a file's name just before its code runs (its top level, as it is imported): the
# command line sets it to say so on stderr (cli/output.announcing_user_code).
on_import: Callable[[str], None] | None = None

# Notebooks read by `read_source`, by absolute path: how their module rows map to cells.
_NOTEBOOKS: dict[str, Any] = {}


@dataclass(frozen=True)
class Target:
    """`PATH::FUNC` split into its parts; FUNC may be dotted (`Class.method`)."""

    path: str
    func: str

    def __str__(self) -> str:
        return f"{self.path}::{self.func}"


def parse_target(text: str) -> Target:
    path, sep, func = text.rpartition("::")
    if not sep or not path or not func:
        raise VerifyError(f"bad target `{text}`: expected PATH::FUNC such as model.py::step")
    # (`make.<locals>.kernel`: a nested function's qualified name, as Python and a profile name it.)
    if not all(part.isidentifier() or part == "<locals>" for part in func.split(".")) or func.endswith("<locals>"):
        raise VerifyError(f"bad target `{text}`: `{func}` is not a function name")
    return Target(path, func)


def read_source(path: str) -> str:
    """The Python text of PATH; for a notebook, the module its code cells make."""
    try:
        with open(path, encoding="utf-8") as fh:
            text = fh.read()
    except FileNotFoundError:
        raise VerifyError(f"{path}: file not found") from None
    except IsADirectoryError:
        raise VerifyError(f"{path}: is a directory, expected a Python file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise VerifyError(f"{path}: cannot read: {exc}") from None
    from jaxfuse_lint.parse.notebook import is_notebook

    return _notebook_module(path, text) if is_notebook(path) else text


def _notebook_module(path: str, raw: str) -> str:
    from jaxfuse_lint.parse.notebook import NotebookError, read

    try:
        nb = read(raw.lstrip("\ufeff"))
    except NotebookError as exc:
        raise VerifyError(f"{path}: {exc}") from None
    if not nb.python:
        raise VerifyError(f"{path}: not a Python notebook")
    if not nb.module.strip():
        raise VerifyError(f"{path}: the notebook has no Python code cells")
    register_notebook(path, nb)
    return nb.module


def register_notebook(path: str, nb: Any) -> None:
    """Name PATH's rows by NB's cells, and serve NB's module as PATH's source lines."""
    _NOTEBOOKS[os.path.abspath(path)] = nb
    lines = nb.module.splitlines(keepends=True)
    # mtime None: linecache.checkcache keeps the entry instead of re-reading the JSON file.
    for name in {path, os.path.abspath(path)}:
        linecache.cache[name] = (len(nb.module), None, lines, name)


def notebook_of(filename: str) -> Any | None:
    """The notebook `read_source` read from FILENAME, if it was one."""
    return _NOTEBOOKS.get(os.path.abspath(filename)) if filename else None


def cell_row(filename: str, row: int) -> tuple[int, int] | None:
    """(cell number, row in the cell) of a row of a notebook's module; None for other files."""
    nb = notebook_of(filename)
    if nb is None:
        return None
    found = nb.cell_at(row)
    if found is None:
        return None
    cell, row_in_cell = found
    return cell.number, row_in_cell


def source_row(filename: str, row: int) -> str:
    """How messages name a row: `12`, or `cell 3:4` in a notebook."""
    found = cell_row(filename, row)
    return f"cell {found[0]}:{found[1]}" if found else str(row)


def notebook_note(filename: str) -> str | None:
    """What running a notebook as a module did differently from its kernel, for the notes."""
    nb = notebook_of(filename)
    if nb is None:
        return None
    note = (f"{filename}: ran its {len(nb.cells)} Python code cell{'s' if len(nb.cells) != 1 else ''} "
            f"top to bottom as one module")
    if nb.magics:
        note += (f"; {len(nb.magics)} IPython line{'s' if len(nb.magics) != 1 else ''} masked "
                 f"(shell escapes and magics skipped, %time/%timeit statements run once)")
    return note


def load_module(source: str, filename: str, *, label: str = "module") -> types.ModuleType:
    """Execute `source` as a fresh module; `filename` is what tracebacks and JAX name.

    Raises VerifyError (one line, naming the user's line) when the code does not
    compile or raises while its top level runs.
    """
    unique = f"_jaxfuse_verify_{label}_{next(_counter)}"
    module = types.ModuleType(unique)
    module.__file__ = filename
    try:
        code = compile(source, filename, "exec", dont_inherit=True)
    except SyntaxError as exc:
        where = source_row(filename, exc.lineno) if exc.lineno else None
        raise VerifyError(f"{filename}:{where}: syntax error: {exc.msg}" if where
                          else f"{filename}: syntax error: {exc.msg}") from None
    directory = os.path.dirname(os.path.abspath(filename))
    added_path = directory not in sys.path
    if added_path:
        sys.path.insert(0, directory)
    sys.modules[unique] = module
    if on_import is not None:
        on_import(filename)
    try:
        exec(code, module.__dict__)
    except BaseException as exc:  # noqa: BLE001 - user code may raise SystemExit too
        if isinstance(exc, KeyboardInterrupt):
            raise
        raise VerifyError(
            f"{user_location(exc, filename)}: importing the {label} version raised "
            f"{describe_exception(exc)}"
        ) from None
    finally:
        sys.modules.pop(unique, None)
        if added_path:
            try:
                sys.path.remove(directory)
            except ValueError:
                pass
    return module


def get_function(module: types.ModuleType, func_path: str, filename: str) -> Callable[..., Any]:
    obj: Any = module
    for part in func_path.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            defined = sorted(
                name for name, value in vars(module).items()
                if callable(value) and not name.startswith("_")
                and getattr(value, "__module__", None) == module.__name__
            )
            hint = f" (functions defined there: {', '.join(defined)})" if defined else ""
            raise VerifyError(f"{filename}: no function `{func_path}`{hint}") from None
    if not callable(obj):
        raise VerifyError(f"{filename}: `{func_path}` is a {type(obj).__name__}, not a function")
    return obj


def describe_exception(exc: BaseException) -> str:
    """`TypeError: message`, on one line and not overly long."""
    text = " ".join(str(exc).split())
    if len(text) > 300:
        text = text[:297] + "..."
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def user_location(exc: BaseException, filename: str) -> str:
    """`file:line` of the deepest traceback frame in `filename` (else just the file)."""
    line = None
    for frame, lineno in traceback.walk_tb(exc.__traceback__):
        if frame.f_code.co_filename == filename:
            line = lineno
    return f"{filename}:{source_row(filename, line)}" if line is not None else filename
