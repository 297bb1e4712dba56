"""Which grammar a file is read with: the project's Python (`target-version`, ruff's spelling,
defaulting from `requires-python`; core/config.py), not the Python that runs the linter.

Two parsers are at hand. CPython's (`ast`/`compile`) reads the running Python's grammar and words
its errors the way users know them; libcst's native parser reads every grammar up to the newest it
knows (PEP 701 f-strings, PEP 695 type parameters, PEP 750 template strings...) whatever Python
runs it. So:

* target-version not newer than the running Python: CPython's verdict decides, and words JF000;
* newer (a `requires-python = ">=3.12"` project linted on 3.11): CPython cannot read the target's
  grammar, so libcst decides — a text libcst parses is valid (`f"{d["k"]}"` is linted, never
  JF000), and a fix is checked with libcst instead of CPython's compiler; CPython's wording of an
  error is kept only where it points at the same line as libcst's;
* newer than libcst's newest grammar too: a text libcst cannot parse is not reported as a syntax
  error (it may be valid Python of that version); the run says the file was not checked and why.
"""
from __future__ import annotations

import functools
import sys

RUNNING: tuple[int, int] = sys.version_info[:2]

# Texts that need each grammar, newest first: the newest libcst parses is the grammar it knows.
_PROBES = (
    ((3, 14), 't"{a}"\n'),
    ((3, 13), "def f[T = int](): pass\n"),
    ((3, 12), 'f"{d["k"]}"\n'),
    ((3, 11), "try:\n    pass\nexcept* E:\n    pass\n"),
    ((3, 10), "match x:\n    case 1:\n        pass\n"),
)


def version_of(target_version: str | None) -> tuple[int, int]:
    """`"py312"` -> (3, 12); None -> the running Python's."""
    if not target_version:
        return RUNNING
    return 3, int(target_version[3:])


def spelled(version: tuple[int, int]) -> str:
    return f"Python {version[0]}.{version[1]}"


@functools.cache
def libcst_newest() -> tuple[int, int]:
    """The newest Python grammar the installed libcst parses (probed once)."""
    import libcst as cst

    for version, text in _PROBES:
        try:
            cst.parse_module(text)
        except Exception:
            continue
        return version
    return (3, 9)


def cpython_reads(settings) -> bool:
    """Whether the running Python's parser reads the target's grammar (then its verdict decides)."""
    return version_of(getattr(settings, "target_version", None)) <= RUNNING


def readable(settings) -> bool:
    """Whether some parser here reads the target's grammar (the running Python's or libcst's)."""
    target = version_of(getattr(settings, "target_version", None))
    return target <= RUNNING or target <= libcst_newest()


def not_checked(filename: str, settings, why: str = "it does not parse") -> str:
    """What the run says instead of JF000 where no parser here reads the target's grammar."""
    target = version_of(getattr(settings, "target_version", None))
    return (f"{filename}: not checked: {why} with the grammars this run can read (the running "
            f"{spelled(RUNNING)}, libcst up to {spelled(libcst_newest())}), and `target-version` is "
            f"{settings.target_version} ({spelled(target)}): it may be valid there; run jaxfuse-lint "
            f"on {spelled(target)} or later to check it")


def check_text(text: str, filename: str, settings):
    """The syntax verdict on a file no rule needs to parse: (JF000 diagnostic or None, notice
    or None). CPython's parser to an AST first (cheap); where the target's grammar is newer
    than it reads, libcst's parser decides a text CPython rejects."""
    from jaxfuse_lint.parse.parser_guard import needs_cpython_check
    from jaxfuse_lint.parse.syntax_errors import parse_check, syntax_error_diagnostic

    found = parse_check(text, filename)
    if found is None or cpython_reads(settings):
        return found, None
    if needs_cpython_check(text):  # too deep or long to give libcst's native parser safely
        return None, not_checked(filename, settings, "it is nested too deeply to parse safely")
    import libcst as cst

    try:
        cst.parse_module(text)
    except (cst.ParserSyntaxError, SyntaxError, ValueError, RecursionError) as exc:
        if not readable(settings):
            return None, not_checked(filename, settings)
        return syntax_error_diagnostic(filename, exc, text, cpython=False), None
    return None, None


__all__ = ["RUNNING", "check_text", "cpython_reads", "libcst_newest", "not_checked", "readable", "version_of"]
