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
from jaxfuse_lint.model.omnistaging import STATIC_RESULT_FUNCTIONS
from jaxfuse_lint.model.staging import staging
from jaxfuse_lint.model.staging_transforms import (BATCHING, DIFFERENTIATING, FILTERED, STAGING, _literal_options,
                                                   option_calls, options_understood)
from jaxfuse_lint.model.traced import _literal_ints, _literal_strs, keyword, positional
from jaxfuse_lint.model.values import STATIC, TRACED, UNKNOWN, Kind, ValueAnalysis

if TYPE_CHECKING:
    from jaxfuse_lint.model.scopes import Function, Scope
    from jaxfuse_lint.model.staging import StagingView

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
        if r.kind in ("control-flow", "driver", "decorator", "transform"):
            bound = self._partial_bound_kind(fn, name, r)
            if bound is not None:
                # `lax.scan(partial(step, flag=True), ...)`, `jax.vmap(partial(loss, n=3))`: the
                # parameter holds what the partial bound (static if that value is).
                return bound
        if r.kind == "control-flow":
            # lax passes the loop index and carry (or the operands) positionally; a parameter
            # with a default or a keyword-only one keeps its Python value.
            if name in fn.params_with_default or self._keyword_only(fn, name):
                return UNKNOWN
            return TRACED
        if r.kind in ("decorator", "transform"):
            t = r.transform
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
        if self._param_is_array(fn, name):
            return TRACED  # the body uses it as an array (`x.shape`, `x - 1`), or a call passes one
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

    def _passed_through(self, fn: "Function", name: str, r) -> Kind:
        """A parameter the transform hands over unchanged: the kind of the argument where the
        transformed function is called at once (`jax.vmap(f, in_axes=(0, None))(x, 1.0)`)."""
        call = r.node
        outer = self.model.parent(call) if isinstance(call, cst.Call) else None
        index = self._param_index(fn, name, r)
        if not isinstance(outer, cst.Call) or outer.func is not call or index is None:
            return UNKNOWN
        if any(a.star for a in outer.args):
            return UNKNOWN
        arg = positional(outer, index)
        if arg is None:
            return UNKNOWN
        return self.kind(arg, self.model.scope_of(outer))

    def _partial_of(self, fn: "Function", r) -> "tuple[cst.Call, Scope] | None":
        """The `functools.partial(fn, ...)` through which a transform or a lax driver received
        fn (directly, through a name bound to it, or inside other transforms), and its scope."""
        m = self.model
        call = r.node.decorator if isinstance(r.node, cst.Decorator) else r.node
        if not isinstance(call, cst.Call) or r.kind == "decorator":
            return None
        scope = m.scope_of(call)
        if r.kind == "transform":
            candidates = [positional(call, 0) or keyword(call, "fun") or keyword(call, "f")]
        else:
            qn = m.qn(call.func, scope)
            if qn not in CONTROL_FLOW:
                return None
            candidates = list(m.traced_analysis().control_flow_functions(call, qn))
        for target in candidates:
            owner = scope
            for _ in range(6):
                if isinstance(target, cst.Name):  # `inner = partial(f, n=3); jax.vmap(inner)`
                    found = m.lookup(target.value, owner)
                    if found is None or len(found[1]) != 1 or found[1][0].kind != "assign" \
                            or found[1][0].index is not None:
                        break
                    owner, target = found[0], found[1][0].value
                if not isinstance(target, cst.Call):
                    break
                qn = m.qn(target.func, owner)
                if qn == "functools.partial":
                    inner = positional(target, 0)
                    if inner is not None and any(f is fn for f, _ in m.traced_analysis().callables(inner, owner)):
                        return target, owner
                    break
                if qn not in TRANSFORMS:
                    break
                target = positional(target, 0)
        return None

    def _partial_bound_kind(self, fn: "Function", name: str, r) -> Kind | None:
        """The kind of what `partial(fn, ...)` binds to `name` (None: the partial does not bind
        it, or fn was not handed over through a partial)."""
        found = self._partial_of(fn, r)
        if found is None:
            return None
        p, scope = found
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
        """How many leading positional parameters a partial binds (0 without one; None: `*args`)."""
        found = self._partial_of(fn, r)
        if found is None:
            return 0
        p, _ = found
        if any(a.star for a in p.args):
            return None
        return sum(1 for a in p.args[1:] if a.keyword is None)
