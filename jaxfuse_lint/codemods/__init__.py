"""Codemods: one libcst codemod per fixable rule.

Each module here defines `CODE` (the rule it fixes), `build_fix(violation, model,
settings) -> FixPlan | None` (what `jaxfuse-lint --fix` calls with what the rule
found). What they share is in the `_`-prefixed modules (names, expressions, indexing,
statements, lookups, purity); `fixers()` skips those. The same fixes as libcst codemod
commands (`python -m libcst.tool codemod`) are in `jaxfuse_lint/engine/libcst_commands.py`:
a command runs the rule too, so it lives above the codemods.
"""
from __future__ import annotations

import importlib
import pkgutil
from functools import lru_cache
from typing import Callable


@lru_cache(maxsize=1)
def fixers() -> dict[str, Callable]:
    out: dict[str, Callable] = {}
    for info in pkgutil.iter_modules(__path__):
        if info.name.startswith("_") or info.name == "base":
            continue
        module = importlib.import_module(f"{__name__}.{info.name}")
        code = getattr(module, "CODE", None)
        build = getattr(module, "build_fix", None)
        if code and build:
            out[code] = build
    return out


def fixer_for(code: str) -> Callable | None:
    return fixers().get(code)
