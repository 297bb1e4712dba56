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

`runs_on_host(fn)` says whether a traced-looking function only ever runs on the host: the body
of a host callback (`jax.pure_callback` / `io_callback` / `jax.debug.callback`, passed by name,
as a lambda or through `functools.partial`), or a function only such code calls.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

import libcst as cst

from jaxfuse_lint.model.api import STATIC_ATTRIBUTES
from jaxfuse_lint.model.compile_cache import memoised_function
from jaxfuse_lint.model.numpy_values import NumpyView, static_argument as _numpy_static_argument
from jaxfuse_lint.model.scopes import Function, walk
from jaxfuse_lint.model.staging import StagingView, staging
from jaxfuse_lint.model.traced import keyword
from jaxfuse_lint.model.values import Kind

if TYPE_CHECKING:
    from jaxfuse_lint.model.scopes import Binding, Scope
    from jaxfuse_lint.model.shapes import Shape


class StaticUseView(StagingView, NumpyView, Protocol):
    """What the static-use analysis reads of the model besides what staging reads: the kind
    (static or traced) and the shape of an expression."""

    def shape(self, expr: cst.CSTNode, scope: Scope) -> Shape | None: ...

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

# Arguments jax reads as Python values (shapes, axes, permutations, split points, sizes): by
# keyword anywhere, and by position for the functions listed.
_STATIC_KEYWORDS = frozenset({
    "shape", "newshape", "axis", "axes", "reps", "indices_or_sections", "new_sizes", "dimensions", "source",
    "destination", "axis1", "axis2", "num", "repeats", "total_repeat_length", "sizes", "perm", "permutation",
    "axis_name", "split_axis", "concat_axis", "slice_sizes", "start_indices", "limit_indices", "strides",
    "pad_width", "num_classes", "length", "static_argnums", "static_argnames", "out_axes", "in_axes",
    "broadcast_dimensions", "dimension", "k", "s", "n", "ord", "size", "kth", "N", "M",
})
_STATIC_POSITIONS = {
    "jax.numpy.split": (1,), "jax.numpy.array_split": (1,), "jax.numpy.hsplit": (1,), "jax.numpy.vsplit": (1,),
    "jax.numpy.dsplit": (1,), "jax.numpy.reshape": (1,), "jax.numpy.zeros": (0,), "jax.numpy.ones": (0,),
    "jax.numpy.empty": (0,), "jax.numpy.full": (0,), "jax.numpy.broadcast_to": (1,), "jax.numpy.tile": (1,),
    "jax.numpy.repeat": (1, 2), "jax.numpy.transpose": (1,), "jax.numpy.permute_dims": (1,),
    "jax.numpy.moveaxis": (1, 2), "jax.numpy.swapaxes": (1, 2), "jax.numpy.expand_dims": (1,),
    "jax.numpy.squeeze": (1,), "jax.numpy.roll": (1, 2), "jax.numpy.rot90": (1, 2), "jax.numpy.flip": (1,),
    "jax.numpy.take": (2,), "jax.numpy.take_along_axis": (2,), "jax.numpy.pad": (1,),
    "jax.numpy.arange": (0, 1, 2), "jax.numpy.linspace": (2,), "jax.numpy.eye": (0, 1, 2),
    "jax.numpy.identity": (0,), "jax.numpy.tri": (0, 1, 2), "jax.numpy.indices": (0,),
    "jax.numpy.unravel_index": (1,), "jax.numpy.ravel_multi_index": (1,), "jax.numpy.concatenate": (1,),
    "jax.numpy.stack": (1,), "jax.numpy.diagonal": (1, 2, 3), "jax.numpy.trace": (1, 2, 3),
    "jax.numpy.tensordot": (2,), "jax.numpy.fft.fft": (1, 2), "jax.numpy.fft.ifft": (1, 2),
    "jax.numpy.fft.rfft": (1, 2), "jax.numpy.fft.irfft": (1, 2), "jax.numpy.fft.fftn": (1, 2),
    "jax.numpy.fft.ifftn": (1, 2), "jax.numpy.fft.rfftn": (1, 2), "jax.numpy.fft.irfftn": (1, 2),
    "jax.numpy.fft.fft2": (1, 2), "jax.numpy.fft.ifft2": (1, 2), "jax.numpy.fft.fftshift": (1,),
    "jax.numpy.fft.ifftshift": (1,), "jax.numpy.linalg.norm": (1, 2),
    "jax.lax.reshape": (1, 2), "jax.lax.broadcast": (1,), "jax.lax.broadcast_in_dim": (1, 2),
    "jax.lax.transpose": (1,), "jax.lax.slice": (1, 2, 3), "jax.lax.dynamic_slice": (2,),
    "jax.lax.slice_in_dim": (1, 2, 3, 4), "jax.lax.ppermute": (1, 2), "jax.lax.pshuffle": (1, 2),
    "jax.lax.psum": (1,), "jax.lax.pmean": (1,), "jax.lax.pmax": (1,), "jax.lax.pmin": (1,),
    "jax.lax.all_gather": (1,), "jax.lax.all_to_all": (1, 2, 3), "jax.lax.axis_index": (0,),
    "jax.lax.iota": (0, 1), "jax.lax.rev": (1,), "jax.lax.squeeze": (1,), "jax.lax.expand_dims": (1,),
    "jax.lax.collapse": (1, 2), "jax.lax.pad": (2,), "jax.lax.reduce": (3,),
    "jax.random.normal": (1,), "jax.random.uniform": (1,), "jax.random.randint": (1,),
    "jax.random.bernoulli": (2,), "jax.random.split": (1,), "jax.random.permutation": (),
    "jax.random.choice": (2,), "jax.random.truncated_normal": (3,), "jax.random.categorical": (),
    "jax.nn.one_hot": (1,),
}
_REDUCTIONS = frozenset("jax.numpy." + n for n in (
    "sum prod mean max min amax amin any all argmax argmin std var median cumsum cumprod nansum nanmean "
    "nanmax nanmin count_nonzero ptp argsort sort flip"
).split())
# Methods whose arguments jax reads as Python values (`x.reshape(S)`, `x.sum(AXIS)`).
_STATIC_METHOD_ARGS = frozenset(
    "reshape transpose swapaxes squeeze split tile repeat sum prod mean max min any all argmax argmin std var "
    "cumsum cumprod argsort".split())
# Libraries that compute on the host: a jax tracer handed to them fails (they call `np.asarray`).
_HOST_LIBRARIES = ("math.", "itertools.", "scipy.", "sklearn.", "pandas.", "random.", "statistics.", "torch.",
                   "tensorflow.", "matplotlib.", "PIL.", "cv2.", "collections.", "pickle.", "json.", "os.",
                   "copy.", "struct.", "operator.index")
_ARRAY_CALL_ROUTES = ("jax.", "flax.", "haiku.", "equinox.", "optax.", "diffrax.", "numpyro.", "chex.")

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
    """`uses(expr, scope)`, memoised; `runs_on_host(fn)`."""

    def __init__(self, model: "StaticUseView") -> None:
        self.model = model
        self._memo: dict[tuple[int, int], Uses] = {}
        self._active: set[tuple[int, int]] = set()
        self._host: dict[int, bool] = {}
        self._reads_by_name: dict[str, list] | None = None
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
            for read in self._reads(name):
                found = self.model.bindings_at(read.name, read.scope)
                if found is None or found[0] is not owner:
                    continue
                if not any(id(b.target) in targets or b in bindings for b in found[1]):
                    continue
                out |= self._read_use(read.name, read.scope, depth + 1)
        return out

    def at_compile_time(self, node: cst.CSTNode, scope: "Scope") -> bool:
        """node is inside `with jax.ensure_compile_time_eval():`: the author asks for concrete
        trace-time values there (NumPy constants on purpose)."""
        for a in self.model.ancestors(node):
            if isinstance(a, (cst.FunctionDef, cst.Lambda, cst.ClassDef)):
                return False
            if isinstance(a, cst.With):
                for item in a.items:
                    e = item.item
                    func = e.func if isinstance(e, cst.Call) else e
                    qn = self.model.qn(func, scope) or ""
                    if qn.endswith("ensure_compile_time_eval"):
                        return True
        return False

    def runs_on_host(self, fn: "Function | None") -> bool:
        """fn is traced only as (or from) the host function of a host callback, only from
        `with jax.ensure_compile_time_eval():` blocks, or only from `functools.cache`d functions:
        it runs on concrete values."""
        if fn is None:
            return False
        key = id(fn)
        if key in self._host:
            return self._host[key]
        self._host[key] = False  # cycles: not proven
        reasons = self.model.traced.reasons.get(fn, ())
        result = bool(reasons) and all(self._host_reason(r) for r in reasons)
        self._host[key] = result
        return result

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
        if param in _static_params(m, callee):
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
        return _one(PROGRAM) if m.is_traced(fn) and not self.runs_on_host(fn) else _one(UNKNOWN)

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
        for read in self._reads("self"):
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
        if isinstance(scope, Function) and scope is not None and self.runs_on_host(scope):
            return _one(STATIC, name)  # read by host code
        parent = self.model.parent(name)
        if isinstance(parent, cst.AugAssign) and parent.target is name:
            return _MUTATED if self._name_is_host_array(name, scope) else _NONE
        return self.uses(name, scope, depth)

    # -- helpers ------------------------------------------------------------------------------------
    def _host_reason(self, r) -> bool:
        if r.kind == "passed" and staging(self.model)._handed_to_callback(r.node, r.caller):
            return True
        if r.kind in ("called", "passed") and r.caller is not None and r.node is not None and \
                self.at_compile_time(r.node, r.caller):
            return True
        if r.kind in ("called", "passed") and isinstance(r.caller, Function):
            # A `functools.cache`d caller runs once per (hashable, static) key: what it calls builds
            # host values on purpose.
            return memoised_function(self.model, r.caller) or self.runs_on_host(r.caller)
        return False

    def _reads(self, name: str) -> list:
        if self._reads_by_name is None:
            self._reads_by_name = {}
            for read in self.model.index.reads:
                self._reads_by_name.setdefault(read.name.value, []).append(read)
        return self._reads_by_name.get(name, [])

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


def _static_params(model: "StaticUseView", fn: Function) -> set[str]:
    """Parameters a jit decorator on fn marks static (`static_argnums` / `static_argnames`)."""
    out: set[str] = set()
    node = fn.node
    if not isinstance(node, cst.FunctionDef):
        return out
    params = list(fn.params)
    for dec in node.decorators:
        d = dec.decorator
        if not isinstance(d, cst.Call):
            continue
        for name in ("static_argnums", "static_argnames"):
            v = keyword(d, name)
            if v is None:
                continue
            items = v.elements if isinstance(v, (cst.Tuple, cst.List)) else [cst.Element(v)]
            for el in items:
                x = el.value
                if isinstance(x, cst.Integer) and int(x.value) < len(params):
                    out.add(params[int(x.value)])
                elif isinstance(x, cst.SimpleString):
                    out.add(x.evaluated_value)
    return out


def static_argument(model: "StaticUseView", node: cst.CSTNode, scope: "Scope") -> bool:
    """Whether `node` is an argument jax reads as a Python value: a shape, axis, permutation,
    split point, size or axis name (`jnp.split(x, SPLITS)`, `x.reshape(SHAPE)`,
    `jnp.sum(x, axis=AXES)`, `lax.ppermute(x, "i", perm=PAIRS)`, `jnp.roll(x, s, AXIS)`)."""
    if _numpy_static_argument(model, node, scope):
        return True
    arg = model.parent(node)
    if not isinstance(arg, cst.Arg) or arg.value is not node or arg.star:
        return False
    call = model.parent(arg)
    if not isinstance(call, cst.Call):
        return False
    qn = model.qn(call.func, scope)
    if arg.keyword is not None:
        if qn is None or not qn.startswith(_ARRAY_CALL_ROUTES):
            return False  # another function's keyword of the same name means what it likes
        return arg.keyword.value in _STATIC_KEYWORDS
    index = [a for a in call.args if a.keyword is None and not a.star].index(arg)
    if qn is not None:
        if qn in _STATIC_POSITIONS:
            return index in _STATIC_POSITIONS[qn]
        return qn in _REDUCTIONS and index == 1
    if isinstance(call.func, cst.Attribute) and call.func.attr.value in _STATIC_METHOD_ARGS:
        return True
    return False


# jax functions whose result is an array computed by the program (not a function, not a pytree).
_OP_ROUTES = ("jax.numpy.", "jax.lax.", "jax.nn.", "jax.scipy.", "jax.random.", "jax.image.", "jax.ops.")
_NOT_OPS = frozenset({"jax.numpy.shape", "jax.numpy.ndim", "jax.numpy.size", "jax.numpy.result_type",
                      "jax.numpy.iinfo", "jax.numpy.finfo", "jax.numpy.issubdtype", "jax.random.key_data"})
# Calls that hand back their argument's buffer (no new array): computed only when the argument is.
_PASS_THROUGH = frozenset({"jax.numpy.asarray", "jax.numpy.array", "jax.lax.stop_gradient", "jax.device_put", "jax.numpy.squeeze",
                           "jax.lax.with_sharding_constraint"})
_WHOLE_REDUCTIONS = frozenset("jax.numpy." + n for n in (
    "sum prod mean max min amax amin any all argmax argmin std var median count_nonzero ptp linalg.norm "
    "linalg.det vdot nansum nanmean nanmax nanmin trace allclose array_equal"
).split())


def computed_array(model: "StaticUseView", e: cst.CSTNode, scope: "Scope", depth: int = 0) -> bool:
    """`e` is an array the program computes in `scope`: the result of a jnp/lax operation, of
    arithmetic or indexing on one, of a transformed function's call, or of one of the module's
    functions whose every `return` is one. Not a parameter or its alias (`h = potential`), not a
    field read off an input (`state.params`, `params["w"]`), not a Python number, not a function."""
    if depth > 6:
        return False
    m = model
    if isinstance(e, cst.Call):
        qn = m.qn(e.func, scope)
        if qn is not None:
            if qn in _PASS_THROUGH:
                first = e.args[0].value if e.args and not e.args[0].star else None
                return first is not None and computed_array(m, first, scope, depth + 1)  # the same buffer
            return qn.startswith(_OP_ROUTES) and qn not in _NOT_OPS and not qn.startswith("jax.numpy.dtype")
        func = e.func
        if isinstance(func, cst.Call):
            from jaxfuse_lint.model.api import TRANSFORMS
            return m.qn(func.func, scope) in TRANSFORMS  # `jax.vmap(f)(x)`: an array the program computes
        if isinstance(func, cst.Attribute):
            if func.attr.value in STATIC_ATTRIBUTES:
                return False
            if computed_array(m, func.value, scope, depth + 1):
                return True  # a method of a computed array (`y.reshape(...)`, `y.sum(0)`)
        callee = None
        if isinstance(func, cst.Name):
            callee = m.function_named(func.value, scope)
        elif isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name) and \
                func.value.value in ("self", "cls"):
            callee = m.method_of(scope, func.attr.value)
        if callee is not None and callee.returns and not callee.is_lambda:
            return all(computed_array(m, r, callee, depth + 1) for r in callee.returns)
        if callee is not None and callee.is_lambda:
            return computed_array(m, callee.node.body, callee, depth + 1)
        return False
    if isinstance(e, cst.BinaryOperation):
        if isinstance(e.operator, cst.MatrixMultiply):
            return any(m.kind(x, scope) is Kind.TRACED for x in (e.left, e.right))
        sides = (e.left, e.right)
        return any(computed_array(m, x, scope, depth + 1) or m.kind(x, scope) is Kind.TRACED and
                   _plain_array_operand(m, x, scope) for x in sides) and \
            any(m.kind(x, scope) is Kind.TRACED for x in sides)
    if isinstance(e, cst.UnaryOperation):
        return not isinstance(e.operator, cst.Not) and computed_array(m, e.expression, scope, depth + 1)
    if isinstance(e, cst.Subscript):
        if any(isinstance(el.slice, cst.Index) and isinstance(el.slice.value, cst.SimpleString) for el in e.slice):
            return False  # `params["w"]`: a field read
        return computed_array(m, e.value, scope, depth + 1)
    if isinstance(e, cst.Attribute):
        return e.attr.value in ("T", "mT", "real", "imag") and computed_array(m, e.value, scope, depth + 1)
    if isinstance(e, cst.IfExp):
        return computed_array(m, e.body, scope, depth + 1) and computed_array(m, e.orelse, scope, depth + 1)
    if isinstance(e, cst.Name):
        found = m.bindings_at(e, scope)
        if found is None or not found[1]:
            return False
        owner, bindings = found
        for b in bindings:
            if b.kind not in ("assign", "annassign", "augassign", "walrus") or b.value is None:
                return False
            value = b.value
            if b.index is not None:
                if not isinstance(value, (cst.Tuple, cst.List)):
                    if not computed_array(m, value, owner, depth + 1):
                        return False  # `a, b = f(x)`: both parts when f's result is an array tuple
                    continue
                value = value.elements[b.index].value
            if b.kind == "augassign":
                continue
            if not computed_array(m, value, owner, depth + 1):
                return False
        return any(b.kind != "augassign" for b in bindings)
    return False


def _plain_array_operand(model: "StaticUseView", e: cst.CSTNode, scope: "Scope") -> bool:
    """A traced operand of arithmetic that is an array value in its own right (a parameter, a
    subscript of one): `x * 2.0` computes a new array of x's size."""
    return isinstance(e, (cst.Name, cst.Subscript, cst.Attribute, cst.Call))


def known_scalar(model: "StaticUseView", e: cst.CSTNode, scope: "Scope", depth: int = 0) -> bool:
    """`e` is known to hold a shape-`()` value: its shape says so, or it is a whole-array
    reduction (`jnp.sum(x)`, `jnp.linalg.norm(v)`, `y.mean()`)."""
    shape = model.shape(e, scope)
    if shape is not None and shape.rank == 0:
        return True
    if isinstance(e, cst.Call):
        qn = model.qn(e.func, scope)
        has_axis = keyword(e, "axis") is not None or (len(e.args) > 1 and e.args[1].keyword is None)
        if qn in _WHOLE_REDUCTIONS and not has_axis:
            return True
        if qn is None and isinstance(e.func, cst.Attribute) and not e.args and \
                e.func.attr.value in ("sum", "mean", "max", "min", "prod", "any", "all", "std", "var", "item"):
            return True
    return _scalar_value(model, e, scope, depth)


# jax functions that build an array of a given size from scalar arguments (not elementwise).
_SIZED_CREATORS = frozenset("jax.numpy." + n for n in (
    "zeros ones full empty arange linspace logspace geomspace eye identity tri tril triu indices meshgrid "
    "broadcast_to tile repeat diag vander mgrid ogrid"
).split())
_SCALAR_ANNOTATIONS = frozenset({"int", "float", "bool", "complex"})


def _scalar_value(model: "StaticUseView", e: cst.CSTNode, scope: "Scope", depth: int) -> bool:
    """A Python number, or jax math of scalars only (`jnp.array(eos_id)`, `lgamma(jnp.asarray(n + 1))`)."""
    if depth > 8:
        return False
    if isinstance(e, (cst.Integer, cst.Float)):
        return True
    if isinstance(e, cst.UnaryOperation):
        return _scalar_value(model, e.expression, scope, depth + 1)
    if isinstance(e, cst.BinaryOperation):
        return _scalar_value(model, e.left, scope, depth + 1) and _scalar_value(model, e.right, scope, depth + 1)
    shape = model.shape(e, scope)
    if shape is not None and shape.rank == 0:
        return True
    if isinstance(e, cst.Call):
        qn = model.qn(e.func, scope)
        if qn is None or qn in _SIZED_CREATORS or qn.startswith("jax.random.") or \
                not qn.startswith(("jax.numpy.", "jax.scipy.special.", "jax.lax.", "jax.nn.")):
            return False
        values = [a.value for a in e.args if a.keyword is None or a.keyword.value in ("x", "a", "object")]
        return bool(values) and not any(a.star for a in e.args) and \
            all(_scalar_value(model, v, scope, depth + 1) for v in values)
    if isinstance(e, cst.Name):
        found = model.bindings_at(e, scope)
        if found is None or not found[1]:
            return False
        owner = found[0]
        for b in found[1]:
            if b.kind == "param":
                if not isinstance(owner, Function) or not _python_number_param(owner, b.name):
                    return False
                continue
            if b.kind != "assign" or b.index is not None or b.value is None:
                return False
            if not known_scalar(model, b.value, owner, depth + 1):
                return False
        return True
    return False


def _python_number_param(fn: Function, name: str) -> bool:
    """A parameter annotated `int`/`float`/`bool` or defaulting to a number literal."""
    node = fn.param_nodes.get(name)
    if node is None:
        return False
    ann = node.annotation.annotation if node.annotation is not None else None
    if isinstance(ann, cst.Name):
        return ann.value in _SCALAR_ANNOTATIONS
    default = node.default
    if isinstance(default, cst.UnaryOperation):
        default = default.expression
    return ann is None and isinstance(default, (cst.Integer, cst.Float))


def static_uses(model: "StaticUseView") -> StaticUses:
    """The model's StaticUses (built once per model, kept with it)."""
    s = model.__dict__.get("_static_uses")
    if s is None:
        s = model.__dict__["_static_uses"] = StaticUses(model)
    return s


__all__ = ["computed_array", "known_scalar", "Uses", "StaticUses", "static_uses", "static_argument",
           "META", "STATIC", "PROGRAM", "UNKNOWN"]


# Work far above the size of the value (sorting, searching, factorisations and solves): recomputing
# it in every iteration of a loop costs more than keeping it (JF203 stays silent, its codemod offers
# no fix).
COSTLY = frozenset("jax.numpy." + n for n in (
    "sort argsort lexsort unique unique_values unique_counts unique_inverse unique_all searchsorted "
    "partition argpartition median percentile quantile nanmedian nanpercentile nanquantile digitize "
    "histogram sort_complex setdiff1d intersect1d union1d isin in1d"
).split()) | frozenset({"jax.lax.sort", "jax.lax.sort_key_val", "jax.lax.top_k", "jax.lax.approx_max_k",
                        "jax.lax.approx_min_k"})
COSTLY_PREFIXES = ("jax.numpy.linalg.", "jax.scipy.linalg.", "jax.lax.linalg.", "jax.scipy.sparse.")


def costly_to_recompute(model: "StaticUseView", value: cst.CSTNode, scope: "Scope") -> bool:
    """`value` runs a sort, search, factorisation or solve (a norm is a reduction: not costly)."""
    for n in walk(value):
        if isinstance(n, cst.Call):
            qn = model.qn(n.func, scope)
            if qn is not None and (qn in COSTLY or qn.startswith(COSTLY_PREFIXES)) and \
                    qn not in ("jax.numpy.linalg.norm", "jax.numpy.linalg.vector_norm"):
                return True
    return False
