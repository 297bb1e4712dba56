"""The closing lines of a text report ("Found 3 diagnostics.", what --fix would do)."""
from __future__ import annotations

from jaxfuse_lint.diagnostics import Applicability, Diagnostic


def summary_text(diagnostics: list[Diagnostic], unsafe: bool) -> str:
    """ruff's closing lines: the count, and how many fixes `--fix` (and `--unsafe-fixes`) would apply."""
    if not diagnostics:
        return "All checks passed!"
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
    return msg
