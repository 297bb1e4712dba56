"""The premise `traced(value)`: is this value an abstract tracer while its function is traced?

The staged value analysis (model/staged_values.py) answers it twice: as rules have always read it,
where a framework's convention makes a Module body's input a tracer, and strictly, where only what
the code shows counts (jax's own rules: the positions a transform traces and not its static
arguments, the values partials bind, lax loops' carries, arrays a call passes, a parameter the body
uses as an array). Traced in the strict analysis is PROVEN, by the value's flow from a traced
parameter (its route named) or from a jax operation staged out under the trace; traced only in the
other is ASSUMED, naming the parameter and the convention (or, for `a and b`, the truth of `a` it
rests on), and DISPROVED where the code hashes the value (a `functools.cache`d function is given
it: a tracer is unhashable); not traced in either is no premise (rules do not report such values).
Under an eager `grad`, `differentiated` says which values carry the differentiated argument's
tangent (JF402's `float()`).
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

from jaxfuse_lint.model.api import STATIC_ATTRIBUTES
from jaxfuse_lint.model.omnistaging import omnistaged_function
from jaxfuse_lint.model.premises import LineOf, Premise, assumed, disproved, proven
from jaxfuse_lint.model.runtime_facts import traced_from_run
from jaxfuse_lint.model.scopes import Function, iter_children
from jaxfuse_lint.model.source_text import code_of
from jaxfuse_lint.model.staged_values import StagedValues, staged_values
from jaxfuse_lint.model.staging_transforms import DIFFERENTIATING
from jaxfuse_lint.model.traced import reason_parts
from jaxfuse_lint.model.values import ABSENT, NO_KEY, Kind, literal_key

if TYPE_CHECKING:
    from jaxfuse_lint.model.scopes import Scope
    from jaxfuse_lint.model.staging import StagingView

MAX_ROOT_DEPTH = 6


class TracedPremise:
    """Built once per model: `traced_premise(model)`."""

    def __init__(self, model: "StagingView") -> None:
        self.model = model
        self.values = staged_values(model)
        self.strict = staged_values(model, strict=True)
        self.read_names = {r.name for r in model.index.reads}
        self._diff_params: dict[int, dict] = {}

    def premise(self, expr: cst.CSTNode, scope: "Scope") -> Premise | None:
        """PROVEN, ASSUMED or DISPROVED `traced(expr)`; None where expr is not traced at all. With
        a recorded run (`check --profile`), what it saw of the parameters decides: DISPROVED or
        RECORDED (model/runtime_facts.py `traced_from_run`)."""
        found = self._premise_from_code(expr, scope)
        if found is None or getattr(self.model, "runtime", None) is None:
            return found
        return traced_from_run(self.model, found, self.roots(expr, scope),
                               staged=self.staged_origin(expr, scope) is not None)

    def _premise_from_code(self, expr: cst.CSTNode, scope: "Scope") -> Premise | None:
        m = self.model
        subject = f"`{code_of(m, expr, 40)}`"
        if self.strict.kind(expr, scope) is Kind.TRACED:
            roots = self.roots(expr, scope, self.strict)
            if roots:
                owner, name = roots[0]
                via = f"`{name}` is" if isinstance(expr, cst.Name) and expr.value == name else f"computed from `{name}`,"
                return proven("traced", subject, "value-flow",
                              f"{via} a traced argument of `{owner.display_name}` (",
                              *reason_parts(self.tracing_reason(owner, name)), ")")
            origin = self.staged_origin(expr, scope, self.strict)
            if origin is not None:
                return proven("traced", subject, "omnistaging", f"`{code_of(m, origin, 40)}` on line ", LineOf(origin),
                              " is staged out under the trace")
            return proven("traced", subject, "value-flow")
        if self.values.kind(expr, scope) is not Kind.TRACED:
            return None
        if isinstance(expr, cst.BooleanOperation) and self.strict.kind(expr.right, scope) is Kind.TRACED:
            op, truth, other = ("and", "true", "false") if isinstance(expr.operator, cst.And) else ("or", "false", "true")
            return assumed("traced", subject, f"assumes `{code_of(m, expr.left, 40)}` is {truth} where it runs "
                                              f"(where it is {other}, `{op}` returns that Python value)")
        roots = self.roots(expr, scope, self.values)
        hashed = [self.hashed_by_cache(owner, name) for owner, name in roots]
        if roots and all(h is not None for h in hashed):
            # Only a convention makes it traced, and the code hashes it: a Python value.
            (owner, name), (node, cached) = roots[0], hashed[0]
            where: tuple = (f"`{name}` is passed to `{cached.display_name}` on line ", LineOf(node), ", ") \
                if cached is not owner else (f"`{owner.display_name}` (line ", LineOf(node), ") is ")
            return disproved("traced", subject, "hashed-argument", *where,
                             "a `functools.cache`d function: its arguments are hashed and a tracer is "
                             f"unhashable (TypeError), so `{name}` holds a Python value")
        for owner, name in roots:
            why = self.strict.assumptions.get((id(owner), name))
            if why is not None and self.strict.param_kind(owner, name) is not Kind.TRACED:
                return assumed("traced", subject, f"assumes `{name}` is a tracer: {why}")
        return assumed("traced", subject, "assumes a value the code does not show to be traced is a tracer")

    def tracing_reason(self, fn: Function, name: str):
        """The route that makes parameter `name` of fn a tracer in the strict analysis (the first
        such; fn's first route where none does alone)."""
        for r in self.model.traced.reasons.get(fn, ()):
            if self.strict._reason_param_kind(fn, name, r) is Kind.TRACED:
                return r
        return self.model.trace_reason(fn)

    def hashed_by_cache(self, fn: Function, name: str, depth: int = 0) -> "tuple[cst.CSTNode, Function] | None":
        """Where parameter `name` of fn is hashed by a `functools.cache`/`lru_cache`: fn is such a
        function, or a call in fn passes it to one, directly or through one of the module's
        helpers that does (the call or fn's def, and the cached function).
        A tracer is unhashable (`Tracer.__hash__ = None`: calling a cached function with one raises
        TypeError), so code that runs this way is given a hashable Python value there."""
        m = self.model
        if _cached(m, fn) and name in fn.params:
            return fn.node, fn  # its own parameters are hashed on every call
        analysis = m.traced_analysis()
        for read in fn.reads:
            if read.name.value != name or m.bindings_at(read.name, fn) is None:
                continue
            arg = m.parent(read.name)
            call = m.parent(arg) if isinstance(arg, cst.Arg) and not arg.star else None
            if not isinstance(call, cst.Call) or arg not in call.args:
                continue
            for callee, bound in analysis.callables(call.func, fn, direct_only=True):
                if _cached(m, callee):
                    return call, callee
                if depth < 1 and not callee.is_lambda:
                    param = _param_of(callee, call, arg, bound)
                    inner = self.hashed_by_cache(callee, param, depth + 1) if param is not None else None
                    if inner is not None:
                        return call, inner[1]
        return None

    # -- eager differentiation ---------------------------------------------------------------------------
    def differentiated(self, expr: cst.CSTNode, fn: Function) -> "tuple[str, object] | None":
        """Where fn is run by an eager differentiating transform (`jax.grad(f)(3.0)`, not staged):
        the differentiated parameter (and its route) that `expr` carries a tangent of, computed from
        it by differentiable operations (arithmetic, jnp functions other than `floor`, `sign`,
        comparisons...). Such a value is a JVP tracer even for concrete inputs: `if`, `bool()`
        and `int()` of it see the primal value, `float()` and `complex()` raise (jax#2783), as
        NumPy functions do."""
        params = self.differentiated_params(fn)
        if not params:
            return None
        name = self._tangent_root(expr, fn, set(params), 0)
        return (name, params[name]) if name is not None else None

    def differentiated_premise(self, expr: cst.CSTNode, fn: Function) -> "tuple[Premise, str, object] | None":
        """PROVEN `traced(expr)` where fn runs under an eager differentiating transform and expr
        carries the tangent of a differentiated argument (`differentiated`), with that argument's
        name and route; None otherwise."""
        found = self.differentiated(expr, fn)
        if found is None:
            return None
        name, reason = found
        via = f"`{name}` is" if isinstance(expr, cst.Name) and expr.value == name else f"computed from `{name}`,"
        premise = proven("traced", f"`{code_of(self.model, expr, 40)}`", "differentiated-argument",
                         f"{via} the differentiated argument of `{fn.display_name}` (", *reason_parts(reason),
                         "): a tracer carrying its tangent")
        return premise, name, reason

    def differentiated_params(self, fn: Function) -> dict:
        found = self._diff_params.get(id(fn))
        if found is None:
            found = {}
            for r in self.model.traced.reasons.get(fn, ()):
                if r.kind not in ("transform", "decorator") or r.transform not in DIFFERENTIATING:
                    continue
                argnums = self.strict._argnums(r)
                for name in fn.params:
                    if argnums is not None and name not in fn.star_params and name not in found \
                            and self.strict._param_index(fn, name, r) in argnums:
                        found[name] = r
            self._diff_params[id(fn)] = found
        return found

    def _tangent_root(self, e: cst.CSTNode, fn: Function, names: set, depth: int) -> str | None:
        m = self.model
        if depth > MAX_ROOT_DEPTH:
            return None
        if isinstance(e, cst.Name):
            found = m.bindings_at(e, fn)
            if found is None or found[0] is not fn or not found[1]:
                return None
            roots = set()
            for b in found[1]:
                if b.kind == "param" and b.name in names:
                    roots.add(b.name)
                elif b.kind in ("assign", "annassign") and b.index is None and b.value is not None:
                    root = self._tangent_root(b.value, fn, names, depth + 1)
                    if root is None:
                        return None
                    roots.add(root)
                else:
                    return None
            return min(roots) if roots else None
        if isinstance(e, cst.BinaryOperation) and isinstance(e.operator, _SMOOTH_OPERATORS):
            return self._tangent_root(e.left, fn, names, depth + 1) or self._tangent_root(e.right, fn, names, depth + 1)
        if isinstance(e, cst.UnaryOperation) and isinstance(e.operator, (cst.Minus, cst.Plus)):
            return self._tangent_root(e.expression, fn, names, depth + 1)
        if isinstance(e, cst.Subscript):
            return self._tangent_root(e.value, fn, names, depth + 1)
        if isinstance(e, cst.Call):
            qn = m.qn(e.func, fn)
            if qn is None and isinstance(e.func, cst.Attribute) and e.func.attr.value in _SMOOTH_METHODS:
                return self._tangent_root(e.func.value, fn, names, depth + 1)
            if qn is not None and qn.startswith(("jax.numpy.", "jax.lax.", "jax.nn.", "jax.scipy.")) and \
                    qn.rsplit(".", 1)[-1] not in _ZERO_TANGENT and not qn.startswith(("jax.lax.stop_gradient",)):
                for a in e.args:
                    if a.keyword is None and not a.star:
                        root = self._tangent_root(a.value, fn, names, depth + 1)
                        if root is not None:
                            return root
        return None

    # -- where a traced value comes from ----------------------------------------------------------------
    def staged_origin(self, expr: cst.CSTNode, scope: "Scope", values: StagedValues | None = None) -> cst.Call | None:
        """A jax array operation a traced expression is computed from that no traced argument
        feeds (`jnp.arange(3)`, `K[0]` of a captured jax array: tracers by omnistaging), through
        local names."""
        values = values or self.values
        seen: set = set()
        stack = [(expr, scope, 0)]
        while stack:
            node, sc, depth = stack.pop()
            if isinstance(node, cst.BaseExpression) and values.kind(node, sc) is not Kind.TRACED:
                continue
            if isinstance(node, cst.Call) and (omnistaged_function(self.model.qn(node.func, sc)) or (
                    isinstance(node.func, cst.Call) and self.model.qn(node.func.func, sc) in DIFFERENTIATING)):
                return node  # (`jax.grad(loss)(params)` in staged code: a derivative is staged out too)
            if values._operates_on_captured_array(node, sc):
                return node  # `K[0]` of a jax array bound outside: staged out too
            if isinstance(node, cst.Call) and values.jitted_call(node, sc):
                return node  # `jit_f(n)`: a jitted call is staged out too
            if isinstance(node, cst.Name) and node in self.read_names:
                found = self.model.bindings_at(node, sc)
                if found is None or not isinstance(found[0], Function):
                    continue
                owner, bindings = found
                for b in bindings:
                    if id(b.node) not in seen and b.value is not None and depth < MAX_ROOT_DEPTH:
                        seen.add(id(b.node))
                        stack.append((b.value, owner, depth + 1))
                continue
            if isinstance(node, (cst.Lambda, cst.FunctionDef)):
                continue
            stored = _keyed_sources(values, node, sc) if depth < MAX_ROOT_DEPTH else None
            if stored is not None:
                stack.extend((e, s, depth + 1) for e, s in reversed(stored))
                continue
            stack.extend((c, sc, depth) for _, c in reversed(list(iter_children(node))))
        return None

    def roots(self, expr: cst.CSTNode, scope: "Scope", values: StagedValues | None = None) -> list[tuple[Function, str]]:
        """The traced parameters a traced expression is computed from (through local names)."""
        values = values or self.values
        out: list[tuple[Function, str]] = []
        seen: set = set()
        stack = [(expr, scope, 0)]
        while stack:
            node, sc, depth = stack.pop()
            if (isinstance(node, cst.BaseExpression) and not isinstance(node, cst.Attribute)
                    and values.kind(node, sc) is not Kind.TRACED):
                continue  # (attributes are looked through: `x.mean` in `x.mean()`)
            if isinstance(node, cst.Attribute) and node.attr.value in STATIC_ATTRIBUTES:
                continue  # `jnp.ones(x.shape)` is not computed from x's values
            if isinstance(node, cst.Name) and node in self.read_names:
                found = self.model.bindings_at(node, sc)
                if found is None or not isinstance(found[0], Function):
                    continue
                owner, bindings = found
                for b in bindings:
                    key = (id(owner), b.name, id(b.node))
                    if key in seen:
                        continue
                    seen.add(key)
                    if b.kind == "param":
                        if values.param_kind(owner, b.name) is Kind.TRACED and (owner, b.name) not in out:
                            out.append((owner, b.name))
                    elif b.value is not None and depth < MAX_ROOT_DEPTH:
                        stack.append((b.value, owner, depth + 1))
                continue
            if isinstance(node, (cst.Lambda, cst.FunctionDef)):
                continue
            stored = _keyed_sources(values, node, sc) if depth < MAX_ROOT_DEPTH else None
            if stored is not None:
                stack.extend((e, s, depth + 1) for e, s in reversed(stored))  # `d["step"]`: what d holds there
                continue
            stack.extend((c, sc, depth) for _, c in reversed(list(iter_children(node))))
        return out


# What carries a tangent from its operands: arithmetic other than `//` and `%`, array methods that
# compute from the values, and jax functions other than those whose derivative is zero everywhere.
_SMOOTH_OPERATORS = (cst.Add, cst.Subtract, cst.Multiply, cst.Divide, cst.Power, cst.MatrixMultiply)
_SMOOTH_METHODS = frozenset({"sum", "mean", "prod", "max", "min", "reshape", "transpose", "squeeze", "ravel",
                             "flatten", "dot", "cumsum", "cumprod", "std", "var", "conj", "real", "imag", "T"})
_ZERO_TANGENT = frozenset({
    "floor", "ceil", "round", "rint", "trunc", "fix", "sign", "argmax", "argmin", "argsort", "nonzero",
    "stop_gradient", "equal", "not_equal", "less", "less_equal", "greater", "greater_equal", "logical_and",
    "logical_or", "logical_not", "logical_xor", "isnan", "isinf", "isfinite", "isclose", "allclose", "array_equal",
    "floor_divide", "shape", "ndim", "size", "zeros_like", "ones_like", "empty_like", "full_like", "searchsorted",
    "digitize", "bincount", "count_nonzero", "any", "all"})

# Decorators that memoise a function on its (hashed) arguments.
CACHING = frozenset({"functools.cache", "functools.lru_cache"})


def _cached(model: "StagingView", fn: Function) -> bool:
    node = fn.node
    if not isinstance(node, cst.FunctionDef):
        return False
    scope = fn.parent or model.index.scope
    for d in node.decorators:
        target = d.decorator.func if isinstance(d.decorator, cst.Call) else d.decorator
        if model.qn(target, scope) in CACHING:
            return True
    return False


def _keyed_sources(values: StagedValues, node: cst.CSTNode, scope: "Scope") -> list | None:
    """For `d["step"]` where the code shows what d holds under that key (not a traced pytree's item):
    the values it may be (`ValueAnalysis.keyed_kind`); for `obj.attr` of an object the code builds,
    and a call of a method returning `self.attr`, what it was built with (model/object_fields.py);
    None otherwise."""
    if isinstance(node, cst.Attribute):
        return values.field_sources(node, scope) or None
    if isinstance(node, cst.Call):
        return values.returned_fields(node, scope)  # `param(t)` returning `self.value`: what it was built with
    if not isinstance(node, cst.Subscript):
        return None
    key = literal_key(node)
    if key is NO_KEY or values.kind(node.value, scope) is Kind.TRACED:
        return None
    found: list = []
    if values.keyed_kind(node.value, key, scope, sources=found) in (None, ABSENT):
        return None
    return found


def _param_of(fn: Function, call: cst.Call, arg: cst.Arg, bound: bool) -> str | None:
    """The parameter of fn that `arg` of `call` fills."""
    if arg.keyword is not None:
        return arg.keyword.value if arg.keyword.value in fn.params else None
    if any(a.star for a in call.args):
        return None
    params = [p for p in fn.params if p not in fn.star_params]
    if bound and params and params[0] in ("self", "cls"):
        params = params[1:]
    index = [a for a in call.args if a.keyword is None].index(arg)
    return params[index] if index < len(params) else None


def traced_premise(model: "StagingView") -> TracedPremise:
    """The model's TracedPremise (built once per model, kept with it)."""
    t = model.__dict__.get("_traced_premise")
    if t is None:
        t = model.__dict__["_traced_premise"] = TracedPremise(model)
    return t


__all__ = ["TracedPremise", "traced_premise"]
