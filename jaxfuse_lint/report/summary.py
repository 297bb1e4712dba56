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


def undecided_text(undecided: list[Diagnostic], listed: bool = False) -> str:
    """"12 not decided: 7 sizes unknown, 3 not shown to be traced, 2 call counts unknown", and what would
    decide them: patterns seen whose findings rest on an assumed premise (the preview tier, off)."""
    from jaxfuse_lint.core.claims import CLAIMS, DECIDES, claim_of

    if not undecided:
        return ""
    counts: dict[str, int] = {}
    for d in undecided:
        claim = next((claim_of(p.premise) for p in d.premises if p.status == "assumed"), "")
        counts[claim] = counts.get(claim, 0) + 1
    order = sorted(counts, key=lambda c: (-counts[c], c))
    parts = ", ".join(f"{counts[c]} {CLAIMS.get(c, 'assumed')}" for c in order)
    lines = [f"{len(undecided)} not decided: {parts}."]
    hints = [DECIDES[c] for c in order if c in DECIDES]
    if hints:
        lines.append("What decides them: " + "; ".join(dict.fromkeys(hints)) + ".")
    if not listed:
        lines.append("`--show-undecided` lists them; `--preview` reports them.")
    return "\n".join(lines)


def summary_text(diagnostics: list[Diagnostic], unsafe: bool, undecided: list[Diagnostic] | None = None,
                 listed: bool = False, unchecked: list[str] = ()) -> str:
    """ruff's closing lines: the count, and how many fixes `--fix` (and `--unsafe-fixes`) would apply;
    the files an internal error left unchecked (`unchecked_text`: never "All checks passed!" then);
    then how many patterns were seen but not decided (`undecided_text`)."""
    more = undecided_text(undecided or [], listed)
    lost = unchecked_text(list(unchecked))
    if not diagnostics:
        head = lost or "All checks passed!"
    else:
        head = _found_text(diagnostics, unsafe) + (f"\n{lost}" if lost else "")
    return head + (f"\n{more}" if more else "")


def undecided_lines(undecided: list[Diagnostic]) -> list[str]:
    """`--show-undecided`: each pattern not decided, with the premise it assumes."""
    from jaxfuse_lint.report.paths import display_path

    out = []
    for d in undecided:
        where = display_path(d.filename, None) + (f":cell {d.cell}" if d.cell is not None else "")
        assumed = "; ".join(f"{p.premise}: {p.source}" for p in d.premises if p.status == "assumed")
        out.append(f"{where}:{d.location.row}:{d.location.column}: {d.code} not decided ({assumed})")
    return out


def _found_text(diagnostics: list[Diagnostic], unsafe: bool) -> str:
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
