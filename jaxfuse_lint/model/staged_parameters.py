"""Which parameters of a traced function hold abstract tracers, by the route that traces it
(a staging, batching, filtering or differentiating transform and its options, lax control flow,
a driver, a framework body, a partial, a pytree map, another module): the parameter half of
the staged value analysis (`StagedParameters`, which model/staged_values.py's `StagedValues`
extends with expressions)."""
from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

from jaxfuse_lint.model.api import CONTROL_FLOW, JNP_STATIC_FUNCTIONS, TRANSFORMS
from jaxfuse_lint.model import routes
from jaxfuse_lint.model.instances import instances
from jaxfuse_lint.model.omnistaging import STATIC_RESULT_FUNCTIONS
from jaxfuse_lint.model.route_calls import route_calls
from jaxfuse_lint.model.staging import staging
from jaxfuse_lint.model.staging_transforms import (BATCHING, DIFFERENTIATING, FILTERED, STAGING, _literal_options,
                                                   option_calls, options_understood)
from jaxfuse_lint.model.traced import _literal_ints, _literal_strs, keyword, positional
from jaxfuse_lint.model.values import STATIC, TRACED, UNKNOWN, Kind, ValueAnalysis, combine

if TYPE_CHECKING:
    from jaxfuse_lint.model.scopes import Function, Scope
    from jaxfuse_lint.model.staging import StagingView

# lax drivers whose function's second argument is a slice of `xs`.
_SCANS = frozenset({"jax.lax.scan", "haiku.scan", "equinox.internal.scan"})
# Callables that bind some arguments and call the function later (`functools.partial`).
_PARTIALS = frozenset(n for n, r in routes.ROUTES.items() if r.kind == "partial")
# pytree functions whose function argument receives leaves.
TREE_MAPS = frozenset({"jax.tree_util.tree_map", "jax.tree.map", "jax.tree_map"})


class StagedParameters(ValueAnalysis):
    """The kinds of a traced function's parameters where it is staged: TRACED only for what is
    known to be an abstract tracer (see `StagedValues`, model/staged_values.py)."""

    model: "StagingView"
    # False: a parameter that a convention makes a tracer (a Module body's input) is TRACED. True
    # (`staged_values(model, strict=True)`): such a parameter is TRACED only where the code shows it
    # (its body uses it as an array, a call passes it one), else UNKNOWN, and what the convention
    # would have assumed is kept in `assumptions` (model/traced_premise.py reads both analyses:
    # traced in the strict one is proven, traced only in the other is assumed).
    strict = False

    @property
    def assumptions(self) -> dict[tuple[int, str], str]:
        """(id(fn), parameter) -> what the convention assumes of it, in a few words."""
        found = self.__dict__.get("_assumptions")
        if found is None:
            found = self.__dict__["_assumptions"] = {}
        return found

    def _assumed_traced(self, fn: "Function", name: str, why: str) -> Kind:
        self.assumptions[(id(fn), name)] = why
        return UNKNOWN if self.strict else TRACED

    def _reason_param_kind(self, fn: "Function", name: str, r) -> Kind:
        if self._string_annotated(fn, name):
            return STATIC  # `jac: Literal["fwd", "bwd"]`, `mode: str`: JAX cannot trace a string
        if r.kind == "control-flow":
            return self._control_flow_param_kind(fn, name, r)
        if r.kind in ("driver", "decorator", "transform"):
            bound = self._partial_bound_kind(fn, name, r)
            if bound is not None:
                # `diffrax.ODETerm(partial(f, args=3))`, `jax.vmap(partial(loss, n=3))`: the
                # parameter holds what the partial bound (static if that value is).
                return bound
        if r.kind in ("decorator", "transform"):
            t = r.transform
            if t == "flax.linen.scan":
                return self._flax_scan_param_kind(fn, name, r)
            if t in FILTERED:
                # equinox keeps non-array arguments static: only a parameter annotated as an
                # array, or passed arrays by every call in the module, is known to be a tracer.
                return TRACED if self._array_annotated(fn, name) or self._passed_arrays(fn, name) else UNKNOWN
            if t in BATCHING:
                mapped = self._mapped(fn, name, r)
                if mapped is False:
                    # `vmap(f, in_axes=(0, None))`: an unmapped argument is passed through as is.
                    return self._passed_through(fn, name, r)
                if mapped is True:
                    if not options_understood(r, t, in_axes_read=True):
                        return UNKNOWN
                    return super()._reason_param_kind(fn, name, r)
            if t in STAGING or t in BATCHING:
                if not options_understood(r, t):
                    return UNKNOWN
                if (name in fn.params_with_default or self._keyword_only(fn, name)) \
                        and not self._is_static_param(fn, name, r):
                    passed = self._passed_by_calls(fn, name, r)
                    if passed is not None:
                        return passed
                return super()._reason_param_kind(fn, name, r)
            if staging(self.model).reason_is_staged(r, batching=True):
                if t in DIFFERENTIATING and r.kind == "transform":
                    # `jax.grad(f)(t, i - 1)`: only `argnums` become tracers of the transform;
                    # the other arguments are whatever the caller passes.
                    argnums = self._argnums(r)
                    index = self._param_index(fn, name, r)
                    if argnums is None or index is None:
                        return UNKNOWN
                    if index not in argnums:
                        return self._passed_through(fn, name, r)
                return super()._reason_param_kind(fn, name, r)
            return UNKNOWN
        if r.kind == "passed":
            twin = next((o for o in self.model.traced.reasons.get(fn, ()) if o.node is r.node and o.kind != "passed"),
                        None)
            if twin is not None:
                return None  # `lax.fori_loop(0, n, body, x)` in traced code: the driver's own reason says
            if isinstance(r.node, cst.Call) and r.caller is not None and \
                    self.model.qn(r.node.func, r.caller) in _PARTIALS:
                return None  # `partial(body, p=p)` binds; where the partial is called decides
            return self._tree_map_param_kind(fn, name, r)
        if r.kind == "framework":
            return self._framework_param_kind(fn, name)
        if r.kind == "driver":
            # The route's table entry says which parameters receive tracers (diffrax's `t`, `y`).
            rt = routes.route(r.transform)
            params = [p for p in fn.params if p not in fn.star_params]
            shift = self._partial_positionals(fn, r)
            if shift is None:
                return UNKNOWN
            if fn.cls is not None and params and params[0] in ("self", "cls"):
                params = params[1:]
            params = params[shift:]
            if rt is None or not rt.traced_params or name not in params or name in fn.params_with_default \
                    or self._keyword_only(fn, name):
                return UNKNOWN
            return TRACED if params.index(name) in rt.traced_params else UNKNOWN
        if r.kind == "entry":
            return self._entry_param_kind(fn, name, r)
        if r.kind == "called" and r.partial is not None:
            return self._partial_param_kind(fn, name, r)
        if r.kind == "external" and r.arg_kinds:
            params = [p for p in fn.params if p not in fn.star_params]
            if fn.cls is not None and params and params[0] in ("self", "cls"):
                params = params[1:]
            if name not in params or params.index(name) >= len(r.arg_kinds):
                return UNKNOWN
            return TRACED if r.arg_kinds[params.index(name)] == "T" else UNKNOWN
        if r.kind == "external" and r.params_traced:
            if name in fn.params_with_default or self._keyword_only(fn, name) or name in fn.star_params:
                return UNKNOWN
            if self._is_static_param(fn, name, r):
                return STATIC
            return TRACED
        return super()._reason_param_kind(fn, name, r)

    def _passed_by_calls(self, fn: "Function", name: str, r) -> Kind | None:
        """A parameter with a default (or keyword-only) of a function a staging transform compiles:
        jit traces every argument a call passes, by position or by keyword alike
        (`jax.jit(f)(x, temperature=0.7)`: a tracer), and none a call leaves out (the default is
        used as it is, a Python value). TRACED where some call of the route passes it, STATIC where
        the route's calls are all known and none does; None where they are not known."""
        calls = route_calls(self.model, fn, r)
        if not calls:
            return None
        shift = self._partial_positionals(fn, r)
        if shift is None:
            return None
        params = [p for p in fn.params if p not in fn.star_params and not self._keyword_only(fn, p)]
        passed = False
        for call, _, bound in calls:
            if any(a.star for a in call.args):
                return None
            names = params[1:] if (bound or fn.is_classmethod) and params and params[0] in ("self", "cls") \
                else params
            names = names[shift:]
            count = sum(1 for a in call.args if a.keyword is None)
            if any(a.keyword is not None and a.keyword.value == name for a in call.args) or (
                    name in names and names.index(name) < count):
                passed = True
        return TRACED if passed else STATIC

    # -- lax's drivers: which parameters receive the driver's tracers ------------------------------
    def _control_flow_param_kind(self, fn: "Function", name: str, r) -> Kind:
        """JAX's rule for lax control flow: the driver calls the function with a fixed number of
        positional arguments (`fori_loop`: the index and the carry; `while_loop`: the carry;
        `scan`: the carry and a slice of xs; `cond`/`switch`: the operands), all tracers. A
        parameter past them is not the driver's: it keeps its default or what a partial bound
        (`fori_loop(0, n, partial(body, p=p), x)`: `p` is whatever `p` is where the partial is
        built). Where the model cannot see how the function was bound (a partial stored in an
        attribute, built elsewhere), a parameter is the driver's only if it is one whatever
        leading arguments a partial may have bound."""
        if self._keyword_only(fn, name) or name in fn.star_params:
            return UNKNOWN  # never passed positionally: a default, or a partial's keyword
        arity = self._memo_of("_arity_memo", fn, r, self._driver_arity)
        ways = self._partial_ways(fn, r)
        kinds = [self._way_param_kind(fn, name, r, arity, way) for way in (ways or [None])]
        return combine(kinds)

    def _way_param_kind(self, fn: "Function", name: str, r, arity: int | None, way) -> Kind:
        params = [p for p in fn.params if p not in fn.star_params and not self._keyword_only(fn, p)]
        if way is None:
            # How fn is bound is not shown: strip `self` of a method (loops take bound methods).
            if fn.cls is not None and params and params[0] in ("self", "cls"):
                params = params[1:]
            if name not in params:
                return UNKNOWN
            if arity is None:
                return UNKNOWN if name in fn.params_with_default else TRACED
            j = params.index(name)
            # A partial may have bound up to len(params) - arity leading parameters.
            shifts = range(0, max(0, len(params) - arity) + 1)
            found = {self._slot_kind(r, j - s) if 0 <= j - s < arity else UNKNOWN for s in shifts}
            return found.pop() if len(found) == 1 else UNKNOWN
        partial, scope, bound = way
        shift = 0
        if partial is not None:
            if any(a.star for a in partial.args):
                return UNKNOWN
            for a in partial.args[1:]:
                if a.keyword is not None and a.keyword.value == name:
                    return self.kind(a.value, scope)
            lead = [a.value for a in partial.args[1:] if a.keyword is None]
            params = [p for p in self._partial_target_params(fn, partial, scope) if p in params]
            if name in params and params.index(name) < len(lead):
                return self.kind(lead[params.index(name)], scope)
            shift = len(lead)
        elif bound and params and params[0] in ("self", "cls"):
            params = params[1:]
        if name not in params:
            return UNKNOWN
        j = params.index(name) - shift
        if arity is None:
            # lax's convention where the table gives no count: every positional parameter without
            # a default receives a tracer.
            return UNKNOWN if name in fn.params_with_default else TRACED
        return self._slot_kind(r, j) if 0 <= j < arity else UNKNOWN

    def _slot_kind(self, r, j: int) -> Kind:
        """The kind of the j-th argument a driver passes: a tracer, except scan's slice of xs where
        the call gives no xs (`lax.scan(f, init, None, length=n)`: the slice is None)."""
        call = r.node
        if j == 1 and isinstance(call, cst.Call) and not any(a.star for a in call.args):
            qn = self.model.qn(call.func, self.model.scope_of(call))
            if qn in _SCANS:
                xs = positional(call, 2) or keyword(call, "xs")
                if xs is None or (isinstance(xs, cst.Name) and xs.value == "None"):
                    return STATIC
        return TRACED

    def _driver_arity(self, fn: "Function", r) -> int | None:
        """How many positional arguments the driver of reason r passes to fn (None: not known)."""
        call = r.node
        if not isinstance(call, cst.Call):
            return None
        m = self.model
        scope = m.scope_of(call)
        rt = routes.route(m.qn(call.func, scope))
        if rt is None or len(rt.arity) != len(rt.slots):
            return None
        found: set[int | None] = set()
        for (pos, kw), n in zip(rt.slots, rt.arity):
            arg = positional(call, pos) if pos is not None else None
            if arg is None and kw is not None:
                arg = keyword(call, kw)
            if arg is None:
                continue
            items = [el.value for el in arg.elements] if isinstance(arg, (cst.List, cst.Tuple)) else [arg]
            if any(f is fn for item in items for f, _ in m.traced_analysis().callables(item, scope)):
                found.add(self._operand_count(call, rt) if n == routes.OPERANDS else n)
        return found.pop() if len(found) == 1 else None

    @staticmethod
    def _operand_count(call: cst.Call, rt) -> int | None:
        """`lax.cond(p, f, g, a, b)`: 2 operands, the positional arguments after the functions."""
        if any(a.star for a in call.args):
            return None
        if keyword(call, "operand") is not None:
            return 1  # the old single-operand form
        last = max(pos for pos, _ in rt.slots if pos is not None)
        return max(0, sum(1 for a in call.args if a.keyword is None) - last - 1)

    def _read_names(self) -> set:
        found = self.__dict__.get("_reads")
        if found is None:
            found = self.__dict__["_reads"] = {r.name for r in self.model.index.reads}
        return found

    def _ways(self, fn: "Function", expr: cst.BaseExpression | None, scope: "Scope", depth: int) -> list:
        """How `expr` (a function handed to a transform or a driver) reaches fn: for each way,
        (the partial that binds some of fn's parameters or None, its scope, whether fn is a bound
        method), or None for a way the model cannot read; through names (the bindings that reach
        the read), attributes an instance holds (`self.step = partial(...)` in `__init__`),
        partials and transforms."""
        m = self.model
        analysis = m.traced_analysis()
        reached = [bound for f, bound in analysis.callables(expr, scope) if f is fn]
        if expr is None or not reached:
            return []
        if depth > 6:
            return [None]
        if isinstance(expr, cst.Lambda):
            return [(None, scope, False)]
        if isinstance(expr, cst.Name):
            fns = m.functions_at(expr, scope)
            if fns is None:
                named = m.function_named(expr.value, scope)
                fns = [named] if named is not None else []
            if fn in fns:
                return [(None, scope, reached[0])]
            found = m.bindings_at(expr, scope) if expr in self._read_names() else m.lookup(expr.value, scope)
            out: list = []
            if found is not None:
                owner, bindings = found
                for b in bindings:
                    if b.kind in ("assign", "annassign") and b.index is None and b.value is not None \
                            and b.value is not expr:
                        out.extend(self._ways(fn, b.value, owner, depth + 1))
            return out or [None]
        if isinstance(expr, cst.Attribute):
            if isinstance(expr.value, cst.Name) and expr.value.value in ("self", "cls") \
                    and m.method_of(scope, expr.attr.value) is fn:
                return [(None, scope, True)]
            inst = instances(m)
            ci = inst.instance_class(expr.value, scope)
            if ci is not None:
                if inst.method(ci, expr.attr.value) is fn:
                    return [(None, scope, True)]
                out = []
                for v in inst.attribute_values(ci).get(expr.attr.value, []):
                    if not isinstance(v, cst.Annotation):  # `self.step = partial(self._step, n=3)`
                        out.extend(self._ways(fn, v, m.scope_of(v), depth + 1))
                return out or [None]
            return [None]
        if isinstance(expr, cst.Call):
            qn = m.qn(expr.func, scope)
            if qn in _PARTIALS:
                inner = self._ways(fn, positional(expr, 0), scope, depth + 1)
                if inner and all(w is not None and w[0] is None for w in inner):
                    return [(expr, scope, any(w[2] for w in inner))]
                return [None]
            if qn in TRANSFORMS:  # `jax.checkpoint(partial(body, n=3))`: the transform keeps the arguments
                return self._ways(fn, positional(expr, 0) or keyword(expr, "fun"), scope, depth + 1) or [None]
        return [None]

    def _flax_scan_param_kind(self, fn: "Function", name: str, r) -> Kind | None:
        """`nn.scan(Block, in_axes=(0, nn.broadcast))`: the target takes `(module, carry, *xs)`;
        the carry and the scanned xs are tracers, a broadcast argument is the caller's object itself
        (flax/core/axes_scan.py passes it unchanged: the call that passes it decides)."""
        if not staging(self.model).reason_is_staged(r, batching=True):
            return UNKNOWN
        if self._keyword_only(fn, name) or name in fn.star_params:
            return None
        params = [p for p in fn.params if p not in fn.star_params and not self._keyword_only(fn, p)]
        params = params[1:]  # `self`, or the module a function target takes first
        if name not in params:
            return UNKNOWN
        index = params.index(name)
        if index == 0:
            return TRACED  # the carry
        axes = None
        for call in option_calls(r):
            if any(a.star for a in call.args):
                return UNKNOWN
            found = keyword(call, "in_axes")
            if found is not None:
                axes = found
        if isinstance(axes, (cst.Tuple, cst.List)):
            if any(isinstance(el, cst.StarredElement) for el in axes.elements):
                return UNKNOWN
            if index - 1 >= len(axes.elements):
                return UNKNOWN
            axes = axes.elements[index - 1].value
        if axes is None or isinstance(axes, cst.Integer) or (
                isinstance(axes, cst.UnaryOperation) and isinstance(axes.expression, cst.Integer)):
            return TRACED  # scanned over (in_axes=0 by default): a slice, a tracer
        qn = self.model.qn(axes, self.model.scope_of(axes)) or ""
        if qn.startswith("flax.") and qn.endswith(".broadcast"):
            return None  # passed through as the caller gave it
        return UNKNOWN

    def _framework_param_kind(self, fn: "Function", name: str) -> Kind:
        """A Module body's (or a transformed function's) parameters: an array-annotated one is a
        tracer, and so is the input (the first positional parameter after `self`, without a
        default, not annotated as something else); flags, options and keyword-only parameters
        are whatever the caller passes (often Python values: `train`, `deterministic`)."""
        if self._array_annotated(fn, name):
            return TRACED
        if fn.cls is not None and fn.name != "__call__" and not any(
                (self.model.qn(d.decorator, fn.parent or self.model.index.scope) or "").endswith(".compact")
                for d in fn.node.decorators):
            return UNKNOWN  # other methods (haiku's `initial_state(batch_size)`) take anything
        params = [p for p in fn.params if p not in fn.star_params and not self._keyword_only(fn, p)]
        if fn.cls is not None and params and params[0] in ("self", "cls"):
            params = params[1:]
        if not params or params[0] != name or name in fn.params_with_default:
            return UNKNOWN
        p = fn.param_nodes.get(name)
        if p is not None and p.annotation is not None:
            return UNKNOWN
        if self._param_is_array(fn, name, not_a_number=True):
            return TRACED  # the body uses it as an array (`x.shape`, `x @ w`, `nn.Dense(8)(x)`), or a call passes one
        return self._assumed_traced(fn, name, f"the input of `{fn.display_name}`, a framework Module's body, "
                                              "is taken to be an array by convention; the code shows no array here")

    def _string_annotated(self, fn: "Function", name: str) -> bool:
        p = fn.param_nodes.get(name)
        if p is None or p.annotation is None:
            return False
        ann = p.annotation.annotation
        scope = fn.parent or self.model.index.scope
        if isinstance(ann, cst.Subscript):
            if self.model.qn(ann.value, scope) not in ("typing.Literal", "typing_extensions.Literal"):
                return False
            values = [el.slice.value for el in ann.slice if isinstance(el.slice, cst.Index)]
            return bool(values) and all(isinstance(v, cst.SimpleString) for v in values)
        return self.model.qn(ann, scope) == "builtins.str"

    def _passed_arrays(self, fn: "Function", name: str) -> bool:
        """Whether the module calls fn, and every call passes an array for `name` (a `jnp`
        result, a NumPy or device array, a tracer of staged code)."""
        m = self.model
        if name in fn.params_with_default or self._keyword_only(fn, name) or name in fn.star_params:
            return False
        seen = False
        for site in m.traced_analysis().direct_call_sites(fn):
            if any(a.star for a in site.call.args):
                return False
            arg = m.argument_for(site.call, fn, name)
            if arg is None or not self._array_value(arg, site.scope):
                return False
            seen = True
        return seen

    def _array_value(self, e: cst.BaseExpression, scope: "Scope") -> bool:
        m = self.model
        if isinstance(e, cst.Call):
            qn = m.qn(e.func, scope)
            if qn is not None and qn.startswith(("jax.numpy.", "jax.random.", "jax.lax.", "jax.nn.")) \
                    and qn not in JNP_STATIC_FUNCTIONS and qn not in STATIC_RESULT_FUNCTIONS \
                    and not qn.startswith(("jax.random.PRNGKey", "jax.random.key")):
                return True
        if m.numpy_arrays.is_array(e, scope) or m.device_arrays.is_array(e, scope):
            return True
        return self.kind(e, scope) is TRACED

    def _array_annotated(self, fn: "Function", name: str) -> bool:
        p = fn.param_nodes.get(name)
        if p is None or p.annotation is None or name in fn.params_with_default:
            return False
        ann = p.annotation.annotation
        scope = fn.parent or self.model.index.scope
        if isinstance(ann, cst.Subscript):
            qn = self.model.qn(ann.value, scope)
            return qn is not None and qn.startswith(routes.ARRAY_ANNOTATION_ROOTS) and "PyTree" not in qn
        qn = self.model.qn(ann, scope)
        return qn in routes.ARRAY_ANNOTATIONS

    def _tree_map_param_kind(self, fn: "Function", name: str, r) -> Kind:
        """`jax.tree_util.tree_map(f, tree, *rest)` in staged code: f's i-th parameter gets the
        leaves of the (i+1)-th tree, tracers when the tree is traced."""
        call = r.node
        if not isinstance(call, cst.Call) or r.caller is None or any(a.star for a in call.args):
            return UNKNOWN
        if self.model.qn(call.func, r.caller) not in TREE_MAPS or positional(call, 0) is None:
            return UNKNOWN
        given = positional(call, 0)
        bound = 0
        if isinstance(given, cst.Call) and self.model.qn(given.func, r.caller) == "functools.partial":
            if any(a.star for a in given.args) or any(a.keyword is not None and a.keyword.value == name for a in given.args):
                return UNKNOWN
            bound = sum(1 for a in given.args[1:] if a.keyword is None)
            given = positional(given, 0)
        if self.model.index.function_of.get(given) is not fn and not (
                isinstance(given, cst.Name) and self.model.function_named(given.value, r.caller) is fn):
            return UNKNOWN
        params = [p for p in fn.params if p not in fn.star_params]
        if name not in params or name in fn.params_with_default or params.index(name) < bound:
            return UNKNOWN
        tree = positional(call, 1 + params.index(name) - bound)
        if tree is None:
            return UNKNOWN
        return TRACED if self.kind(tree, r.caller) is TRACED else UNKNOWN

    def _partial_param_kind(self, fn: "Function", name: str, r) -> Kind:
        """`g = partial(f, a); g(x)`: f's parameters take the partial's arguments, then the call's."""
        p, call = r.partial, r.node
        if not isinstance(call, cst.Call) or r.caller is None or any(a.star for a in (*p.args, *call.args)):
            return UNKNOWN
        for a in (*call.args, *p.args):
            if a.keyword is not None and a.keyword.value == name:
                return self.kind(a.value, r.caller if a in call.args else self.model.scope_of(p))
        params = self._partial_target_params(fn, p, self.model.scope_of(p))
        if name not in params:
            return UNKNOWN
        i = params.index(name)
        bound = [a.value for a in p.args[1:] if a.keyword is None]
        if i < len(bound):
            return self.kind(bound[i], self.model.scope_of(p))
        arg = positional(call, i - len(bound))
        return self.kind(arg, r.caller) if arg is not None else UNKNOWN

    def _entry_param_kind(self, fn: "Function", name: str, r) -> Kind:
        """`model.apply(variables, x)`: x goes to `__call__`'s first parameter after `self`."""
        call = r.node
        if r.arg_offset is None or not isinstance(call, cst.Call) or r.caller is None:
            return UNKNOWN
        if any(a.star for a in call.args):
            return UNKNOWN
        for a in call.args:
            if a.keyword is not None and a.keyword.value == name:
                return self.kind(a.value, r.caller)
        params = [p for p in fn.params if p not in fn.star_params]
        if fn.cls is not None and params and params[0] in ("self", "cls"):
            params = params[1:]
        if name not in params:
            return UNKNOWN
        arg = positional(call, r.arg_offset + params.index(name))
        if arg is None:
            return UNKNOWN
        return self.kind(arg, r.caller)

    @staticmethod
    def _keyword_only(fn: "Function", name: str) -> bool:
        node = fn.node
        return any(p.name.value == name for p in node.params.kwonly_params)

    def _param_index(self, fn: "Function", name: str, r) -> int | None:
        """The position of parameter `name` among the arguments the transformed callable takes
        (past `self` of a bound method and the partial's positional arguments)."""
        params = [p for p in fn.params if p not in fn.star_params]
        if r.bound_method and params and params[0] in ("self", "cls"):
            params = params[1:]
        shift = self._partial_positionals(fn, r)
        if shift is None or name not in params or self._keyword_only(fn, name):
            return None
        index = params.index(name) - shift
        return index if index >= 0 else None

    def _mapped(self, fn: "Function", name: str, r) -> bool | None:
        """Whether `vmap`'s `in_axes` maps parameter `name`: True, False (`None` axis), or None
        when the model cannot read it (no `in_axes`: None too, the default maps everything)."""
        if r.kind != "transform" and not isinstance(r.node, cst.Decorator):
            return None
        calls = option_calls(r)
        for call in calls:
            excluded = keyword(call, "excluded")  # `jnp.vectorize(f, excluded={1})`
            if excluded is not None:
                index = self._param_index(fn, name, r)
                if index is None:
                    return None
                ints, strs = _literal_ints(excluded), _literal_strs(excluded)
                if not _literal_options(excluded) and not isinstance(excluded, cst.Set):
                    return None
                if index in ints or name in strs:
                    return False
        axes = None
        for call in calls:
            found = keyword(call, "in_axes")
            if found is None and self.model.qn(call.func, self.model.scope_of(call)) in BATCHING:
                found = positional(call, 1)
            if found is not None:
                axes = found
        if axes is None:
            return None
        index = self._param_index(fn, name, r)
        if index is None:
            return None
        if isinstance(axes, (cst.Tuple, cst.List)):
            if any(isinstance(el, cst.StarredElement) for el in axes.elements) or index >= len(axes.elements):
                return None
            axes = axes.elements[index].value
        if isinstance(axes, cst.Name) and axes.value == "None":
            return False
        if isinstance(axes, cst.Integer) or (isinstance(axes, cst.UnaryOperation)
                                             and isinstance(axes.expression, cst.Integer)):
            return True
        return None

    def _argnums(self, r) -> frozenset[int] | None:
        """The literal `argnums` of a differentiating transform (default 0); None when unread."""
        out: frozenset[int] = frozenset({0})
        for call in option_calls(r):
            if any(a.star for a in call.args):
                return None
            found = keyword(call, "argnums")
            if found is None:
                continue
            if isinstance(found, cst.Integer):
                out = frozenset({int(found.value, 0)})
            elif isinstance(found, (cst.Tuple, cst.List)) and all(
                    isinstance(el.value, cst.Integer) for el in found.elements):
                out = frozenset(int(el.value.value, 0) for el in found.elements)
            else:
                return None
        return out

    def _passed_through(self, fn: "Function", name: str, r) -> Kind | None:
        """A parameter the transform hands over unchanged: the kind of the argument where the
        transformed function is called at once (`jax.vmap(f, in_axes=(0, None))(x, 1.0)`); None
        where it is called later (`g = jax.vmap(...)`, then `g(x, 1.0)`: that call decides)."""
        call = r.node
        outer = self.model.parent(call) if isinstance(call, cst.Call) else None
        index = self._param_index(fn, name, r)
        if index is None:
            return UNKNOWN
        if not isinstance(outer, cst.Call) or outer.func is not call:
            return None
        if any(a.star for a in outer.args):
            return UNKNOWN
        arg = positional(outer, index)
        if arg is None:
            return UNKNOWN
        return self.kind(arg, self.model.scope_of(outer))

    def _partial_ways(self, fn: "Function", r) -> list:
        """How the function a transform or a lax driver was given reaches fn (see `_ways`): each way
        with the `functools.partial(fn, ...)` that binds some of its parameters, or None."""
        return self._memo_of("_partial_ways_memo", fn, r, self._find_partial_ways)

    def _memo_of(self, table: str, fn: "Function", r, compute):
        memo = self.__dict__.setdefault(table, {})
        key = (id(fn), id(r))
        if key not in memo:
            memo[key] = compute(fn, r)
        return memo[key]

    def _find_partial_ways(self, fn: "Function", r) -> list:
        m = self.model
        call = r.node.decorator if isinstance(r.node, cst.Decorator) else r.node
        if not isinstance(call, cst.Call) or r.kind == "decorator":
            return []
        scope = m.scope_of(call)
        if r.kind == "transform":
            candidates = [positional(call, 0) or keyword(call, "fun") or keyword(call, "f")]
        else:
            qn = m.qn(call.func, scope)
            if qn not in CONTROL_FLOW:
                return []
            candidates = list(m.traced_analysis().control_flow_functions(call, qn))
        return [w for target in candidates for w in self._ways(fn, target, scope, 0)]

    def _partial_bound_kind(self, fn: "Function", name: str, r) -> Kind | None:
        """The kind of what the partials that hand fn over bind to `name` (None: they do not bind
        it, or fn was not handed over through partials only). `mutation = partial(f, rate=rate);
        mutation = jax.vmap(mutation)`: `rate` is the caller's value, not batched."""
        ways = self._partial_ways(fn, r)
        if not ways or any(w is None or w[0] is None for w in ways):
            return None
        kinds = [self._bound_by(fn, name, p, scope) for p, scope, _ in ways]
        if all(k is None for k in kinds):
            return None
        return UNKNOWN if any(k is None for k in kinds) else combine(kinds)

    def _bound_by(self, fn: "Function", name: str, p: cst.Call, scope: "Scope") -> Kind | None:
        if any(a.star for a in p.args):
            return UNKNOWN
        for a in p.args[1:]:
            if a.keyword is not None and a.keyword.value == name:
                return self.kind(a.value, scope)
        bound = [a.value for a in p.args[1:] if a.keyword is None]
        params = self._partial_target_params(fn, p, scope)
        if name in params and params.index(name) < len(bound):
            return self.kind(bound[params.index(name)], scope)
        return None

    def _partial_target_params(self, fn: "Function", p: cst.Call, scope: "Scope") -> list[str]:
        """fn's positional parameters as `partial(target, ...)` fills them: without `self` when the
        target is a bound method (`partial(self.drop, 0.5)` binds the parameter after `self`)."""
        params = [q for q in fn.params if q not in fn.star_params]
        inner = positional(p, 0)
        if inner is not None and params and params[0] in ("self", "cls") and any(
                f is fn and bound for f, bound in self.model.traced_analysis().callables(inner, scope)):
            params = params[1:]
        return params

    def _partial_positionals(self, fn: "Function", r) -> int | None:
        """How many leading positional parameters the partials that hand fn over bind (0 without
        one; None: `*args`, or partials that differ)."""
        ways = self._partial_ways(fn, r)
        counts = set()
        for w in ways:
            if w is None or w[0] is None:
                counts.add(0)
                continue
            if any(a.star for a in w[0].args):
                return None
            counts.add(sum(1 for a in w[0].args[1:] if a.keyword is None))
        if not counts:
            return 0
        return counts.pop() if len(counts) == 1 else None
