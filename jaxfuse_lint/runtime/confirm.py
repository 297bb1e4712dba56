"""`check --confirm`: where a function's argument shapes are known, its findings about compiled code are
confirmed by compiling it, before and after the finding's fix, for the configured target.

A rule whose claim is about kernels, temporaries or constants decides from its calibration table
(core/calibration.py) without compiling anything. With `--confirm`, each such finding (JF1xx, JF2xx)
in a module-level function whose shapes are known — a `[tool.jaxfuse-lint.verify]` entry, or
jaxtyping annotations with sizes — is compiled with that one fix applied (the rule's raw fix, as the
calibration harness applies it), and:

- the compiler shows the harm, judged as the calibration tables judge it (`core/calibration.verdict`:
  memory saved, or two or more launches, and nothing worse): the finding is reported with the
  function's own figures, in the default output (also a preview finding: it is now shown);
- it shows no change, the fix worse, or a trade-off (better on one figure, worse on another: the
  calibration's "mixed"): the finding is dropped, and the run says which on stderr, with the figures
  that got better and those that got worse;
- it cannot be compiled here (or only with XLA:CPU standing in for another target), the shapes are
  not known, or only one kernel launch is saved: the finding keeps the table's decision.

This imports and runs the checked modules (their top level and the functions' tracing), as `verify`
does; `check` without `--confirm` never does.
"""
from __future__ import annotations

import ast
import dataclasses
from typing import Callable, Iterable

from jaxfuse_lint.core.calibration import FIGURES, LABELS, Figures, change, figures_text, size_text, verdict
from jaxfuse_lint.core.config import Settings
from jaxfuse_lint.core.diagnostics import Diagnostic

PREVIEW_MARK = " (preview: "
CONFIRMED_CODES = ("JF1", "JF2")


def is_preview(d: Diagnostic) -> bool:
    return PREVIEW_MARK in d.message and d.message.endswith(")")


def confirm_findings(diagnostics: list[Diagnostic], settings: Settings, echo: Callable[[str], None],
                     keep_preview: bool) -> list[Diagnostic]:
    """The diagnostics after confirmation (see the module docstring); preview ones that were not
    confirmed are kept only with `keep_preview`."""
    echo("jaxfuse-lint: --confirm imports and runs the checked modules to compile their functions")
    out: list[Diagnostic] = []
    sources: dict[str, str | None] = {}
    for d in diagnostics:
        if d.code == "JF503" and d.cell is None and d.filename.endswith(".py"):
            measured = _confirm_temporary(d, settings, echo)
            if measured is None:
                out.append(d)
            elif measured is not False:
                out.append(measured)
            continue
        if not d.code.startswith(CONFIRMED_CODES) or d.cell is not None or not d.filename.endswith(".py"):
            if keep_preview or not is_preview(d):
                out.append(d)
            continue
        if d.filename not in sources:
            sources[d.filename] = _read(d.filename)
        confirmed = _confirm(d, sources[d.filename], settings, echo)
        if confirmed is None:  # not confirmable here: the table's decision stands
            if keep_preview or not is_preview(d):
                out.append(d)
        elif confirmed is not False:
            out.append(confirmed)
    return out


def _read(filename: str) -> str | None:
    try:
        with open(filename, encoding="utf-8") as fh:
            return fh.read()
    except (OSError, UnicodeDecodeError):
        return None


def _confirm(d: Diagnostic, source: str | None, settings: Settings, echo) -> Diagnostic | bool | None:
    """The confirmed diagnostic, False (the compiler shows no harm: drop it) or None (unknown)."""
    if source is None:
        return None
    func = _enclosing_function(source, d.location.row)
    if func is None:
        return None
    from jaxfuse_lint.verify.api import resolve_arg_specs, verify_pair
    from jaxfuse_lint.verify.errors import VerifyError

    try:
        resolved = resolve_arg_specs(source, func, filename=d.filename, settings=settings)
    except VerifyError:
        return None
    if resolved.args is None or (not resolved.args and resolved.origin == "no array arguments"):
        return None
    fixed = _with_raw_fix(d, source, settings)
    if fixed is None:
        return None
    result = verify_pair(source, fixed, func, resolved.args, resolved.static, filename=d.filename,
                         target=settings.target, gpu=settings.gpu)
    if result.verdict == "error" or result.before is None or result.after is None \
            or result.before.measurement is None or result.after.measurement is None:
        return None
    if result.environment.get("stand_in"):  # XLA:CPU standing in for another target decides nothing
        return None
    # The same judgement as the calibration tables' (core/calibration.verdict).
    before, after = _figures(result.before.measurement), _figures(result.after.measurement)
    judged = verdict(before, after, code=d.code)
    where = f"{d.filename}:{d.location.row}:{d.location.column}: {d.code}"
    shapes = ", ".join(result.args)
    compiled = f"compiling `{func}` for {shapes} ({resolved.origin}) on {result.backend_name}"
    if judged == "harm" and result.verdict != "changed results":
        message = d.message.split(PREVIEW_MARK)[0] if is_preview(d) else d.message
        return dataclasses.replace(d, message=f"{message}; confirmed by {compiled}: {figures_text(before)} → "
                                              f"{figures_text(after)}")
    if judged in ("none", "worse", "mixed"):
        echo(f"jaxfuse-lint: {where}: dropped: {compiled} {outcome_text(judged, before, after)}")
        return False
    return None  # one launch saved and nothing else, or the fix changed results: the table's decision stands


def outcome_text(judged: str, before: Figures, after: Figures) -> str:
    """What a compile that does not confirm a finding shows, in words: "shows no harm (...)", "shows
    the fix makes it worse (...)", "shows a trade-off, not a gain: better on ..., worse on ..."."""
    if judged == "none":
        return f"shows no harm ({figures_text(before)} → {figures_text(after)})"
    better, worse = [], []
    for name in FIGURES:
        b, a = getattr(before, name), getattr(after, name)
        side = {"better": better, "worse": worse}.get(change(name, b, a))
        if side is not None:
            side.append(f"{LABELS[name]} {_figure(name, b)} → {_figure(name, a)}")
    if judged == "worse":
        return f"shows the fix makes it worse ({', '.join(worse)})"
    return f"shows a trade-off, not a gain: better on {', '.join(better)}; worse on {', '.join(worse)}"


def _figure(name: str, value) -> str:
    if name in ("temp_bytes", "constant_bytes"):
        return size_text(value)
    if name == "seconds":
        return f"{value * 1e6:.0f} µs"
    return str(value)


def _confirm_temporary(d: Diagnostic, settings: Settings, echo) -> Diagnostic | bool | None:
    """JF503 (measured by the recorded run, on its backend) decided by compiling each recorded
    signature of the entry points whose programs wrote the line's temporaries for the configured
    target (XLA:GPU deviceless for the `gpu` model: verify/backend.py): kept with the target's
    figure where one still writes more than `temporary-bytes-max` there, dropped where none does,
    None (the run's figure stands) where nothing could be compiled for the target here."""
    import os

    from jaxfuse_lint.core.profile import PROFILE_DIGEST_KEY, PROFILE_KEY, ProfileError, cached_profile
    from jaxfuse_lint.rules.measured import nbytes

    extra = dict(settings.extra)
    source = _read(d.filename)
    if not extra.get(PROFILE_KEY) or source is None:
        return None
    try:
        profile = cached_profile(extra[PROFILE_KEY], extra.get(PROFILE_DIGEST_KEY, ""))
    except ProfileError:
        return None
    facts = profile.for_text(source)
    if facts is None:
        return None
    row = d.location.row
    entry_ids = {item.get("entry") for item in facts.lines if item.get("line") == row}
    entries = [e for e in profile.entries if e.get("id") in entry_ids]
    if not entries:
        return None
    from jaxfuse_lint.runtime.verify_profile import case_for
    from jaxfuse_lint.verify.backend import for_settings
    from jaxfuse_lint.verify.errors import VerifyError

    try:
        target = for_settings(settings)
    except VerifyError:
        return None
    if target.stand_in:
        return None  # XLA:CPU standing in for another target decides nothing
    from jaxfuse_lint.runtime.explain import explain_function
    from jaxfuse_lint.verify.loader import get_function, load_module, read_source
    from jaxfuse_lint.verify.shapes import parse_arg_spec

    largest, compiled = 0, None
    for entry in entries:
        qualname = str(entry.get("qualname") or "")
        path = str(profile.root / entry.get("file", "")) if not os.path.isabs(entry.get("file", "")) else entry["file"]
        if "<" in qualname or not os.path.exists(path):
            continue
        try:
            module = load_module(read_source(path), path, label="confirmed")
            func = get_function(module, qualname, path)
        except VerifyError:
            continue
        for sig in entry.get("signatures", []):
            case, _ = case_for(entry, sig)
            if case is None:
                continue
            try:
                explanation = explain_function(func, [parse_arg_spec(t, {}) for t in case.args], case.static,
                                               target=f"{path}::{qualname}", compile_target=target)
            except VerifyError:
                continue
            account = explanation.attribution.line(os.path.abspath(d.filename), row) or \
                explanation.attribution.line(d.filename, row)
            size = int(account.temp_bytes) if account is not None else 0
            if compiled is None or size > largest:
                largest, compiled = size, f"`{qualname}` for the recorded {case.label}"
    if compiled is None:
        return None
    where = f"{d.filename}:{row}:{d.location.column}: {d.code}"
    if largest > settings.temporary_bytes_max:
        return dataclasses.replace(d, message=f"{d.message}; confirmed on {target.label()}: compiling {compiled} "
                                              f"writes {nbytes(largest)} of temporaries for this line")
    echo(f"jaxfuse-lint: {where}: dropped: on {target.label()}, compiling {compiled} writes "
         f"{nbytes(largest)} of temporaries for this line, within `temporary-bytes-max` = "
         f"{nbytes(settings.temporary_bytes_max)} (the recorded run measured {_measured_backend(d.message)})")
    return False


def _measured_backend(message: str) -> str:
    head, sep, tail = message.partition("measured on ")
    return tail.split(" in the recorded run", 1)[0] if sep else "another backend"


def _figures(measurement) -> Figures:
    return Figures(measurement.kernels.total, measurement.kernels.launches_per_run, measurement.temp_bytes,
                   measurement.folded_constant_bytes)


def _enclosing_function(source: str, row: int) -> str | None:
    """The module-level function whose lines hold `row` (the function `verify` compiles)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return None
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            start = min([node.lineno, *(dec.lineno for dec in node.decorator_list)])
            if start <= row <= (node.end_lineno or node.lineno):
                return node.name
    return None


def _with_raw_fix(d: Diagnostic, source: str, settings: Settings) -> str | None:
    """The source with only this finding's fix applied: the rule's raw pattern and fix (unsafe ones
    included), as the calibration harness compiles them."""
    from jaxfuse_lint.core.calibration import RAW
    from jaxfuse_lint.core.edits import apply_edits
    from jaxfuse_lint.engine import check_source

    raw = dataclasses.replace(settings, select=(d.code,), extend_select=(), ignore=(), extra=settings.extra + (RAW,))
    for found in check_source(source, d.filename, raw).diagnostics:
        if found.code == d.code and found.location == d.location and found.fix is not None:
            return apply_edits(source, list(found.fix.edits))
    return None


def confirmable(codes: Iterable[str]) -> bool:
    return any(code.startswith(CONFIRMED_CODES) for code in codes)
