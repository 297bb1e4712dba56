"""Library mode: functions assumed traced because the project says so.

A library's kernels are traced by its users, not in the library itself: nothing in
`pkg/kernels.py` calls `jax.jit`. `[tool.jaxfuse-lint] assume-traced` names them:

* a list of glob patterns over qualified names (`"pkg.kernels.*"`, `"pkg.ops.Solver.step"`),
  matched against `module.function` and `module.Class.method`;
* the string `"public-array-functions"`: every public top-level function (and public method
  of a public top-level class) one of whose parameters reaches a `jax.numpy`/`jax.lax` call.

Assumed-traced functions are traced and staged (what users do with them is `jit`), but their
parameters' kinds stay unknown: a parameter may be a static size or a flag the caller
passes as a Python value.
"""
from __future__ import annotations

import fnmatch
from typing import TYPE_CHECKING, Iterator

import libcst as cst

from jaxfuse_lint.model.scopes import Function, walk

if TYPE_CHECKING:
    from jaxfuse_lint.model.view import ModelView

PUBLIC_ARRAY_FUNCTIONS = "public-array-functions"
ASSUMED = "assumed traced (configured)"
# Calls that take arrays: a parameter reaching one is an array parameter.
ARRAY_PREFIXES = ("jax.numpy.", "jax.lax.", "jax.scipy.", "jax.nn.", "jax.random.", "jax.experimental.")


def assumed_functions(model: "ModelView", module_name: str, patterns: tuple[str, ...]) -> Iterator[Function]:
    if not patterns:
        return
    public = PUBLIC_ARRAY_FUNCTIONS in patterns
    globs = [p for p in patterns if p != PUBLIC_ARRAY_FUNCTIONS]
    top = model.index.scope
    for fn in model.index.functions:
        if fn.is_lambda:
            continue
        if fn.parent is top:
            qualified = f"{module_name}.{fn.name}"
        elif fn.cls is not None and fn.cls.parent is top:
            qualified = f"{module_name}.{fn.cls.name}.{fn.name}"
        else:
            continue
        if any(fnmatch.fnmatchcase(qualified, g) for g in globs):
            yield fn
        elif public and _is_public(fn) and reaches_array_call(model, fn):
            yield fn


def _is_public(fn: Function) -> bool:
    if fn.name.startswith("_"):
        return False
    return fn.cls is None or not fn.cls.name.startswith("_")


def reaches_array_call(model: "ModelView", fn: Function) -> bool:
    """Whether a parameter flows (through local assignments) into a jnp/lax call's arguments."""
    names = {p for p in fn.params if p not in ("self", "cls")}
    if not names:
        return False
    # Local names computed from parameters, to a fixpoint (a few rounds are plenty).
    for _ in range(4):
        grown = False
        for name, bindings in fn.bindings.items():
            if name in names:
                continue
            for b in bindings:
                if b.value is not None and _reads(b.value, names):
                    names.add(name)
                    grown = True
                    break
        if not grown:
            break
    for site in fn.calls:
        qn = model.qn(site.call.func, fn)
        if qn is None or not qn.startswith(ARRAY_PREFIXES):
            continue
        if any(_reads(a.value, names) for a in site.call.args):
            return True
    return False


def _reads(expr: cst.BaseExpression, names: set[str]) -> bool:
    return any(isinstance(n, cst.Name) and n.value in names for n in walk(expr))
