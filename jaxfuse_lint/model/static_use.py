"""Where a value flows: to uses that need a static (concrete, hashable, host) value, or into the
compiled program as an array.

JF201, JF202, JF207 and JF203 report a host value (a NumPy array, a captured jax array) only
when it reaches the program: it is then folded in as a constant (or kept alive as a temporary).
A value that only feeds shapes, axes, permutations, split points, indices into Python lists,
`set`/`dict` keys, Python control (`if`, `while`, `and`/`or`, `not`), `len`/`int`/`range`/
`.tolist()`/`.item()`, a jitted function's `static_argnums`, or a `functools.lru_cache`d
helper's return value is static metadata, never program data: with `jax.numpy` it would become
a tracer and the program would fail (`ConcretizationTypeError`, unhashable tracer, non-concrete
shape). So no rule reports it, and no fix rewrites a value that reaches such a use.

`uses(expr, scope)` follows the value up its expression (indexing, arithmetic, methods, tuples),
through local names it is assigned to (`x = np.roll(...); y = x[i]; jnp.transpose(z, y)`) and
into the module's own functions (their parameters, and the call sites of a helper whose return
value it is), and says which kinds of use it reaches:

- META: `.shape`, `.ndim`, `.dtype`, `len(...)`: static facts, fine for a NumPy and a jax array;
- STATIC: a use that needs a concrete host value (above);
- PROGRAM: an operand of traced computation (jnp/lax calls, arithmetic with a tracer, the
  traced function's return value);
- UNKNOWN: anything the model cannot follow (another module's function, an attribute store).

`mutated` says whether the array is changed in place afterwards (`a[0] = 1`, `a += b` on the
name, `a.fill(...)`, `a.sort()`, `np.fill_diagonal(a, ...)`): a jax array cannot be, so such a
NumPy array is not a constant to rewrite. `escapes` says whether it is stored on `self` (the
uses of `self.attr` in the class's methods are followed): a `jnp` value there would be a tracer
that outlives the trace.

Which code runs on the host (host callbacks, `ensure_compile_time_eval`) is model/host_code.py;
which call arguments jax reads as Python values is model/static_arguments.py.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

import libcst as cst

from jaxfuse_lint.model.api import STATIC_ATTRIBUTES
from jaxfuse_lint.model.compile_cache import memoised_function
from jaxfuse_lint.model.host_code import host_code
from jaxfuse_lint.model.numpy_values import NumpyView
from jaxfuse_lint.model.scopes import Function
from jaxfuse_lint.model.staging import StagingView, staging
from jaxfuse_lint.model.static_arguments import static_argument, static_params
from jaxfuse_lint.model.values import Kind

if TYPE_CHECKING:
    from jaxfuse_lint.model.scopes import Binding, Scope


class StaticUseView(StagingView, NumpyView, Protocol):
    """What the static-use analysis reads of the model besides what staging reads: the kind
    (static or traced) of an expression."""

META, STATIC, PROGRAM, UNKNOWN = "meta", "static", "program", "unknown"


@dataclass(frozen=True)
class Uses:
    kinds: frozenset = frozenset()
    mutated: bool = False
    static_at: cst.CSTNode | None = field(default=None, compare=False)  # the first static use found
    escapes: bool = False  # stored on an object that outlives the trace (`self.table = ...`)

    @property
    def needs_static(self) -> bool:
        """Some use needs the concrete host value: rewritten to `jnp`, it would get a tracer."""
        return STATIC in self.kinds

    @property
    def reaches_program(self) -> bool:
        """Some use is an operand of traced computation (the value is folded into the program)."""
        return PROGRAM in self.kinds

    @property
    def static_metadata(self) -> bool:
        """The value is static metadata: no use is known to reach the program, and either every
        use is static or some use needs it static (the rest the model cannot follow)."""
        if PROGRAM in self.kinds:
            return False
        return UNKNOWN not in self.kinds or STATIC in self.kinds

    @property
    def rewritable(self) -> bool:
        """A `jnp` version of the value works at every use: every use is followed, nothing needs
        it concrete, nothing changes it in place, nothing keeps it beyond the trace."""
        return not self.needs_static and not self.mutated and not self.escapes and UNKNOWN not in self.kinds

    def __or__(self, other: "Uses") -> "Uses":
        return Uses(self.kinds | other.kinds, self.mutated or other.mutated, self.static_at or other.static_at,
                    self.escapes or other.escapes)


_NONE = Uses()


def _one(kind: str, at: cst.CSTNode | None = None) -> Uses:
    return Uses(frozenset({kind}), False, at if kind == STATIC else None)


_MUTATED = Uses(frozenset(), True)

# Libraries that compute on the host: a jax tracer handed to them fails (they call `np.asarray`).
_HOST_LIBRARIES = ("math.", "itertools.", "scipy.", "sklearn.", "pandas.", "random.", "statistics.", "torch.",
                   "tensorflow.", "matplotlib.", "PIL.", "cv2.", "collections.", "pickle.", "json.", "os.",
                   "copy.", "struct.", "operator.index")

# Builtins that turn the value into Python values (numbers, lists, tuples, sets, strings).
_META_BUILTINS = frozenset({"builtins.len", "builtins.isinstance", "builtins.type", "builtins.id",
                            "builtins.print", "builtins.repr", "builtins.str"})
_STATIC_BUILTINS = frozenset("builtins." + n for n in (
    "int float bool complex range list tuple set frozenset dict sorted reversed enumerate zip iter next min max "
    "sum abs round divmod hash format map filter all any bytes"
).split())
_CONCRETE_METHODS = frozenset({"tolist", "item", "tobytes", "__index__", "__int__", "__float__", "__bool__",
                               "__hash__", "itemset"})
# In-place NumPy methods and functions: a jax array has none of them.
_MUTATING_METHODS = frozenset({"fill", "sort", "put", "itemset", "resize", "partition", "setflags", "setfield",
                               "byteswap"})
_MUTATING_FUNCTIONS = frozenset("numpy." + n for n in (
    "fill_diagonal copyto put place putmask put_along_axis random.shuffle add.at subtract.at multiply.at "
    "maximum.at minimum.at"
).split())


class StaticUses:
    """`uses(expr, scope)`, memoised; `name_uses(bindings, owner)`."""

    def __init__(self, model: "StaticUseView") -> None:
        self.model = model
        self._memo: dict[tuple[int, int], Uses] = {}
        self._active: set[tuple[int, int]] = set()
        self.host = host_code(model)  # which functions run on the host (model/host_code.py)
        self._callers: dict[int, list] | None = None

    # -- public -----------------------------------------------------------------------------------
    def uses(self, expr: cst.CSTNode, scope: "Scope", depth: int = 0) -> Uses:
        """Where the value of `expr` (evaluated in `scope`) goes."""
        key = (id(expr), id(scope))
        if key in self._memo:
            return self._memo[key]
        if key in self._active or depth > 12:
            return _NONE  # a cycle (`a = f(a)`): what the other uses say
        self._active.add(key)
        try:
            result = self._flow(expr, scope, depth)
        finally:
            self._active.discard(key)
        if depth == 0:
            self._memo[key] = result
        return result

    def name_uses(self, bindings: "list[Binding]", owner: "Scope", depth: int = 0) -> Uses:
        """Where the values bound by `bindings` (in `owner`) go: every read that may see them."""
        out = _NONE
        targets = {id(b.target) for b in bindings if b.target is not None}
        names = {b.name for b in bindings}
        for name in names:
            for read in self.model.index.reads_named(name, owner):
                found = self.model.bindings_at(read.name, read.scope)
                if found is None or found[0] is not owner:
                    continue
                if not any(id(b.target) in targets or b in bindings for b in found[1]):
                    continue
                out |= self._read_use(read.name, read.scope, depth + 1)
        return out


    # -- the walk up the expression -----------------------------------------------------------------
    def _flow(self, node: cst.CSTNode, scope: "Scope", depth: int) -> Uses:
        m = self.model
        cur = node
        while True:
            parent = m.parent(cur)
            if parent is None:
                return _one(UNKNOWN)
            if isinstance(parent, cst.Subscript) and parent.value is cur:
                if self._is_store_target(parent):
                    return _MUTATED  # `a[0, 0, :] = 1.0`
                cur = parent  # elements or a slice of the value
                continue
            if isinstance(parent, (cst.Index, cst.Slice)):
                return self._index_use(cur, parent, scope)
            if isinstance(parent, cst.Attribute) and parent.value is cur:
                attr = parent.attr.value
                if attr in STATIC_ATTRIBUTES:
                    return _one(META)
                grand = m.parent(parent)
                is_call = isinstance(grand, cst.Call) and grand.func is parent
                if attr in _CONCRETE_METHODS:
                    return _one(STATIC, parent)
                if attr in _MUTATING_METHODS and is_call:
                    return _MUTATED
                if attr == "at":
                    return _one(PROGRAM)  # `x.at[i].set(...)`: jax's functional update
                cur = grand if is_call else parent
                continue
            if isinstance(parent, cst.BinaryOperation):
                other = parent.right if parent.left is cur else parent.left
                if m.kind(other, scope) is Kind.TRACED:
                    return _one(PROGRAM)
                cur = parent
                continue
            if isinstance(parent, cst.UnaryOperation):
                if isinstance(parent.operator, cst.Not):
                    return _one(STATIC, parent)
                cur = parent
                continue
            if isinstance(parent, cst.ComparisonTarget):
                comp = m.parent(parent)
                if isinstance(parent.operator, (cst.In, cst.NotIn)):
                    return _one(STATIC, comp)  # `i in PERM`: Python containment
                cur = comp
                continue
            if isinstance(parent, cst.Comparison):
                if any(isinstance(t.operator, (cst.Is, cst.IsNot)) for t in parent.comparisons):
                    return _one(META)
                cur = parent
                continue
            if isinstance(parent, cst.BooleanOperation):
                return _one(STATIC, parent)
            if isinstance(parent, (cst.If, cst.While)) and parent.test is cur:
                return _one(STATIC, parent)
            if isinstance(parent, cst.IfExp):
                if parent.test is cur:
                    return _one(STATIC, parent)
                cur = parent
                continue
            if isinstance(parent, cst.Assert):
                return _one(STATIC, parent)
            if isinstance(parent, cst.Element):
                container = m.parent(parent)
                if isinstance(container, cst.Set):
                    return _one(STATIC, container)  # a set member must be hashable
                if isinstance(container, (cst.List, cst.Tuple)):
                    if self._is_store_target(container):
                        return _one(UNKNOWN)
                    cur = container
                    continue
                return _one(UNKNOWN)
            if isinstance(parent, cst.DictElement):
                if parent.key is cur:
                    return _one(STATIC, parent)  # a dict key must be hashable
                return _one(UNKNOWN)
            if isinstance(parent, cst.DictComp):
                return _one(STATIC, parent) if parent.key is cur else _one(UNKNOWN)
            if isinstance(parent, cst.SetComp) and parent.elt is cur:
                return _one(STATIC, parent)
            if isinstance(parent, (cst.ListComp, cst.GeneratorExp)) and parent.elt is cur:
                cur = parent  # the items of a list: where the list goes
                continue
            if isinstance(parent, cst.Arg) and parent.value is cur:
                return self._argument_use(cur, parent, scope, depth)
            if isinstance(parent, cst.Return):
                return self._return_use(scope, depth)
            if isinstance(parent, cst.Lambda) and parent.body is cur:
                fn = m.index.function_of.get(parent)
                return self._return_use(fn, depth) if fn is not None else _one(UNKNOWN)
            if isinstance(parent, (cst.For, cst.CompFor)) and parent.iter is cur:
                # Iterated in Python: its items go where the loop variable goes (`tuple(p)`: Python
                # values; `x + i`: constants of the program).
                items = self._target_use(parent.target, scope, depth)
                return items if items.kinds or items.mutated else _one(UNKNOWN)
            if isinstance(parent, cst.FormattedStringExpression):
                return _one(META)
            if isinstance(parent, cst.AugAssign):
                if parent.target is cur:
                    return _MUTATED if self._is_host_array(cur, scope) else _one(UNKNOWN)
                return _one(PROGRAM) if m.kind(parent.target, scope) is Kind.TRACED else _one(UNKNOWN)
            if isinstance(parent, (cst.Assign, cst.AnnAssign)) and parent.value is cur:
                targets = [t.target for t in parent.targets] if isinstance(parent, cst.Assign) else [parent.target]
                out = _NONE
                for t in targets:
                    out |= self._target_use(t, scope, depth)
                return out
            if isinstance(parent, cst.NamedExpr) and parent.value is cur:
                return self._target_use(parent.target, scope, depth) | self.uses(parent, scope, depth + 1)
            if isinstance(parent, cst.Param) and parent.default is cur:
                return self._default_use(parent, depth)
            if isinstance(parent, cst.Expr):
                return _NONE  # a statement of its own: the value is dropped
            return _one(UNKNOWN)

    def _index_use(self, cur: cst.CSTNode, slice_node: cst.CSTNode, scope: "Scope") -> Uses:
        m = self.model
        if isinstance(slice_node, cst.Slice):
            return _one(STATIC, slice_node)  # slice bounds are Python numbers
        element = m.parent(slice_node)
        sub = m.parent(element)
        if not isinstance(sub, cst.Subscript):
            return _one(UNKNOWN)
        if self._python_container(sub.value, scope):
            return _one(STATIC, sub)  # an index into a Python list, tuple or dict
        if self._scalar_element(cur):
            return _one(STATIC, sub)  # `parts[order[0]]`: one number, a Python index at most
        if m.kind(sub.value, scope) is Kind.TRACED or m.device_arrays.is_array(sub.value, scope):
            return _one(PROGRAM)  # a gather with these indices: they are in the program
        if self._is_host_array(sub.value, scope):
            return self.uses(sub, scope, 1)
        return _one(UNKNOWN)

    def _argument_use(self, cur: cst.CSTNode, arg: cst.Arg, scope: "Scope", depth: int) -> Uses:
        m = self.model
        call = m.parent(arg)
        if not isinstance(call, cst.Call) or arg.star:
            return _one(UNKNOWN)
        if static_argument(m, cur, scope):
            return _one(STATIC, call)
        qn = m.qn(call.func, scope)
        if qn is not None:
            if qn in _META_BUILTINS:
                return _one(META)
            if qn in _STATIC_BUILTINS or qn.startswith(_HOST_LIBRARIES):
                return _one(STATIC, call)  # Python values, or a host library that needs the concrete array
            if qn in _MUTATING_FUNCTIONS and call.args and call.args[0] is arg:
                return _MUTATED
            if qn.startswith("numpy."):
                return self.uses(call, scope, depth + 1)  # still a host value: where NumPy's result goes
            if qn == "functools.partial":
                return _one(UNKNOWN)
            if qn.startswith("jax."):
                return _one(PROGRAM)
            # Another library (numpyro, distrax, flax...) may read it concretely (argument
            # validation): reported where it reaches the program otherwise, never rewritten.
            return _one(UNKNOWN)
        callee = None
        if isinstance(call.func, cst.Name):
            callee = m.function_named(call.func.value, scope)
        elif isinstance(call.func, cst.Attribute) and isinstance(call.func.value, cst.Name) and \
                call.func.value.value in ("self", "cls"):
            callee = m.method_of(scope, call.func.attr.value)
        if callee is None:
            return _one(UNKNOWN)
        if memoised_function(m, callee):
            return _one(STATIC, call)  # a cache key: hashed on the host
        param = self._param_for(callee, call, arg)
        if param is None:
            return _one(UNKNOWN)
        if param in static_params(m, callee):
            return _one(STATIC, call)
        if depth > 8:
            return _one(UNKNOWN)
        bindings = callee.bindings.get(param, [])
        params = [b for b in bindings if b.kind == "param"]
        if not params:
            return _one(UNKNOWN)
        return self.name_uses(params, callee, depth + 1)

    def _return_use(self, fn: "Scope | None", depth: int) -> Uses:
        m = self.model
        if not isinstance(fn, Function):
            return _one(UNKNOWN)
        if memoised_function(m, fn):
            return _one(STATIC, fn.node)  # the cache keeps the host value on purpose
        if m.is_traced(fn) and staging(m).staging_transform(fn) is not None:
            return _one(PROGRAM)  # an output of the compiled program: its callers get a device array
        callers = self._call_sites(fn)
        if callers and depth <= 8:
            out = _NONE
            for call, scope in callers:
                out |= self.uses(call, scope, depth + 1)
            return out
        return _one(PROGRAM) if m.is_traced(fn) and not self.host.runs_on_host(fn) else _one(UNKNOWN)

    def _target_use(self, target: cst.CSTNode, scope: "Scope", depth: int) -> Uses:
        if isinstance(target, cst.Name):
            owner = self.model.lookup(target.value, scope)
            if owner is None:
                return _one(UNKNOWN)
            bindings = [b for b in owner[1] if b.target is target]
            if not bindings:
                return _one(UNKNOWN)
            return self.name_uses(bindings, owner[0], depth)
        if isinstance(target, (cst.Tuple, cst.List)):
            out = _NONE
            for el in target.elements:
                if isinstance(el, cst.StarredElement):
                    out |= self._target_use(el.value, scope, depth)
                else:
                    out |= self._target_use(el.value, scope, depth)
            return out
        if isinstance(target, cst.Attribute) and isinstance(target.value, cst.Name) and \
                target.value.value == "self" and isinstance(scope, Function) and scope.cls is not None:
            return self._self_attribute_use(target.attr.value, scope, depth)
        return _one(UNKNOWN)  # an item store, another object's attribute: followed no further

    def _self_attribute_use(self, attr: str, scope: Function, depth: int) -> Uses:
        """`self.perm = value`: where the class's methods use `self.perm`."""
        out = _NONE
        found = False
        for read in self.model.index.reads_named("self", scope.cls):
            fn = read.scope
            if not isinstance(fn, Function) or fn.cls is not scope.cls:
                continue
            parent = self.model.parent(read.name)
            if not (isinstance(parent, cst.Attribute) and parent.value is read.name and parent.attr.value == attr):
                continue
            if self._is_store_target(parent):
                continue  # another assignment of the attribute
            found = True
            out |= self.uses(parent, fn, depth + 1)
        # A jnp value stored on the object would be a tracer that outlives the trace: never rewritable.
        return (out if found else _one(UNKNOWN)) | Uses(escapes=True)

    def _default_use(self, param: cst.Param, depth: int) -> Uses:
        """`def inner(y, p=np.arange(3))`: the default goes where the parameter goes."""
        node = self.model.parent(param)
        while node is not None and not isinstance(node, (cst.FunctionDef, cst.Lambda)):
            node = self.model.parent(node)
        fn = self.model.index.function_of.get(node) if node is not None else None
        if fn is None:
            return _one(UNKNOWN)
        bindings = [b for b in fn.bindings.get(param.name.value, []) if b.kind == "param"]
        return self.name_uses(bindings, fn, depth + 1) if bindings else _one(UNKNOWN)

    def _read_use(self, name: cst.Name, scope: "Scope", depth: int) -> Uses:
        if isinstance(scope, Function) and scope is not None and self.host.runs_on_host(scope):
            return _one(STATIC, name)  # read by host code
        parent = self.model.parent(name)
        if isinstance(parent, cst.AugAssign) and parent.target is name:
            return _MUTATED if self._name_is_host_array(name, scope) else _NONE
        return self.uses(name, scope, depth)

    # -- helpers ------------------------------------------------------------------------------------
    def _call_sites(self, fn: Function) -> list:
        """The module's calls of fn by name (`helper(...)`, `self.helper(...)`)."""
        if self._callers is None:
            self._callers = {}
            m = self.model
            for site in m.index.calls:
                func = site.call.func
                callee = None
                if isinstance(func, cst.Name):
                    callee = m.function_named(func.value, site.scope)
                elif isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name) and \
                        func.value.value in ("self", "cls"):
                    callee = m.method_of(site.scope, func.attr.value)
                if callee is not None:
                    self._callers.setdefault(id(callee), []).append((site.call, site.scope))
        return self._callers.get(id(fn), [])

    @staticmethod
    def _param_for(callee: Function, call: cst.Call, arg: cst.Arg) -> str | None:
        if arg.keyword is not None:
            return arg.keyword.value if arg.keyword.value in callee.params else None
        index = [a for a in call.args if a.keyword is None and not a.star].index(arg)
        params = list(callee.params)
        if params and params[0] in ("self", "cls") and callee.cls is not None and isinstance(call.func, cst.Attribute):
            index += 1
        return params[index] if index < len(params) else None

    def _is_store_target(self, node: cst.CSTNode) -> bool:
        parent = self.model.parent(node)
        if isinstance(parent, cst.AssignTarget) and parent.target is node:
            return True
        if isinstance(parent, (cst.AugAssign, cst.AnnAssign)) and parent.target is node:
            return True
        if isinstance(parent, cst.Del):
            return True
        if isinstance(parent, cst.Element):
            container = self.model.parent(parent)
            return isinstance(container, (cst.Tuple, cst.List)) and self._is_store_target(container)
        return False

    def _is_host_array(self, e: cst.CSTNode, scope: "Scope") -> bool:
        return self.model.numpy_arrays.is_array(e, scope)

    def _name_is_host_array(self, name: cst.Name, scope: "Scope") -> bool:
        found = self.model.lookup(name.value, scope)
        if found is None:
            return False
        return self.model.numpy_arrays.binding_is_array([b for b in found[1] if b.kind != "augassign"] or found[1],
                                                        found[0])

    def _python_container(self, e: cst.CSTNode, scope: "Scope", depth: int = 0) -> bool:
        """A list, tuple or dict display (or a name bound only to one, or a comprehension of one)."""
        if isinstance(e, (cst.List, cst.Tuple, cst.Dict, cst.ListComp, cst.DictComp)):
            return True
        if isinstance(e, cst.Call):
            return self.model.qn(e.func, scope) in ("builtins.list", "builtins.tuple", "builtins.dict")
        if isinstance(e, cst.Name) and depth < 4:
            found = self.model.bindings_at(e, scope)
            if found is None or not found[1]:
                return False
            for b in found[1]:
                if b.kind == "param":
                    fn = found[0]
                    if not isinstance(fn, Function) or not _annotated_container(fn, b.name):
                        return False
                    continue
                if b.kind not in ("assign", "annassign") or b.value is None or b.index is not None:
                    return False
                if not self._python_container(b.value, found[0], depth + 1):
                    return False
            return True
        return False

    @staticmethod
    def _scalar_element(e: cst.CSTNode) -> bool:
        """`order[0]`, `perm[i, 1]`: one element picked by Python integers or names (no slice)."""
        if not isinstance(e, cst.Subscript):
            return False
        for el in e.slice:
            if not isinstance(el.slice, cst.Index):
                return False
            v = el.slice.value
            if isinstance(v, cst.UnaryOperation):
                v = v.expression
            if not isinstance(v, (cst.Integer, cst.Name)):
                return False
        return True


def _annotated_container(fn: Function, name: str) -> bool:
    node = fn.param_nodes.get(name)
    ann = getattr(node, "annotation", None)
    if ann is None:
        return False
    a = ann.annotation
    if isinstance(a, cst.Subscript):
        a = a.value
    if isinstance(a, cst.Attribute):
        a = a.attr
    return isinstance(a, cst.Name) and a.value in ("list", "tuple", "dict", "List", "Tuple", "Dict", "Sequence")


def static_uses(model: "StaticUseView") -> StaticUses:
    """The model's StaticUses (built once per model, kept with it)."""
    s = model.__dict__.get("_static_uses")
    if s is None:
        s = model.__dict__["_static_uses"] = StaticUses(model)
    return s


__all__ = ["Uses", "StaticUses", "static_uses", "StaticUseView", "META", "STATIC", "PROGRAM", "UNKNOWN"]
