"""`--fix --verify`: measure every changed function that has a verify spec; roll back what does not prove out.

This imports and runs the user's code (through `jaxfuse_lint.verify`), which is
why it only happens when `--verify` is given. A function whose fixed version is
not *proved* (results agree, nothing measured got worse, something improved)
gets its original text back; the other functions of the file keep their fixes.
"""
from __future__ import annotations

from typing import Callable, Iterable

import libcst as cst

from jaxfuse_lint.config import Settings
from jaxfuse_lint.engine import FixOutcome


def _functions(module: cst.Module) -> dict[str, cst.FunctionDef]:
    """Top-level functions and methods (as `Class.method`) by name."""
    out: dict[str, cst.FunctionDef] = {}
    for stmt in module.body:
        if isinstance(stmt, cst.FunctionDef):
            out[stmt.name.value] = stmt
        elif isinstance(stmt, cst.ClassDef) and isinstance(stmt.body, cst.IndentedBlock):
            for inner in stmt.body.body:
                if isinstance(inner, cst.FunctionDef):
                    out[f"{stmt.name.value}.{inner.name.value}"] = inner
    return out


def changed_functions(original: str, fixed: str) -> list[str]:
    before, after = _functions(cst.parse_module(original)), _functions(cst.parse_module(fixed))
    mod = cst.parse_module("")
    return [name for name, node in after.items()
            if name in before and mod.code_for_node(node) != mod.code_for_node(before[name])]


class _Restore(cst.CSTTransformer):
    def __init__(self, originals: dict[str, cst.FunctionDef], names: set[str]) -> None:
        super().__init__()
        self.originals, self.names, self.cls = originals, names, []

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        self.cls.append(node.name.value)

    def leave_ClassDef(self, original, updated):
        self.cls.pop()
        return updated

    def leave_FunctionDef(self, original, updated):
        name = ".".join(self.cls + [original.name.value])
        if name in self.names and name in self.originals:
            return self.originals[name]
        return updated


def restore_functions(original: str, fixed: str, names: Iterable[str]) -> str:
    """The fixed text with the named functions put back as they were."""
    originals = _functions(cst.parse_module(original))
    return cst.parse_module(fixed).visit(_Restore(originals, set(names))).code


def verify_outcomes(outcomes: list[FixOutcome], settings: Settings, echo: Callable[[str], None],
                    profile=None) -> None:
    """Verify and, where needed, roll back in place (mutates each outcome's `source`).

    Functions with a [tool.jaxfuse-lint.verify] spec are verified with it; with a runtime
    `profile` (jaxfuse_lint.runtime), the others are verified for every signature it recorded."""
    if not settings.verify and profile is None:
        echo("jaxfuse-lint: --verify: no [tool.jaxfuse-lint.verify] specs are configured and no runtime profile "
             "(`jaxfuse-lint record`); nothing was verified")
        return
    from jaxfuse_lint.verify.api import config_target_matches, verify_pair
    from jaxfuse_lint.verify.shapes import parse_static_value

    echo("jaxfuse-lint: --verify imports and runs the changed modules to measure them")
    for outcome in outcomes:
        if outcome.filename.lower().endswith(".ipynb"):
            # Rolling a function back would mean rewriting cells; one function at a time,
            # `verify nb.ipynb::FUNC` runs the cells as a module and proves it.
            echo(f"jaxfuse-lint: {outcome.filename}: --verify does not run notebooks; its fixes are not verified "
                 f"(prove one with `jaxfuse-lint verify {outcome.filename}::FUNC`)")
            continue
        rollback = []
        unspecified = []
        for func in changed_functions(outcome.original, outcome.source):
            specs = [spec for target, spec in settings.verify
                     if config_target_matches(target, outcome.filename, func.rsplit(".", 1)[-1], settings.project_root)]
            if not specs or "." in func:
                unspecified.append(func)
                continue  # methods need an instance: only module-level functions are verified
            spec = specs[0]
            static = {k: parse_static_value(v) for k, v in spec.static}
            # Recompilation fixes (JF3xx) are measured by calling the function, not by compiling it
            # whole: a Python loop around `jax.jit` cannot itself be jitted.
            recompilation = any(d.code.startswith("JF3") and _inside_any(d, outcome.original, [func])
                                for d in outcome.fixed)
            result = verify_pair(outcome.original, outcome.source, func, list(spec.args), static,
                                 filename=outcome.filename, call=recompilation)
            where = f"{outcome.filename}::{func}"
            if result.verdict == "proved":
                echo(f"jaxfuse-lint: verified {where}: {result.summary()}")
            else:
                detail = result.error or result.summary()
                echo(f"jaxfuse-lint: {where}: fix not proved ({result.verdict}: {detail}); rolled back")
                rollback.append(func)
        if profile is not None and unspecified:
            rollback += _verify_with_profile(profile, outcome, unspecified, echo)
        if rollback:
            outcome.source = restore_functions(outcome.original, outcome.source, rollback)
            outcome.fixed = [d for d in outcome.fixed if not _inside_any(d, outcome.original, rollback)]


def _verify_with_profile(profile, outcome: FixOutcome, funcs: list[str], echo: Callable[[str], None]) -> list[str]:
    """Verify `funcs` through the recorded entry points that trace them; the functions to roll back.

    An entry point's fix holds when every recorded signature it could rebuild is proved
    or unchanged and at least one is proved; otherwise the changed functions it traces
    get their original text back."""
    from jaxfuse_lint.runtime.verify_profile import entries_to_verify, verify_fixed_text

    rollback: list[str] = []
    for entry in entries_to_verify(profile, outcome.original, funcs):
        traced = {entry["qualname"]} | {f.get("qualname") for f in profile.functions if f.get("entry") == entry["id"]}
        covered = [f for f in funcs if f in traced]
        checks = [c for c in verify_fixed_text(profile, outcome.original, outcome.source, outcome.filename,
                                               covered) if c.func == entry["qualname"]]
        ran = [c for c in checks if c.result is not None]
        where = f"{outcome.filename}::{entry['qualname']}"
        if ran and all(c.verdict in ("proved", "unchanged") for c in ran) and any(c.verdict == "proved" for c in ran):
            for c in ran:
                echo(f"jaxfuse-lint: verified {c.line()[len(outcome.filename) + 2:]}")
            continue
        if not ran:
            echo(f"jaxfuse-lint: {where}: no recorded signature could be rebuilt; fix kept unverified")
            continue
        for c in ran:
            echo(f"jaxfuse-lint: {c.line()}")
        echo(f"jaxfuse-lint: {where}: fix not proved by the recorded signatures; rolled back "
             f"{', '.join(f'`{f}`' for f in covered)}")
        rollback += [f for f in covered if f not in rollback]
    return rollback


def _inside_any(diagnostic, original: str, names: list[str]) -> bool:
    from jaxfuse_lint.locate import Locator

    module = cst.parse_module(original)
    funcs = _functions(module)
    nodes = [funcs[n] for n in names if n in funcs]
    loc = Locator(module, nodes)
    for node in nodes:
        start, end = loc.range(node)
        if start.row <= diagnostic.location.row <= end.row:
            return True
    return False
