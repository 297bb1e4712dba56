"""JF406 fix: a NumPy function applied to a tracer -> its `jax.numpy` namesake.

    np.abs(x)        ->   jnp.abs(x)
    np.asarray(x)    ->   jnp.asarray(x)
    np.linalg.norm(v) ->  jnp.linalg.norm(v)

Only the function is rewritten (the arguments are left as written: a nested NumPy call on a
tracer is its own finding). The module's alias for `jax.numpy` is reused, or `import jax.numpy
as jnp` is added.

Safety: the original raised `TracerArrayConversionError` at trace time for every input, so where
the function runs only under tracing (jitted itself, or called only from traced code, or decorated
with `jax.grad` and given the differentiated argument) nothing that worked changes: safe. Where host code also calls it with NumPy arrays, it now returns a
jax array computed in the default dtype (float32 without x64) where NumPy used float64: unsafe.
A 64-bit `dtype=` (canonicalised by `jax.numpy` without x64) is unsafe too.
"""
from __future__ import annotations

import libcst as cst

from jaxfuse_lint.codemods._names import jnp_name
from jaxfuse_lint.codemods.plan import FixPlan, plan
from jaxfuse_lint.model import SemanticModel, keyword
from jaxfuse_lint.model.call_frequency import call_sites
from jaxfuse_lint.model.scopes import Function
from jaxfuse_lint.model.api import CONTROL_FLOW
from jaxfuse_lint.model.staging_transforms import STAGING

CODE = "JF406"

_WIDE = ("float64", "int64", "uint64", "complex128", "double")


def build_fix(violation, model: SemanticModel, settings) -> FixPlan | None:
    data = violation.data
    if not data.get("fixable"):
        return None
    scope: Function = data["scope"]
    jnp = jnp_name(model, [scope])
    if jnp is None:
        return None
    new_func = jnp.attr(data["jnp"])
    written = f"{jnp.name}.{data['jnp']}"
    why = _unsafe(model, scope, data["call"], data.get("always_raised", False))
    message = f"Replace with `{written}`"
    if why:
        message += f"; unsafe: {why}"
    return plan(not why, message, {data["func"]: new_func}, jnp.imports)


def _unsafe(model: SemanticModel, fn: Function, call: cst.Call, always_raised: bool = False) -> str:
    dtype = keyword(call, "dtype")
    if dtype is not None:
        text = model.module.code_for_node(dtype)
        if any(w in text for w in _WIDE):
            return "a 64-bit `dtype=` becomes 32-bit in `jax.numpy` without x64"
    if not always_raised and not _runs_only_traced(model, fn):
        return (f"`{fn.display_name}` also runs on the host, where NumPy returned a float64 NumPy array and "
                "`jax.numpy` returns a jax array in the default dtype")
    return ""


def _runs_only_traced(model: SemanticModel, fn: Function) -> bool:
    """fn's Python runs only while it is traced: a staging transform applies to it directly and
    rebinds its name (`@jax.jit`, `f = jax.jit(f)`), or every use of it is a call from traced
    code or hands it to a transform or a lax loop (`jax.vmap(row_norm)`)."""
    for r in model.traced.reasons.get(fn, ()):
        if r.kind == "decorator" and r.transform in STAGING:
            return True
        if r.kind == "transform" and r.transform in STAGING and r.rebound is not None:
            return True
    sites, _ = call_sites(model, fn)
    if any(not model.is_traced_scope(s.scope) for s in sites):
        return False
    called = {id(s.call.func) for s in sites}
    analysis = model.traced_analysis()
    for read in model.index.reads:
        if read.name.value != fn.name or id(read.name) in called:
            continue
        if model.function_named(read.name.value, read.scope) is not fn:
            continue
        arg = model.parent(read.name)
        call = model.parent(arg) if isinstance(arg, cst.Arg) else None
        if not isinstance(call, cst.Call):
            return False
        if analysis.transform_of(call.func, read.scope) is None and model.qn(call.func, read.scope) not in CONTROL_FLOW:
            return False
    return True
