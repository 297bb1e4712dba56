"""The closing lines of a text report ("Found 3 diagnostics.", what --fix would do)."""
from __future__ import annotations

from jaxfuse_lint.core.diagnostics import Applicability, Diagnostic


def unchecked_text(filenames: list[str], limit: int = 10) -> str:
    """The closing line that names the files an internal error left unchecked (empty: none)."""
    if not filenames:
        return ""
    from jaxfuse_lint.report.paths import display_path

    n = len(filenames)
    names = ", ".join(display_path(f, None) for f in filenames[:limit])
    more = f" and {n - limit} more" if n > limit else ""
    return (f"{n} file{'s' if n != 1 else ''} not checked (an internal error stopped the analysis; see above): "
            f"{names}{more}")


def summary_text(diagnostics: list[Diagnostic], unsafe: bool, unchecked: list[str] = ()) -> str:
    """ruff's closing lines: the count, and how many fixes `--fix` (and `--unsafe-fixes`) would apply;
    never "All checks passed!" when a file was not checked (`unchecked`)."""
    if not diagnostics:
        return unchecked_text(list(unchecked)) or "All checks passed!"
    n = len(diagnostics)
    fixable = sum(1 for d in diagnostics if d.fix and d.fix.applicability is Applicability.SAFE)
    unsafe_n = sum(1 for d in diagnostics if d.fix and d.fix.applicability is Applicability.UNSAFE)
    msg = f"Found {n} diagnostic{'s' if n != 1 else ''}."
    if unsafe:
        fixable += unsafe_n
        unsafe_n = 0
    if fixable:
        msg += f"\n[*] {fixable} fixable with `jaxfuse-lint --fix{' --unsafe-fixes' if unsafe else ''}`."
    if unsafe_n:
        msg += f"\n{unsafe_n} more fixable with `--fix --unsafe-fixes` (review those)."
    if unchecked:
        msg += "\n" + unchecked_text(list(unchecked))
    return msg


def hidden_fixes(diagnostics: list[Diagnostic]) -> list[Diagnostic]:
    """The diagnostics whose fix only `--unsafe-fixes` applies."""
    return [d for d in diagnostics if d.fix is not None and d.fix.applicability is Applicability.UNSAFE]


def hidden_fixes_text(diagnostics: list[Diagnostic], limit: int = 10, width: int = 100) -> str:
    """After `--fix`, `--diff` or `--fix-only` without `--unsafe-fixes`: how many more fixes
    `--unsafe-fixes` would apply (ruff's "N hidden fixes can be enabled with the
    `--unsafe-fixes` option"), and for each what it does and what would make it safe.
    Empty when there are none."""
    import textwrap

    from jaxfuse_lint.report.paths import display_path

    hidden = hidden_fixes(diagnostics)
    if not hidden:
        return ""
    n = len(hidden)
    lines = [f"{n} hidden fix{'es' if n != 1 else ''} can be enabled with the `--unsafe-fixes` option "
             f"(review {'them' if n != 1 else 'it'}: {'they' if n != 1 else 'it'} may change results):"]
    for d in hidden[:limit]:
        where = display_path(d.filename, None) + (f":cell {d.cell}" if d.cell is not None else "")
        lines.append(f"  {where}:{d.location.row}:{d.location.column}: {d.code} {d.fix.message}")
        if d.fix.detail:
            lines += textwrap.wrap(d.fix.detail, width, initial_indent="    ", subsequent_indent="    ",
                                   break_long_words=False, break_on_hyphens=False)
    if n > limit:
        lines.append(f"  ... and {n - limit} more (`--output-format full` shows each fix and why it is unsafe)")
    return "\n".join(lines)
