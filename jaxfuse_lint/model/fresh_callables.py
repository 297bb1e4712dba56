"""What a compiling call (`jax.jit(f)`) gets: a description of the callable for messages, and
whether it is a new function object each time the code runs (a lambda, a `partial`, an inner
`def`, a bound method, a factory's result), which misses JAX's compilation cache."""
from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

from jaxfuse_lint.model.scopes import Function, Scope

if TYPE_CHECKING:
    from jaxfuse_lint.model import SemanticModel


# Calls that return a new function object every time they run: jitting their result misses
# JAX's compilation cache (keyed on the function object) like a lambda does.
FRESH_WRAPPERS = frozenset({"functools.partial", "chex.assert_max_traces", "jax.tree_util.Partial"})

# Compiling transforms whose every application is a new jitted function that shares no compiled
# program with another application of the same function: `nnx.jit(f)` wraps `f` in a new inner
# function each time, so `nnx.jit(step)(x)` in a loop compiles on every iteration even for one
# module-level `step` (measured, flax 0.12.8: five applications, five compilations; `jax.jit(f)`
# five times compiles once).
OWN_CACHE = frozenset({"flax.nnx.jit", "flax.nnx.pmap"})


# lax control flow called outside a trace traces its function arguments and compiles the result,
# caching on the functions' identity (measured, jax 0.10: `lax.scan(obj.step, ...)` five times,
# five compilations; a module-level function, one): {canonical name: argument slots}.
EAGER_COMPILING: dict[str, tuple[tuple[int, str], ...]] = {
    "jax.lax.scan": ((0, "f"),),
    "jax.lax.fori_loop": ((2, "body_fun"),),
    "jax.lax.while_loop": ((0, "cond_fun"), (1, "body_fun")),
    "jax.lax.map": ((0, "f"),),
    "jax.lax.cond": ((1, "true_fun"), (2, "false_fun")),
}
# Of those, the ones that wrap their function in a new one on every call, so that even one
# module-level function compiles again (`lax.map(f, xs)` scans a new `lambda _, x: ((), f(x))`:
# measured, five calls, five compilations).
EAGER_OWN_CACHE = frozenset({"jax.lax.map"})


def compiles_per_application(transform: str) -> bool:
    """Whether every application of this compiling transform compiles on its own (`OWN_CACHE`,
    `EAGER_OWN_CACHE`)."""
    return transform in OWN_CACHE or transform in EAGER_OWN_CACHE


def describe_callable(model: "SemanticModel", target: cst.BaseExpression | None, scope: Scope,
                      loop: cst.CSTNode | None) -> tuple[str, bool | None]:
    """What is being compiled, and whether it is a fresh object each time this code runs
    (each iteration of `loop`, or each call of the function `scope` when `loop` is None):
    True, False, or None when it is the result of a call the model cannot see into."""
    if isinstance(target, cst.Lambda):
        return "a lambda", True
    if isinstance(target, cst.Call):
        return _describe_call_result(model, target, scope)
    if isinstance(target, cst.Name):
        fn = reaching_function(model, target, scope)
        if fn is not None and isinstance(fn.node, cst.FunctionDef):
            if fn.parent is scope and loop is not None:
                if _inside(model, fn.node, loop):
                    return f"`{fn.name}` (a `def` in the loop body)", True
                return f"`{fn.name}` (one function, defined before the {_loop_kind(loop)})", False
            if fn.parent is scope and isinstance(scope, Function):
                return f"`{fn.name}`, defined inside `{scope.display_name}`", True
            return f"the module-level function `{fn.name}`", False
        if fn is not None and fn.is_lambda:
            if isinstance(scope, Function) and fn.parent is scope:
                if loop is not None and not _inside(model, fn.node, loop):
                    return f"`{target.value}` (one lambda, made before the {_loop_kind(loop)})", False
                if loop is not None:
                    return f"`{target.value}` (a lambda made in the {_loop_kind(loop)} body)", True
                return f"`{target.value}`, a lambda made inside `{scope.display_name}`", True
            return f"`{target.value}`", False
        made = lambda_bound_to(model, target.value, scope, target)
        if made is not None and isinstance(scope, Function):
            if loop is None:
                return f"`{target.value}`, a lambda made inside `{scope.display_name}`", True
            if _inside(model, made, loop):
                return f"`{target.value}` (a lambda made in the {_loop_kind(loop)} body)", True
            return f"`{target.value}` (one lambda, made before the {_loop_kind(loop)})", False
        called = call_bound_to(model, target, scope)
        if called is not None:
            # `f = partial(step, k=k)`, then `jax.jit(f)`: what the call gives, made where the binding is.
            what, fresh = _describe_call_result(model, called, scope)
            per_run = _inside(model, called, loop) if loop is not None else model.scope_of(called) is scope
            if not per_run:
                where = f"before the {_loop_kind(loop)}" if loop is not None else "once, outside the function"
                return f"`{target.value}` (one {_made_by(model, called, scope)}, made {where})", False
            if fresh:
                return f"`{target.value}` ({_made_by(model, called, scope)} made anew each time)", True
            if fresh is False:
                return f"`{target.value}`", False
            return f"`{target.value}` (what {what} returns)", None
    if isinstance(target, cst.Attribute):
        text = model.module.code_for_node(target).strip()[:40]
        if _bound_method(model, target, scope):
            return f"`{text}` (a bound method: a new object each time it is read)", True
        owner = _plain_function_owner(model, target, scope)
        if owner is not None:
            return f"`{text}` ({owner})", False
        return f"`{text}`", None
    if target is None:
        return "a callable", False
    return f"`{model.module.code_for_node(target).strip()[:40]}`", False


def call_bound_to(model: "SemanticModel", read: cst.Name, scope: Scope) -> cst.Call | None:
    """The call a name is bound to where it is read (`f = partial(step, k=k)`: its one reaching
    binding), if so."""
    found = model.bindings_at(read, scope)
    if found is None or len(found[1]) != 1:
        return None
    b = found[1][0]
    return b.value if b.kind == "assign" and b.index is None and isinstance(b.value, cst.Call) else None


def _made_by(model: "SemanticModel", call: cst.Call, scope: Scope) -> str:
    if model.qn(call.func, scope) == "functools.partial":
        return "`functools.partial`"
    return f"`{' '.join(model.module.code_for_node(call.func).split())[:30]}(...)`"


def _plain_function_owner(model: "SemanticModel", target: cst.Attribute, scope: Scope) -> str | None:
    """`utils.step` with `utils` an imported module, `Solver.project` with `Solver` a class of the
    module: one function object however often it is read, so the compiled program is found in the
    cache. None when the code does not show what the attribute is (a bound method reads as a new
    object every time)."""
    from jaxfuse_lint.model.instances import instances

    root = target.value
    if isinstance(root, cst.Name):
        found = model.lookup(root.value, scope)
        if found is not None and len(found[1]) == 1:
            b = found[1][0]
            if b.kind == "import" and isinstance(b.node, cst.Import):
                return f"a function of the module `{b.qualified_name}`"
    inst = instances(model)
    ci = inst.class_named(root, scope)
    if ci is not None:
        method = inst.method(ci, target.attr.value)
        if method is not None and isinstance(method.node, cst.FunctionDef):
            return f"a function of the class `{ci.name}`"
    ci = inst.instance_class(root, scope)
    if ci is not None:
        method = inst.method(ci, target.attr.value)
        if method is not None and isinstance(method.node, cst.FunctionDef) and any(
                model.qn(d.decorator, ci) == "builtins.staticmethod" or (
                    isinstance(d.decorator, cst.Name) and d.decorator.value == "staticmethod")
                for d in method.node.decorators):
            return f"a staticmethod of `{ci.name}`"
    return None


def _bound_method(model: "SemanticModel", target: cst.Attribute, scope: Scope) -> bool:
    """`obj.method` where `obj` is an instance of a class of the module and `method` a plain
    method of it: Python builds a new bound-method object on every read, and JAX's cache,
    keyed on the callable object, misses (measured: `jax.jit(s.update)(x)` five times traces
    five times; `f = s.update` once, then `jax.jit(f)` five times, traces once)."""
    from jaxfuse_lint.model.instances import instances

    inst = instances(model)
    ci = inst.instance_class(target.value, scope)
    if ci is None:
        return False
    method = inst.method(ci, target.attr.value)
    if method is None or not isinstance(method.node, cst.FunctionDef):
        return False
    # A decorated method (staticmethod, property, ...) may read as anything; a jitted one binds like a
    # function (`jax.jit`'s and `jax.pmap`'s wrappers are descriptors: `obj.step` is a new bound method
    # on every read, measured).
    return all(_binding_decorator(model, d.decorator, method.parent) for d in method.node.decorators)


_BINDING_TRANSFORMS = frozenset({"jax.jit", "jax.pmap", "jax.experimental.pjit.pjit"})


def _binding_decorator(model: "SemanticModel", expr: cst.BaseExpression, scope) -> bool:
    """`@jax.jit`, `@partial(jax.jit, static_argnums=0)`: the method still binds to its instance."""
    from jaxfuse_lint.model.traced import TracedAnalysis

    t = TracedAnalysis(model).transform_of(expr, scope)
    return t is not None and t[0] in _BINDING_TRANSFORMS


def lambda_bound_to(model: "SemanticModel", name: str, scope: Scope,
                    read: cst.Name | None = None) -> cst.Lambda | None:
    """The lambda a local name is bound to (`f = lambda v: ...`: its only binding, or the only one
    that reaches `read`), if so."""
    found = model.bindings_at(read, scope) if read is not None else model.lookup(name, scope)
    if found is None or found[0] is not scope or len(found[1]) != 1:
        return None
    b = found[1][0]
    return b.value if b.kind == "assign" and b.index is None and isinstance(b.value, cst.Lambda) else None


def reaching_function(model: "SemanticModel", read: cst.Name, scope: Scope) -> Function | None:
    """The def or lambda a name stands for where it is read: the one binding of it that reaches the
    read (two identical blocks that each define `step` each use their own), else what
    `function_named` says."""
    found = model.bindings_at(read, scope)
    if found is not None and len(found[1]) == 1 and found[1][0].function is not None:
        return found[1][0].function
    return model.function_named(read.value, scope)


def _loop_kind(loop: cst.CSTNode) -> str:
    return "loop" if isinstance(loop, (cst.For, cst.While)) else "comprehension"


def _describe_call_result(model: "SemanticModel", target: cst.Call, scope: Scope) -> tuple[str, bool | None]:
    """`jax.jit(g(...))`: a transform (`jax.grad(f)`), a `partial` or a wrapper returns a new
    function on every call; a local factory does when it returns a lambda, an inner def or one
    of those (unless it is memoised); anything else is unknown."""
    from jaxfuse_lint.model.api import TRANSFORMS
    from jaxfuse_lint.model.compile_cache import memoised_function

    code = " ".join(model.module.code_for_node(target).split())
    code = code if len(code) <= 40 else code[:39] + "…"
    qn = model.qn(target.func, scope)
    if qn == "functools.partial":
        return "a `functools.partial` object", True
    if qn in TRANSFORMS or qn in FRESH_WRAPPERS:
        return f"`{code}` (a new function object each time)", True
    if isinstance(target.func, cst.Name):
        fn = model.function_named(target.func.value, scope)
        if fn is not None and isinstance(fn.node, cst.FunctionDef):
            if memoised_function(model, fn):
                return f"`{code}` (memoised: the same function for the same arguments)", False
            if fn.returns and all(_fresh_return(model, r, fn) for r in fn.returns):
                return f"`{code}` (`{fn.name}` returns a new function each time)", True
    return f"`{code}`", None


def _fresh_return(model: "SemanticModel", expr: cst.BaseExpression, fn: Function) -> bool:
    if isinstance(expr, cst.Lambda):
        return True
    if isinstance(expr, cst.Call):
        qn = model.qn(expr.func, fn)
        return qn == "functools.partial" or qn in FRESH_WRAPPERS or qn in _transforms()
    if isinstance(expr, cst.Name):
        inner = model.function_named(expr.value, fn)
        return inner is not None and inner.parent is fn
    return False


def _transforms() -> frozenset:
    from jaxfuse_lint.model.api import TRANSFORMS
    return TRANSFORMS


def _inside(model: "SemanticModel", node: cst.CSTNode, container: cst.CSTNode) -> bool:
    return any(a is container for a in model.ancestors(node))


def array_data(model: "SemanticModel", bindings, scope: Scope) -> bool:
    """A local bound only to arrays (NumPy or jax, computed in the function): baked into the
    program as data, which an argument would carry as well; the program's structure does not
    depend on it."""
    if model.numpy_arrays.binding_is_array(bindings, scope) or model.device_arrays.binding_is_array(bindings, scope):
        return True
    return bool(bindings) and all(b.kind in ("assign", "annassign") and b.index is None
                                  and _array_value(model, b.value, scope) for b in bindings)


_ARRAY_CONSTRUCTORS = frozenset({"numpy.array", "numpy.asarray", "jax.numpy.array", "jax.numpy.asarray",
                                 "numpy.stack", "jax.numpy.stack"})


def _array_value(model: "SemanticModel", e: cst.BaseExpression | None, scope, depth: int = 0) -> bool:
    """`np.array([[c, -s], [s, c]])`, or a call of the module's helper that returns one."""
    if not isinstance(e, cst.Call) or depth > 3:
        return False
    qn = model.qn(e.func, scope)
    if qn in _ARRAY_CONSTRUCTORS:
        return True
    callee = model.function_named(e.func.value, scope) if isinstance(e.func, cst.Name) else None
    return callee is not None and not callee.is_lambda and bool(callee.returns) and all(
        _array_value(model, r, callee, depth + 1) or model.numpy_arrays.is_array(r, callee) for r in callee.returns)
