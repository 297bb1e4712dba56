"""JF000, the syntax-error diagnostic: where a text that cannot be decoded or parsed is wrong, and
CPython's own verdict on a file no rule needs to parse (`parse_check`); also a path that cannot be
read at all (`unreadable`). The engine reports
these for every file that is not valid Python; the parser guard (parser_guard.py) and the
runner's crashed workers word theirs the same way."""
from __future__ import annotations

import re
import sys

from jaxfuse_lint.core.diagnostics import Diagnostic, Location

SYNTAX_ERROR = "JF000"


def syntax_error_diagnostic(filename: str, exc: Exception, text: str | None = None,
                            data: bytes | None = None, *, cpython: bool = True) -> Diagnostic:
    """JF000 at the error. CPython's own message and position are preferred when it agrees
    the file is invalid: they are what users know, and libcst's native parser may point
    at the end of the file instead of the offending token. `data`: the file's bytes, to
    place an undecodable byte at its line and column. `cpython` False: the running Python
    does not read the project's grammar (parse/grammar.py), so its verdict is kept only where
    it points near the line libcst's does (else it may be about newer syntax before the error)."""
    row, col, msg = 1, 1, " ".join(str(exc).split()) or type(exc).__name__
    libcst_row = None
    if isinstance(exc, UnicodeDecodeError):
        row, col, msg = _undecodable_at(exc, data)
    elif isinstance(exc, SyntaxError) and data is not None and "can't decode" in (exc.msg or ""):
        row, col, msg = _undecodable_at(exc, data)
    elif "libcst" in sys.modules and isinstance(exc, sys.modules["libcst"].ParserSyntaxError):
        # (libcst not imported: exc cannot be one of its errors)
        row, col, msg = exc.raw_line, exc.raw_column + 1, " ".join(exc.message.split())
        m = _LIBCST_AT.search(exc.message)
        if m is not None:  # "parser error: error at 3:2: expected ...": the token it stopped at
            row, col = int(m.group(1)), int(m.group(2)) + 1
            libcst_row = row
            expected = " ".join(exc.message[m.end():].split()).lstrip(": ")
            if len(expected) > 60:
                expected = expected[:expected.rfind(",", 0, 60)] + ", ..."
            msg = f"invalid syntax ({expected})" if expected else "invalid syntax"
    elif isinstance(exc, SyntaxError):
        row, col, msg = exc.lineno or 1, exc.offset or 1, exc.msg
        if text is not None:
            col = _column_in_line(exc, text) or col
    if text is not None:
        try:
            compile(text, filename, "exec", dont_inherit=True)
        except SyntaxError as py_exc:
            if cpython or _near(py_exc, libcst_row):
                row, msg = py_exc.lineno or row, py_exc.msg
                col = _column_in_line(py_exc, text) or py_exc.offset or col
        except (ValueError, RecursionError, MemoryError):
            pass
    return syntax_error_at(filename, row, col, msg)


def _near(py_exc: SyntaxError, libcst_row: int | None) -> bool:
    """Whether CPython's error, where it does not read the project's grammar, is the one libcst
    found: on libcst's line or just before it (libcst stops at the next token), and not about an
    f-string (whose grammar changed in 3.12)."""
    if (py_exc.msg or "").startswith("f-string"):
        return False
    return libcst_row is None or libcst_row - 3 <= (py_exc.lineno or 0) <= libcst_row


# libcst's parser errors name the position of the token they stopped at (0-based column).
_LIBCST_AT = re.compile(r"error at (\d+):(\d+)")


def _column_in_line(exc: SyntaxError, text: str) -> int | None:
    """The error's column in the line itself. CPython up to 3.11 places an error inside an
    f-string's replacement field relative to that field's expression (`exc.text` is `(a b)`,
    offset 2): found in the line, the column becomes the line's own (CPython 3.12's)."""
    if not exc.lineno or not exc.offset or not exc.text:
        return None
    lines = text.splitlines()
    if exc.lineno > len(lines):
        return None
    line = lines[exc.lineno - 1]
    shown = exc.text.rstrip("\r\n")
    if shown == line or not (shown.startswith("(") and shown.endswith(")")):
        return None
    at = line.find(shown[1:-1])
    if at < 0:
        return None
    return at + exc.offset - 1


def syntax_error_at(filename: str, row: int, col: int, reason: str) -> Diagnostic:
    """JF000's one message shape, `Could not parse file: <reason>`, at the bad byte or token."""
    loc = Location(max(row, 1), max(col, 1))
    return Diagnostic(SYNTAX_ERROR, "syntax-error", f"Could not parse file: {reason}", filename, loc, loc,
                      noqa_row=loc.row)


def unreadable(filename: str, exc: OSError | str, what: str = "file") -> Diagnostic:
    """JF000 for a path that could not be read (missing, not permitted, ...), at its first line: the
    run goes on with the other paths (ruff's E902 io-error). `what`: "file" or "folder" ("path"
    when there is nothing there)."""
    reason = exc if isinstance(exc, str) else (exc.strerror or " ".join(str(exc).split()))
    if isinstance(exc, (FileNotFoundError, NotADirectoryError)):
        what = "path"  # nothing there: neither a file nor a folder
    loc = Location(1, 1)
    return Diagnostic(SYNTAX_ERROR, "syntax-error", f"Could not read {what}: {reason}", filename, loc, loc,
                      noqa_row=None)


def nul_byte(text: str, filename: str) -> Diagnostic | None:
    """JF000 at the first NUL of a text, if it has one: CPython refuses any source that holds
    one (in a comment too), while libcst reads it (and offered fixes that could never apply)."""
    at = text.find("\x00")
    if at < 0:
        return None
    row = text.count("\n", 0, at) + 1
    return syntax_error_at(filename, row, at - (text.rfind("\n", 0, at) + 1) + 1,
                           "source code cannot contain null bytes")


def _undecodable_at(exc: Exception, data: bytes | None) -> tuple[int, int, str]:
    """Line and column of the first byte that cannot be decoded."""
    encoding = getattr(exc, "encoding", None) or "utf-8"
    start = getattr(exc, "start", None)
    if data is not None and start is None:
        try:
            data.decode(encoding)
        except UnicodeDecodeError as inner:
            start, encoding = inner.start, inner.encoding
        except LookupError:
            pass
    if data is None or start is None:
        return 1, 1, " ".join(str(exc).split())
    line_start = data.rfind(b"\n", 0, start) + 1
    row = data.count(b"\n", 0, start) + 1
    col = len(data[line_start:start].decode(encoding, errors="replace")) + 1
    return row, col, f"invalid {encoding} byte 0x{data[start]:02x}; the file must be valid {encoding}"


def parse_check(text: str, filename: str) -> Diagnostic | None:
    """JF000 for a file that is not valid Python, without libcst: CPython's parser (to an
    AST only; nothing is compiled or run). Used for the files no rule needs to analyse, so
    that every checked file at least gets its syntax checked."""
    import ast
    import warnings

    nul = nul_byte(text, filename)
    if nul is not None:
        return nul
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ast.parse(text, filename)
    except SyntaxError as exc:
        return syntax_error_at(filename, exc.lineno or 1, _column_in_line(exc, text) or exc.offset or 1, exc.msg)
    except (ValueError, RecursionError, MemoryError) as exc:
        reason = "too deeply nested to parse" if isinstance(exc, RecursionError) else " ".join(str(exc).split())
        return syntax_error_at(filename, 1, 1, reason or type(exc).__name__)
    return None
