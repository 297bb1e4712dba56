"""Verify the linter's own fix of a function: fix the file in memory, then compare before and after.

The `verify PATH::FUNC` command (without `--against`) runs this: the fixed text comes
from the engine (`jaxfuse_lint.engine.pipeline.fix_source`), and the comparison is
`jaxfuse_lint.verify.verify_pair`'s. What the engine could not do, and the fixes only
`--unsafe-fixes` would apply, are part of the evidence. This imports and runs user code.
"""
from __future__ import annotations

import os
from typing import Any, Mapping, Sequence

from jaxfuse_lint.verify.api import VerifyResult, verify_pair
from jaxfuse_lint.verify.errors import VerifyError
from jaxfuse_lint.verify.shapes import ArgSpec, find_function_def


def verify_fixed_file(
    source: str,
    filename: str,
    func_name: str,
    arg_specs: Sequence[str | ArgSpec] | None,
    static: Mapping[str, Any] | None = None,
    *,
    settings: Any = None,
    unsafe: bool = False,
    **options: Any,
) -> VerifyResult:
    """Apply jaxfuse-lint's fixes to `source` in memory and `verify_pair` the result.

    The fixed text comes from `jaxfuse_lint.engine.pipeline.fix_source`; when no fix
    applies the verdict is "unchanged" without compiling anything. `options`
    are `verify_pair`'s keyword arguments.
    """
    try:
        _require_binding(source, func_name, filename)
        fixed = apply_fixes(source, filename, settings, unsafe=unsafe)
    except VerifyError as exc:
        return VerifyResult(verdict="error", func=func_name, error=str(exc), static=dict(static or {}))
    lines = _function_lines(source, func_name)
    fixes = [_fix_entry(d, filename, lines) for d in getattr(fixed, "fixed", [])]
    # What the engine could not do is part of the evidence (e.g. a fix dropped as invalid).
    engine_notes = [*getattr(fixed, "errors", []), *getattr(fixed, "dropped", [])]
    # Fixes only --unsafe-fixes applies: counted, and said which are inside FUNC and why unsafe.
    hidden = [] if unsafe else _hidden_fixes(fixed, func_name)
    hidden_inside = sum(1 for _, inside in hidden if inside)
    if fixed.source == source:
        result = VerifyResult(verdict="unchanged", func=func_name, static=dict(static or {}),
                              args=[str(a) for a in arg_specs or ()])
        result.notes += engine_notes
        if hidden:  # the fixes first, the one-line verdict last (the summary line repeats it)
            n = len(hidden)
            result.notes += _hidden_notes(hidden, func_name)[1:]
            result.notes.append(f"no safe fix applies to {filename}; `--unsafe-fixes` would apply {n} "
                                f"({_inside(hidden_inside, n, func_name)})")
        else:
            result.notes.append(f"no fix applies to {filename}: nothing to verify")
        return result
    result = verify_pair(source, fixed.source, func_name, arg_specs, static, filename=filename, **options)
    result.fixes = fixes
    result.notes += engine_notes
    if fixes and not any(f["in_function"] for f in fixes):
        # Helpers FUNC calls may still have changed, so the comparison is still made.
        safe = "safe " if hidden_inside else ""
        result.notes.append(f"no {safe}fix is inside `{func_name}` itself ({len(fixes)} elsewhere in the file)")
    result.notes += _hidden_notes(hidden, func_name)
    return result


def _hidden_fixes(fixed: Any, func_name: str) -> list[tuple[Any, bool]]:
    """(diagnostic, inside FUNC) for each fix left in the fixed text that only `--unsafe-fixes` applies."""
    from jaxfuse_lint.report.summary import hidden_fixes

    hidden = hidden_fixes(getattr(fixed, "remaining", None) or [])
    if not hidden:
        return []
    lines = _function_lines(fixed.source, func_name)
    return [(d, lines is not None and lines[0] <= d.location.row <= lines[1]) for d in hidden]


def _inside(inside: int, n: int, func_name: str) -> str:
    if inside == n:
        return f"inside `{func_name}`" if n == 1 else f"all inside `{func_name}`"
    return f"{inside} inside `{func_name}`" if inside else f"none inside `{func_name}`"


def _hidden_notes(hidden: list[tuple[Any, bool]], func_name: str) -> list[str]:
    """One note for the count, one per fix: what it does, and why it is unsafe (what would make it safe)."""
    if not hidden:
        return []
    n, inside = len(hidden), sum(1 for _, i in hidden if i)
    notes = [f"`--unsafe-fixes` would apply {n} more fix{'es' if n != 1 else ''} "
             f"({_inside(inside, n, func_name)})"]
    for d, is_inside in hidden:
        if not is_inside and inside:
            continue
        text = f"{d.code} {d.fix.message}"
        notes.append(f"{text}: {d.fix.detail}" if d.fix.detail else text)
    return notes


def _require_binding(source: str, func: str, filename: str) -> None:
    """VerifyError when nothing in the file could bind FUNC's first name, so that a typo is
    an error even where no fix applies (and nothing is run to find it out)."""
    import ast

    try:
        tree = ast.parse(source)
    except SyntaxError:
        return  # loading the module reports it with its line
    bound: set[str] = set()
    defined: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound.add(node.name)
            if node in tree.body and not node.name.startswith("_"):
                defined.append(node.name)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            bound.add(node.id)
        elif isinstance(node, ast.alias):
            if node.name == "*":
                return  # a star import may bind anything
            bound.add(node.asname or node.name.split(".")[0])
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            bound.update(node.names)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in (
                "globals", "exec", "setattr", "vars", "locals"):
            return  # bound by name at runtime
    if func.split(".")[0] not in bound:
        hint = f" (functions defined there: {', '.join(defined)})" if defined else ""
        raise VerifyError(f"{filename}: no function `{func}`{hint}")


def _fix_entry(d: Any, filename: str, lines: tuple[int, int] | None) -> dict[str, Any]:
    """One applied fix, for the report: in a notebook, its row is counted in its cell."""
    from jaxfuse_lint.verify.loader import cell_row

    entry = {"code": d.code, "row": d.location.row, "column": d.location.column, "message": d.message,
             "in_function": lines is not None and lines[0] <= d.location.row <= lines[1]}
    found = cell_row(filename, d.location.row)
    if found is not None:
        entry["cell"], entry["row"] = found
    return entry


def _function_lines(source: str, func: str) -> tuple[int, int] | None:
    """First and last line of FUNC's definition (decorators included), if it is a plain def."""
    import ast

    try:
        fn = find_function_def(ast.parse(source), func)
    except SyntaxError:
        return None
    if fn is None:
        return None
    first = min([fn.lineno, *(d.lineno for d in fn.decorator_list)])
    return first, fn.end_lineno or fn.lineno


def apply_fixes(source: str, filename: str, settings: Any, *, unsafe: bool = False) -> Any:
    """The engine's fix of `source` (an object with `.source` and `.fixed`)."""
    try:
        from jaxfuse_lint.engine.pipeline import fix_source
        from jaxfuse_lint.parse.notebook import is_notebook
    except ImportError:
        raise VerifyError(
            "applying fixes needs jaxfuse_lint.engine.pipeline.fix_source, which this installation lacks; "
            "compare two versions with --against instead"
        ) from None
    if settings is None:
        from jaxfuse_lint.core.config import load_settings

        settings = load_settings(None, start=filename if os.path.exists(filename) else ".")
    try:
        # A notebook's source here is already the module its cells make (loader.read_source).
        return fix_source(source, filename, settings, unsafe=unsafe, as_python=is_notebook(filename))
    except VerifyError:
        raise
    except Exception as exc:  # noqa: BLE001 - a fixer failure is reported, not raised through
        from jaxfuse_lint.verify.loader import describe_exception

        raise VerifyError(f"{filename}: applying fixes failed: {describe_exception(exc)}") from None
