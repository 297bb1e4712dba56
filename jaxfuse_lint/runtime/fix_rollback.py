"""`--fix --verify`: measure every changed function that has a verify spec; roll back what does not prove out.

This imports and runs the user's code (through `jaxfuse_lint.verify`), which is
why it only happens when `--verify` is given. A function whose fixed version is
not *proved* (results agree, nothing measured got worse, something improved)
gets its original text back; the other functions of the file keep their fixes.
"""
from __future__ import annotations

from typing import Callable

import libcst as cst

from jaxfuse_lint.core.config import Settings
from jaxfuse_lint.engine.pipeline import FixOutcome
from jaxfuse_lint.runtime.function_diff import changed_functions, restore_functions, top_level_functions


def verify_outcomes(outcomes: list[FixOutcome], settings: Settings, echo: Callable[[str], None],
                    profile=None) -> None:
    """Verify and, where needed, roll back in place (mutates each outcome's `source`).

    Functions with a [tool.jaxfuse-lint.verify] spec are verified with it; with a runtime
    `profile` (jaxfuse_lint.runtime), the others are verified for every signature it recorded."""
    if not settings.verify and profile is None:
        echo("jaxfuse-lint: --verify: no [tool.jaxfuse-lint.verify] specs are configured and no runtime profile "
             "(`jaxfuse-lint record`); nothing was verified")
        return
    echo("jaxfuse-lint: --verify imports and runs the changed modules to measure them")
    _say_what_is_compiled_for(settings, echo)
    for outcome in outcomes:
        if outcome.filename.lower().endswith(".ipynb"):
            _verify_notebook(outcome, settings, echo, profile)
            continue
        rows = [(d, d.location.row) for d in outcome.fixed]
        rollback = _verify_functions(outcome.original, outcome.source, outcome.filename, rows, settings, echo,
                                     profile)
        if rollback:
            outcome.source = restore_functions(outcome.original, outcome.source, rollback)
            outcome.fixed = [d for d, row in rows if not _row_inside_any(row, outcome.original, rollback)]


def _say_what_is_compiled_for(settings: Settings, echo: Callable[[str], None]) -> None:
    """One line when the compiler is not simply this machine's device (deviceless GPU, a stand-in)."""
    from jaxfuse_lint.verify.backend import for_settings
    from jaxfuse_lint.verify.errors import VerifyError

    try:
        line = for_settings(settings).describe()
    except VerifyError as exc:
        line = str(exc)  # each function's verification reports it too
    if line:
        echo(f"jaxfuse-lint: --verify: {line}")


def _verify_functions(original: str, fixed: str, filename: str, fixed_rows: list, settings: Settings,
                      echo: Callable[[str], None], profile) -> list[str]:
    """Verify the functions the fixes changed; the ones to roll back. `fixed_rows`: each fixed
    diagnostic with its row in `original`."""
    from jaxfuse_lint.verify.api import config_target_matches, verify_pair
    from jaxfuse_lint.verify.shapes import parse_static_value

    rollback = []
    unspecified = []
    for func in changed_functions(original, fixed):
        specs = [spec for target, spec in settings.verify
                 if config_target_matches(target, filename, func.rsplit(".", 1)[-1], settings.project_root)]
        if not specs or "." in func:
            unspecified.append(func)
            continue  # methods need an instance: only module-level functions are verified
        spec = specs[0]
        static = {k: parse_static_value(v) for k, v in spec.static}
        # Recompilation fixes (JF3xx) are measured by calling the function, not by compiling it
        # whole: a Python loop around `jax.jit` cannot itself be jitted.
        recompilation = any(d.code.startswith("JF3") and _row_inside_any(row, original, [func])
                            for d, row in fixed_rows)
        result = verify_pair(original, fixed, func, list(spec.args), static, filename=filename, call=recompilation,
                             target=settings.target, gpu=settings.gpu)
        where = f"{filename}::{func}"
        if result.verdict == "proved":
            echo(f"jaxfuse-lint: verified {where}: {result.summary()}")
        elif result.keeps_fix:
            echo(f"jaxfuse-lint: {where}: fix kept, not proved here ({result.verdict}: {result.summary()}); "
                 f"{result.environment.get('stand_in')}")
        else:
            detail = result.error or result.summary()
            echo(f"jaxfuse-lint: {where}: fix not proved ({result.verdict}: {detail}); rolled back")
            rollback.append(func)
    if profile is not None and unspecified:
        rollback += _verify_with_profile(profile, original, fixed, filename, unspecified, echo,
                                         target=settings.target, gpu=settings.gpu)
    return rollback


def _verify_notebook(outcome: FixOutcome, settings: Settings, echo: Callable[[str], None], profile) -> None:
    """`--verify` for a notebook: its code cells, joined as `check` joins them, are the module
    that is run (magics masked); a rolled-back function gets its original text back in its cell."""
    from jaxfuse_lint.parse.notebook import NotebookError, read
    from jaxfuse_lint.verify.loader import register_notebook

    try:
        before, after = read(outcome.original), read(outcome.source)
    except NotebookError as exc:  # the engine wrote both texts: not expected
        echo(f"jaxfuse-lint: {outcome.filename}: cannot verify its fixes ({exc}); fixes not written")
        outcome.source, outcome.fixed = outcome.original, []
        return
    # Errors and source lines of the run name the original notebook's cells.
    register_notebook(outcome.filename, before)
    rows = [(d, before.module_row(d.cell, d.location.row)) for d in outcome.fixed]
    rollback = _verify_functions(before.module, after.module, outcome.filename, rows, settings, echo, profile)
    if not rollback:
        return
    restored = restore_functions(before.module, after.module, rollback)
    try:
        sources = after.cell_sources(restored)
    except NotebookError as exc:
        echo(f"jaxfuse-lint: {outcome.filename}: rolling back {', '.join(rollback)} failed ({exc}); "
             f"no fix written to it")
        outcome.source, outcome.fixed = outcome.original, []
        return
    changed = {n: text for n, text in sources.items() if text != after.cell_source(n)}
    outcome.source = after.with_sources(changed) if changed else outcome.source
    outcome.fixed = [d for d, row in rows if not _row_inside_any(row, before.module, rollback)]


def _verify_with_profile(profile, original: str, fixed: str, filename: str, funcs: list[str],
                         echo: Callable[[str], None], **options) -> list[str]:
    """Verify `funcs` through the recorded entry points that trace them; the functions to roll back.

    An entry point's fix holds when every recorded signature it could rebuild is proved
    or unchanged and at least one is proved; otherwise the changed functions it traces
    get their original text back."""
    from jaxfuse_lint.runtime.verify_profile import entries_to_verify, verify_fixed_text

    rollback: list[str] = []
    for entry in entries_to_verify(profile, original, funcs):
        traced = {entry["qualname"]} | {f.get("qualname") for f in profile.functions if f.get("entry") == entry["id"]}
        covered = [f for f in funcs if f in traced]
        checks = [c for c in verify_fixed_text(profile, original, fixed, filename,
                                               covered, **options) if c.func == entry["qualname"]]
        ran = [c for c in checks if c.result is not None]
        where = f"{filename}::{entry['qualname']}"
        if ran and all(c.verdict in ("proved", "unchanged") for c in ran) and any(c.verdict == "proved" for c in ran):
            for c in ran:
                echo(f"jaxfuse-lint: verified {c.line()[len(filename) + 2:]}")
            continue
        if not ran:
            echo(f"jaxfuse-lint: {where}: no recorded signature could be rebuilt; fix kept unverified")
            continue
        if all(c.result.keeps_fix for c in ran):
            for c in ran:
                echo(f"jaxfuse-lint: {c.line()}")
            echo(f"jaxfuse-lint: {where}: fix kept, not proved here; {ran[0].result.environment.get('stand_in')}")
            continue
        for c in ran:
            echo(f"jaxfuse-lint: {c.line()}")
        echo(f"jaxfuse-lint: {where}: fix not proved by the recorded signatures; rolled back "
             f"{', '.join(f'`{f}`' for f in covered)}")
        rollback += [f for f in covered if f not in rollback]
    return rollback


def _row_inside_any(row: int, original: str, names: list[str]) -> bool:
    """Is ROW of `original` inside one of the named functions?"""
    from jaxfuse_lint.parse.locate import Locator

    module = cst.parse_module(original)
    funcs = top_level_functions(module)
    nodes = [funcs[n] for n in names if n in funcs]
    loc = Locator(module, nodes)
    for node in nodes:
        start, end = loc.range(node)
        if start.row <= row <= end.row:
            return True
    return False
