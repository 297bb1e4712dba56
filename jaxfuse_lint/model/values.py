"""Static or traced: what a value is while a function is being traced.

STATIC values are ordinary Python values at trace time (literals, shapes,
`len(x)`, static arguments, module globals). TRACED values are tracers
(non-static parameters of a traced function and everything jnp/lax computes
from them). UNKNOWN is everything the model cannot decide; rules that must not
raise false positives treat it as "not traced".
"""
from __future__ import annotations

import enum
from typing import TYPE_CHECKING, Protocol

import libcst as cst

from jaxfuse_lint.model.api import ARRAY_VIEW_ATTRIBUTES, JNP_STATIC_FUNCTIONS, STATIC_ATTRIBUTES
from jaxfuse_lint.model.flow import PYTHON
from jaxfuse_lint.model.view import ModelView

if TYPE_CHECKING:
    from jaxfuse_lint.model.scopes import Binding, Function, Scope
    from jaxfuse_lint.model.traced import TracedRegions


class ValueView(ModelView, Protocol):
    """What the value analysis reads of the model besides its structure and names."""

    @property
    def traced(self) -> TracedRegions: ...

    def is_traced_scope(self, scope: Scope) -> bool: ...


class Kind(enum.Enum):
    STATIC = "static"
    TRACED = "traced"
    UNKNOWN = "unknown"


STATIC, TRACED, UNKNOWN = Kind.STATIC, Kind.TRACED, Kind.UNKNOWN

_STATIC_BUILTINS = frozenset({
    "builtins.len", "builtins.isinstance", "builtins.issubclass", "builtins.type", "builtins.callable",
    "builtins.hasattr", "builtins.id", "builtins.repr", "builtins.str", "builtins.int", "builtins.float",
    "builtins.bool", "builtins.complex",
})
_PASSTHROUGH_BUILTINS = frozenset({
    "builtins.range", "builtins.tuple", "builtins.list", "builtins.max", "builtins.min", "builtins.abs",
    "builtins.sum", "builtins.round", "builtins.divmod", "builtins.pow", "builtins.sorted", "builtins.reversed",
    "builtins.enumerate", "builtins.zip",
})
# JAX's array-producing namespaces: under jit their results are tracers. Other `jax.*`
# names (tree utilities, config, internal helpers) return ordinary Python values.
ARRAY_NAMESPACES = ("jax.numpy.", "jax.lax.", "jax.nn.", "jax.scipy.", "jax.random.", "jax.image.", "jax.ops.",
                    "jax.experimental.sparse.")

# flax's lifted transforms whose `static_argnums` count the Module (`self`) as argument 0, whether
# given a Module class or a function taking the module first (`nn.remat(Block, static_argnums=(2,))`
# makes `train` of `__call__(self, x, train)` static: flax/linen/transforms.py subtracts 1).
MODULE_COUNTING = frozenset({"flax.linen.jit", "flax.linen.checkpoint", "flax.linen.remat"})

_STATIC_METHODS = frozenset({"item", "tolist", "__len__", "index", "count", "keys", "startswith", "endswith", "format"})


# What an analysis shares with the one it makes to evaluate a callee with given argument kinds:
# its mode and the structural facts it memoises (how routes reach functions), not kinds.
_SHARED_WITH_SUB = frozenset({"strict", "_assumptions", "_partial_ways_memo", "_arity_memo", "_reads"})


NO_KEY = object()  # a key the code does not spell as a literal
ABSENT = object()  # keyed_kind: the dict the code shows has nothing under that key
_MUTATORS = frozenset({"update", "setdefault", "pop", "popitem", "clear", "__setitem__"})


def _literal(e: cst.BaseExpression | None):
    """The value of a literal dict key (`"step"`, `3`, `(0, 0)`, `-1`, `True`), else `NO_KEY`."""
    if isinstance(e, cst.SimpleString) and isinstance(e.evaluated_value, str):
        return e.evaluated_value
    if isinstance(e, cst.Integer):
        return int(e.value, 0)
    if isinstance(e, cst.UnaryOperation) and isinstance(e.operator, cst.Minus) and isinstance(e.expression, cst.Integer):
        return -int(e.expression.value, 0)
    if isinstance(e, cst.Name) and e.value in ("True", "False", "None"):
        return {"True": True, "False": False, "None": None}[e.value]
    if isinstance(e, cst.Tuple):
        items = tuple(_literal(el.value) for el in e.elements)
        return NO_KEY if any(i is NO_KEY for i in items) or any(
            isinstance(el, cst.StarredElement) for el in e.elements) else items
    return NO_KEY


def literal_key(e: cst.Subscript):
    """The literal key of `d["step"]` / `d[0, 0]` (one index, no slice), else `NO_KEY`."""
    if len(e.slice) == 1 and isinstance(e.slice[0].slice, cst.Index):
        return _literal(e.slice[0].slice.value)
    if len(e.slice) > 1 and all(isinstance(el.slice, cst.Index) for el in e.slice):
        items = tuple(_literal(el.slice.value) for el in e.slice)
        return NO_KEY if any(i is NO_KEY for i in items) else items
    return NO_KEY


def _stores(model, fn, name: str) -> list | None:
    """(key, value) of every `name[key] = value` (and `name[key] += value`) in fn's own code; None
    where fn changes the dict otherwise (`name.update(...)`, `name.pop(...)`, `del name[k]`)."""
    out = []
    for read in fn.reads:
        if read.name.value != name:
            continue
        parent = model.parent(read.name)
        if isinstance(parent, cst.Attribute) and parent.value is read.name and parent.attr.value in _MUTATORS:
            return None
        if not isinstance(parent, cst.Subscript) or parent.value is not read.name:
            continue
        holder = model.parent(parent)
        if isinstance(holder, cst.AssignTarget):
            assign = model.parent(holder)
            if isinstance(assign, cst.Assign):
                out.append((literal_key(parent), assign.value))
        elif isinstance(holder, cst.AugAssign) and holder.target is parent:
            out.append((literal_key(parent), holder.value))
        elif isinstance(holder, cst.Del) or isinstance(model.parent(holder), cst.Del):
            return None  # `del name[k]`
    return out


def _every(kinds) -> Kind:
    """TRACED (STATIC) where every kind is; UNKNOWN otherwise."""
    kinds = [k for k in kinds if k is not ABSENT]
    if kinds and all(k is TRACED for k in kinds):
        return TRACED
    if kinds and all(k is STATIC for k in kinds):
        return STATIC
    return UNKNOWN


def combine(kinds) -> Kind:
    seen_unknown = False
    for k in kinds:
        if k is TRACED:
            return TRACED
        if k is UNKNOWN:
            seen_unknown = True
    return UNKNOWN if seen_unknown else STATIC


class ValueAnalysis:
    MAX_DEPTH = 40

    def __init__(self, model: "ValueView") -> None:
        self.model = model
        self._memo: dict[tuple[int, int], Kind] = {}
        self._param_memo: dict[tuple[int, str], Kind] = {}
        self._active: set[tuple[int, int]] = set()
        self._active_params: set[tuple[int, str]] = set()

    # -- parameters ---------------------------------------------------------------------------
    def param_kind(self, fn: "Function", name: str) -> Kind:
        key = (id(fn), name)
        if key in self._param_memo:
            return self._param_memo[key]
        if key in self._active_params:
            return UNKNOWN
        self._active_params.add(key)
        try:
            result = self._param_kind(fn, name)
        finally:
            self._active_params.discard(key)
        self._param_memo[key] = result
        return result

    def _param_kind(self, fn: "Function", name: str) -> Kind:
        m = self.model
        reasons = m.traced.reasons.get(fn)
        if not reasons:
            return UNKNOWN
        if name in ("self", "cls") and fn.cls is not None and fn.params and fn.params[0] == name:
            return STATIC
        if name in fn.star_params:
            return UNKNOWN
        kinds, convention, transforms = [], [], []
        for r in reasons:
            k = self._reason_param_kind(fn, name, r)
            if k is None:
                continue  # the route passes the argument through: another reason (its call) says
            if r.kind in ("decorator", "transform"):
                transforms.append(k)
            (convention if r.kind == "framework" else kinds).append(k)
        if STATIC in transforms:
            # A static argument of a transform is a Python value there (the calls go through it);
            # another transform of the same function may still trace it (`nn.remat(Block,
            # static_argnums=(2,))` and `nn.remat(Block)`).
            return TRACED if TRACED in transforms else STATIC
        if kinds and UNKNOWN not in kinds:
            # The routes the code shows decide (`PosEmb(8)(x.shape[-2])` at every call: a Python
            # int); a framework's convention (a Module body's input is an array) fills in only what
            # they leave open.
            return combine(kinds)
        return combine(kinds + convention) if kinds or convention else UNKNOWN

    def _reason_param_kind(self, fn: "Function", name: str, r) -> Kind | None:
        """The kind of parameter `name` of `fn` when fn is traced for reason `r`; None where the
        route hands over whatever the call passes and that call is a reason of its own
        (subclasses refine this, e.g. the staged analysis in model/staged_parameters.py)."""
        if r.kind in ("decorator", "transform"):
            if self._is_static_param(fn, name, r):
                return STATIC
            # A parameter with a default may be left out and stay a Python value.
            return UNKNOWN if name in fn.params_with_default else TRACED
        if r.kind == "control-flow":
            return TRACED
        if r.kind == "called" and r.caller is not None and isinstance(r.node, cst.Call):
            arg = self.model.argument_for(r.node, fn, name)
            if arg is None:
                unpacked = self._unpacked_kind(fn, name, r.node, r.caller)
                if unpacked is not None:
                    return unpacked
                return STATIC if name in fn.params_with_default else UNKNOWN
            return self.kind(arg, r.caller)
        return UNKNOWN

    def _unpacked_kind(self, fn: "Function", name: str, call: cst.Call, scope: "Scope") -> Kind | None:
        """`f(data, **params)`: a parameter the call's explicit arguments leave unfilled may take a
        value of the unpacked mapping (`*args`: an item of the sequence, for the parameters from its
        position on). A traced dict, tuple or array holds tracers (jit traces every leaf of a pytree
        argument), so that value is a tracer; None where nothing is unpacked there, UNKNOWN where
        what is unpacked is not known to be traced."""
        if any(a.keyword is not None and a.keyword.value == name for a in call.args):
            return None
        if name in fn.star_params or name not in fn.params or isinstance(fn.node, cst.Lambda) or any(
                p.name.value == name for p in fn.node.params.posonly_params):
            return None
        params = [p for p in fn.params if p not in fn.star_params]
        if fn.cls is not None and params and params[0] in ("self", "cls") and \
                self.model.argument_for(call, fn, params[0]) is None:
            params = params[1:]  # the call binds `self` (argument_for maps `Cls.method(obj, x)`)
        kinds = []
        before = 0  # explicit positional arguments before a `*seq`
        for a in call.args:
            if a.star == "**":
                kinds.append(self.kind(a.value, scope))
            elif a.star == "*":
                if name in params and params.index(name) >= before:
                    kinds.append(self.kind(a.value, scope))
            elif a.keyword is None:
                before += 1
        if not kinds:
            return None
        return TRACED if TRACED in kinds else UNKNOWN

    def _is_static_param(self, fn: "Function", name: str, r) -> bool:
        if name in r.static_argnames:
            return True
        if r.static_argnums:
            params = fn.params
            if r.bound_method and params and params[0] in ("self", "cls") and r.transform not in MODULE_COUNTING:
                params = params[1:]
            n = len(params)
            for i in r.static_argnums:
                if -n <= i < n and params[i] == name:
                    return True
        return False

    # -- expressions --------------------------------------------------------------------------
    def kind(self, expr: cst.CSTNode, scope: "Scope", depth: int = 0) -> Kind:
        key = (id(expr), id(scope))
        memo = self._memo.get(key)
        if memo is not None:
            return memo
        if key in self._active or depth > self.MAX_DEPTH:
            return UNKNOWN
        self._active.add(key)
        try:
            result = self._kind(expr, scope, depth + 1)
        finally:
            self._active.discard(key)
        self._memo[key] = result
        return result

    def binding_kind(self, b: "Binding", owner: "Scope", depth: int = 0) -> Kind:
        from jaxfuse_lint.model.scopes import Function

        if b.kind == "param":
            return self.param_kind(owner, b.name) if isinstance(owner, Function) else UNKNOWN
        if b.kind in ("import", "def", "class"):
            return STATIC
        if b.value is None:
            return UNKNOWN
        value = b.value
        if b.index is not None and isinstance(value, (cst.Tuple, cst.List)) and b.index < len(value.elements):
            value = value.elements[b.index].value
        elif b.index is not None and b.kind in ("assign", "annassign") and isinstance(value, cst.Call):
            element = self._returned_element_kind(value, b.index, owner, depth)
            if element is not None:
                return element
        if b.kind == "for":
            # `for i in range(n)`: i is static when n is; `for row in x`: like x.
            return self.kind(value, owner, depth)
        return self.kind(value, owner, depth)

    def _kind(self, e: cst.CSTNode, scope: "Scope", depth: int) -> Kind:
        from jaxfuse_lint.model.scopes import Function

        m = self.model
        if isinstance(e, (cst.Integer, cst.Float, cst.Imaginary, cst.SimpleString, cst.ConcatenatedString,
                          cst.FormattedString, cst.Lambda, cst.Ellipsis)):
            return STATIC
        if isinstance(e, cst.Name):
            if e.value in ("True", "False", "None"):
                return STATIC
            found = m.bindings_at(e, scope)
            if found is None:
                return STATIC  # a builtin
            owner, bindings = found
            if not isinstance(owner, Function):
                return STATIC  # module globals and class attributes are Python values at trace time
            if m.narrowed(e, scope) == PYTHON:
                return STATIC  # under `isinstance(x, int)` / `x is None`: not a tracer
            return combine(self.binding_kind(b, owner, depth) for b in bindings)
        if isinstance(e, cst.Attribute):
            if e.attr.value in STATIC_ATTRIBUTES:
                return STATIC
            if m.qn(e, scope) is not None:
                return STATIC  # jnp.pi, np.float32, jax.numpy.inf
            base = self.kind(e.value, scope, depth)
            if e.attr.value in ARRAY_VIEW_ATTRIBUTES or base is TRACED:
                return base
            return UNKNOWN if base is not STATIC else STATIC
        if isinstance(e, cst.Subscript):
            key = literal_key(e)
            if key is not NO_KEY:
                stored = self.keyed_kind(e.value, key, scope, depth)
                if stored is not None and stored is not ABSENT:
                    return stored
            base = self.kind(e.value, scope, depth)
            if base is TRACED:
                return TRACED
            idx = combine(self.kind(s.slice.value, scope, depth) for s in e.slice if isinstance(s.slice, cst.Index))
            if base is STATIC and idx is STATIC:
                return STATIC
            return TRACED if idx is TRACED else UNKNOWN
        if isinstance(e, cst.Call):
            return self._call_kind(e, scope, depth)
        if isinstance(e, cst.BinaryOperation):
            return combine((self.kind(e.left, scope, depth), self.kind(e.right, scope, depth)))
        if isinstance(e, cst.UnaryOperation):
            return self.kind(e.expression, scope, depth)
        if isinstance(e, cst.BooleanOperation):
            return combine((self.kind(e.left, scope, depth), self.kind(e.right, scope, depth)))
        if isinstance(e, cst.Comparison):
            if all(isinstance(c.operator, (cst.Is, cst.IsNot)) for c in e.comparisons):
                return STATIC  # identity (`x is None`) never looks at an array's value
            return combine([self.kind(e.left, scope, depth)] + [self.kind(c.comparator, scope, depth) for c in e.comparisons])
        if isinstance(e, cst.IfExp):
            return combine((self.kind(e.body, scope, depth), self.kind(e.orelse, scope, depth), self.kind(e.test, scope, depth)))
        if isinstance(e, (cst.Tuple, cst.List, cst.Set)):
            return combine(self.kind(el.value, scope, depth) for el in e.elements)
        if isinstance(e, cst.NamedExpr):
            return self.kind(e.value, scope, depth)
        return UNKNOWN

    # -- what a dict holds under a key ----------------------------------------------------------
    def keyed_kind(self, container: cst.BaseExpression, key, scope: "Scope", depth: int = 0,
                   sources: list | None = None) -> "Kind | object | None":
        """The kind of `container[key]` for a literal key where the code shows what the dict holds
        there: a dict display (`{"step": n, **state}`), `dict(state, step=n)`, a dict comprehension,
        a local name bound to one of them, and the function's stores into it (`d["step"] = n`). A
        later entry overrides an earlier one; an unpacked mapping (`**state`) or a store under a key
        the code does not spell may hold the key too. TRACED or STATIC where every value that may be
        the one read is; UNKNOWN where they differ; ABSENT where the dict shown has nothing there;
        None where the code does not show the dict (a parameter, a call's result: the general rule
        decides, a traced pytree's items are tracers).
        `sources` collects (expression, scope) of the values that may be the one read."""
        from jaxfuse_lint.model.scopes import Function

        if depth > self.MAX_DEPTH:
            return None
        depth += 1
        m = self.model

        def value(e: cst.BaseExpression, sc: "Scope") -> Kind:
            if sources is not None:
                sources.append((e, sc))
            return self.kind(e, sc, depth)

        if isinstance(container, cst.Dict):
            kinds = []
            for el in reversed(container.elements):
                if isinstance(el, cst.StarredDictElement):
                    kinds.append(self._item_kind(el.value, key, scope, depth, sources))
                    continue  # (it may hold the key or not)
                k = _literal(el.key)
                if k is NO_KEY or k == key:
                    kinds.append(value(el.value, scope))
                    if k == key:
                        return _every(kinds)
            return _every(kinds) if any(k is not ABSENT for k in kinds) else ABSENT  # (no entry: a later store)
        if isinstance(container, cst.DictComp):
            return value(container.value, scope)
        if isinstance(container, cst.Call) and m.qn(container.func, scope) == "builtins.dict":
            kinds = []
            for a in reversed(container.args):
                if a.keyword is not None:
                    if a.keyword.value == key:
                        kinds.append(value(a.value, scope))
                        return _every(kinds)
                elif a.star == "**":
                    kinds.append(self._item_kind(a.value, key, scope, depth, sources))
                elif not a.star and isinstance(a.value, (cst.Name, cst.Attribute, cst.Subscript, cst.Dict,
                                                         cst.DictComp, cst.Call)):
                    kinds.append(self._item_kind(a.value, key, scope, depth, sources))
                else:
                    return None  # `dict(pairs)`: the keys are not shown
            return _every(kinds) if any(k is not ABSENT for k in kinds) else ABSENT
        if not isinstance(container, cst.Name) or not isinstance(scope, Function):
            return None
        found = m.bindings_at(container, scope)
        if found is None or not isinstance(found[0], Function) or not found[1]:
            return None
        owner, bindings = found
        if any(b.kind not in ("assign", "annassign") or b.index is not None or b.value is None for b in bindings):
            return None
        stores = _stores(m, owner, container.value)
        if stores is None:
            return None  # `d.update(...)`, `del d[k]`: changed in ways not read here
        kinds = []
        for b in bindings:
            k = self.keyed_kind(b.value, key, owner, depth, sources)
            if k is None:
                return None
            if k is not ABSENT:
                kinds.append(k)
        kinds.extend(value(v, owner) for k, v in stores if k is NO_KEY or k == key)
        return _every(kinds) if any(k is not ABSENT for k in kinds) else ABSENT

    def _item_kind(self, mapping: cst.BaseExpression, key, scope: "Scope", depth: int,
                   sources: list | None = None):
        """What `mapping[key]` may be: shown by `keyed_kind`, else a tracer for a traced pytree (jit
        traces every leaf), a Python value for a static one, unknown otherwise."""
        shown = self.keyed_kind(mapping, key, scope, depth, sources)
        if shown is not None:
            return shown  # (ABSENT: the mapping shown has nothing there)
        if sources is not None:
            sources.append((mapping, scope))
        k = self.kind(mapping, scope, depth)
        return k if k in (TRACED, STATIC) else UNKNOWN

    def _call_kind(self, e: cst.Call, scope: "Scope", depth: int) -> Kind:
        m = self.model
        args = [a.value for a in e.args]
        qn = m.qn(e.func, scope)
        if qn is not None:
            if qn in _STATIC_BUILTINS or qn in JNP_STATIC_FUNCTIONS:
                return STATIC
            if qn in _PASSTHROUGH_BUILTINS:
                return combine(self.kind(a, scope, depth) for a in args)
            if qn.startswith(ARRAY_NAMESPACES):
                # Under jit every jnp/lax operation is staged out: its result is a tracer.
                if m.is_traced_scope(scope):
                    return TRACED
                return combine(self.kind(a, scope, depth) for a in args)
            if qn.startswith("numpy.") or qn.startswith("math."):
                kinds = [self.kind(a, scope, depth) for a in args]
                # A NumPy (or math) result is never a tracer: given one, the call itself raises (JF406
                # reports that call), so a value computed from its result is no evidence of another.
                return UNKNOWN if TRACED in kinds else combine(kinds)
            if qn.startswith("builtins."):
                return UNKNOWN
        # A method call: `x.sum()` is traced when x is; `x.item()` forces a Python value.
        if isinstance(e.func, cst.Attribute):
            if e.func.attr.value in _STATIC_METHODS:
                return STATIC
            base = self.kind(e.func.value, scope, depth)
            if base is TRACED:
                return TRACED
        # A call of one of the module's functions: what its returns are, given these arguments.
        callee = self.callee(e, scope)
        if callee is not None and callee.returns:
            arg_kinds = [self.kind(a, scope, depth) for a in args]
            if callee in m.traced.reasons or TRACED in arg_kinds:
                with_args = self._with_call_args(callee, e, scope, depth)
                return with_args
        return UNKNOWN

    def bind_receiver(self, sub: "ValueAnalysis", callee: "Function", call: cst.Call, scope: "Scope") -> None:
        """Give `sub`, the analysis evaluating `call`'s result, the object the call binds to
        callee's `self` (model/object_fields.py reads it; nothing here)."""

    def callee(self, call: cst.Call, scope: "Scope") -> "Function | None":
        """The one function of the module a call runs: `f(x)` by name, or a method reached through
        an object (`self.helper(x)`, `self.handler.flux(y)` where the module shows which class
        `self.handler` holds); None when it is not one known function."""
        m = self.model
        if isinstance(call.func, cst.Name):
            return m.function_named(call.func.value, scope)
        analysis = getattr(m, "traced_analysis", None)
        if not isinstance(call.func, (cst.Attribute, cst.Call)) or analysis is None:
            return None  # (`Block(8)(x)`: a new instance's `__call__`)
        found = {fn for fn, _ in analysis().callables(call.func, scope, direct_only=True)}
        return found.pop() if len(found) == 1 else None

    def _returned_element_kind(self, call: cst.Call, index: int, scope: "Scope", depth: int) -> Kind | None:
        """`var, n = helper(data)` where every `return` of the module's helper is a tuple literal
        of that length: the kind of the index-th elements (`return jnp.var(m), m.size` gives a
        static n). None when the returns are not such tuples."""
        m = self.model
        callee = self.callee(call, scope)
        if callee is None or not callee.returns or callee.is_lambda:
            return None
        elements = []
        for r in callee.returns:
            if not isinstance(r, (cst.Tuple, cst.List)) or index >= len(r.elements) or any(
                    isinstance(el, cst.StarredElement) for el in r.elements):
                return None
            elements.append(r.elements[index].value)
        if callee not in m.traced.reasons and TRACED not in [self.kind(a.value, scope, depth) for a in call.args]:
            return UNKNOWN
        return self._with_call_args(callee, call, scope, depth, elements)

    def _with_call_args(self, callee: "Function", call: cst.Call, scope: "Scope", depth: int,
                        exprs: list | None = None) -> Kind:
        """The kind of callee's return values (or of `exprs` in it) when its parameters take this
        call's argument kinds."""
        m = self.model
        kinds = []
        saved = dict(self._param_memo)
        try:
            for name in callee.params:
                arg = m.argument_for(call, callee, name)
                if arg is not None:
                    self._param_memo[(id(callee), name)] = self.kind(arg, scope, depth)
                elif name in callee.params_with_default:
                    self._param_memo[(id(callee), name)] = STATIC
            # Memoised kinds inside the callee depend on these parameter kinds: evaluate fresh.
            sub = type(self)(m)
            sub.__dict__.update({k: v for k, v in self.__dict__.items() if k in _SHARED_WITH_SUB})
            self.bind_receiver(sub, callee, call, scope)
            sub._param_memo = self._param_memo
            sub._active = self._active
            for r in (callee.returns if exprs is None else exprs):
                kinds.append(sub.kind(r, callee, depth))
        finally:
            self._param_memo = saved
        return combine(kinds)
