"""Statically known dtypes: what a fix needs to know to keep a program's results.

A fact about an expression is a `DTypes`: the set of dtypes it may have (a single one when
it is known exactly, several for a jaxtyping class such as `Float[...]`), or None when
nothing is known. Each `DType` is a concrete JAX dtype plus JAX's *weak type* flag: Python
scalars (`2`, `0.5`, `1j`) and values derived only from them are weakly typed and take the
dtype of their strongly typed partner (`int8_array * 2` is int8).

Sources: literals (weak), comparisons, `~`/`&`/`|`/`^` and `jnp.isnan`-like predicates
(bool), `.astype(d)`, `dtype=` arguments, `jnp` creators and their defaults (`zeros`: float,
`arange(3)`: int, `full(n, 1.0)`: weak float, `zeros_like(x)`: x's), elementwise functions
(`jnp.sin` of an int is float), reductions (`jnp.sum` of bool or a narrow int is the default
int, `jnp.mean` of an int is float32), promotion through arithmetic, jaxtyping annotations
(`Float[Array, "n"]`, `Int8[...]`, `Bool[...]`), `jnp.stack`/`concatenate`/`where`, and dtypes
recorded at run time for a function's parameters (`SemanticModel(recorded_dtypes=...)`).

Promotion follows JAX's type promotion lattice (`jax._src.dtypes._type_promotion_lattice`,
standard mode), encoded here: `check` never imports jax. The analysis runs for one x64
setting at a time (`DTypeAnalysis(model, x64=False)` is JAX's default; with x64 the default
int/float/complex are 64-bit and explicit 64-bit dtypes are kept). A codemod that must be
right under both settings asks both.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Iterable, Mapping

import libcst as cst

from jaxfuse_lint.model.traced import keyword, positional

if TYPE_CHECKING:
    from jaxfuse_lint.model.scopes import Function, Scope
    from jaxfuse_lint.model.view import ModelView

BOOL = "bool"
SIGNED = ("int8", "int16", "int32", "int64")
UNSIGNED = ("uint8", "uint16", "uint32", "uint64")
FLOATS = ("bfloat16", "float16", "float32", "float64")
COMPLEX = ("complex64", "complex128")
ALL_NAMES = (BOOL,) + SIGNED + UNSIGNED + FLOATS + COMPLEX

NARROW_INTS = frozenset({"int8", "int16", "uint8", "uint16"})
NARROW_FLOATS = frozenset({"float16", "bfloat16"})

# Without x64, 64-bit dtypes do not exist: asking for one gives its 32-bit sibling.
_X32 = {"int64": "int32", "uint64": "uint32", "float64": "float32", "complex128": "complex64"}


def kind_of(name: str) -> str:
    """"bool" | "int" | "uint" | "float" | "complex"."""
    if name == BOOL:
        return "bool"
    if name in SIGNED:
        return "int"
    if name in UNSIGNED:
        return "uint"
    if name in FLOATS:
        return "float"
    return "complex"


def default_name(kind: str, x64: bool) -> str:
    return {"int": "int64" if x64 else "int32", "uint": "uint64" if x64 else "uint32",
            "float": "float64" if x64 else "float32", "complex": "complex128" if x64 else "complex64",
            "bool": BOOL}[kind]


def canonical(name: str, x64: bool) -> str:
    return name if x64 else _X32.get(name, name)


@dataclass(frozen=True, order=True)
class DType:
    name: str
    weak: bool = False

    @property
    def kind(self) -> str:
        return kind_of(self.name)

    @property
    def dtype_class(self) -> str:
        """The classes fixes care about: bool, narrow-int, int, narrow-float, float, complex."""
        k = self.kind
        if k == "bool":
            return "bool"
        if k in ("int", "uint"):
            return "narrow-int" if self.name in NARROW_INTS else "int"
        if k == "float":
            return "narrow-float" if self.name in NARROW_FLOATS else "float"
        return "complex"

    def __str__(self) -> str:
        return f"weak {self.name}" if self.weak else self.name


# A fact: the dtypes an expression may have (never empty).
DTypes = frozenset  # frozenset[DType]


def describe(fact: "frozenset[DType] | None") -> str:
    if fact is None:
        return "unknown"
    names = sorted({str(d) for d in fact})
    return names[0] if len(names) == 1 else "one of " + ", ".join(names)


def only(fact: "frozenset[DType] | None", predicate) -> bool:
    """Every dtype the expression may have satisfies `predicate` (False when unknown)."""
    return fact is not None and all(predicate(d) for d in fact)


# -- JAX's promotion lattice (standard mode) ------------------------------------------------------
# Nodes: concrete dtype names and the weak Python types "i*", "f*", "c*".
def _lattice(x64: bool) -> dict[str, list[str]]:
    out = {
        "bool": ["i*"],
        "i*": ["uint8", "int8"],
        "uint8": ["int16", "uint16"], "uint16": ["int32", "uint32"], "uint32": ["int64", "uint64"],
        "uint64": ["f*"],
        "int8": ["int16"], "int16": ["int32"], "int32": ["int64"], "int64": ["f*"],
        "f*": ["bfloat16", "float16", "c*"],
        "bfloat16": ["float32"], "float16": ["float32"], "float32": ["float64", "complex64"],
        "float64": ["complex128"],
        "c*": ["complex64"], "complex64": ["complex128"], "complex128": [],
    }
    if not x64:
        # JAX avoids forming a 64-bit type from 32-bit inputs: uint32 x int32 -> int32.
        out["uint32"] = ["int32", "uint64"]
    return out


@lru_cache(maxsize=2)
def _upper_bounds(x64: bool) -> dict[str, frozenset[str]]:
    lattice = _lattice(x64)
    ubs: dict[str, set[str]] = {n: {n} for n in lattice}
    for n in lattice:
        while True:
            more = set().union(*(lattice[b] for b in ubs[n]))
            if more <= ubs[n]:
                break
            ubs[n] |= more
    return {n: frozenset(s) for n, s in ubs.items()}


def _node(d: DType) -> str:
    if d.weak and d.kind != "bool":
        return {"int": "i*", "uint": "i*", "float": "f*", "complex": "c*"}[d.kind]
    return d.name


@lru_cache(maxsize=4096)
def promote_pair(a: DType, b: DType, x64: bool) -> DType | None:
    """JAX's result dtype of a binary operation on a and b (None: no promotion path)."""
    if a == b:
        return a
    if a.name == b.name:
        return DType(a.name, a.weak and b.weak)
    na, nb = _node(a), _node(b)
    ub = _upper_bounds(x64)
    common = ub[na] & ub[nb]
    lub = ({na, nb} & common) or {c for c in common if common <= ub[c]}
    if len(lub) != 1:
        return None
    r = lub.pop()
    if r.endswith("*"):
        kind = {"i*": "int", "f*": "float", "c*": "complex"}[r]
        return DType(default_name(kind, x64), True)
    return DType(canonical(r, x64))


def promote(facts: Iterable["frozenset[DType] | None"], x64: bool) -> "frozenset[DType] | None":
    out: frozenset[DType] | None = None
    first = True
    for f in facts:
        if f is None:
            return None
        if first:
            out, first = f, False
            continue
        combined = set()
        for a in out:  # type: ignore[union-attr]
            for b in f:
                r = promote_pair(a, b, x64)
                if r is None:
                    return None
                combined.add(r)
        if len(combined) > 32:
            return None
        out = frozenset(combined)
    return out


def any_dtype(x64: bool) -> frozenset[DType]:
    """What an expression of unknown dtype may be: any array dtype, strong or weak."""
    strong = {DType(canonical(n, x64)) for n in ALL_NAMES}
    weak = {DType(default_name(k, x64), True) for k in ("int", "float", "complex")}
    return frozenset(strong | weak)


def promote_partly_known(facts: list["frozenset[DType] | None"], x64: bool) -> "frozenset[DType] | None":
    """Promotion where some operands are unknown: they may be anything, but a known partner still
    bounds the result (`int32_array * x` is at least int32 whatever x is). None when nothing is known."""
    if all(f is None for f in facts):
        return None
    anything = any_dtype(x64)
    return promote([anything if f is None else f for f in facts], x64)


def _map(fact, fn) -> "frozenset[DType] | None":
    if fact is None:
        return None
    out = set()
    for d in fact:
        r = fn(d)
        if r is None:
            return None
        out.add(r)
    return frozenset(out)


# -- per-operation result dtypes -----------------------------------------------------------------
def to_inexact(d: DType, x64: bool) -> DType:
    """jnp.sin & co.: bool/int arguments compute in the default float (weak stays weak)."""
    if d.kind in ("bool", "int", "uint"):
        return DType(default_name("float", x64), d.weak)
    return d


def sum_dtype(d: DType, x64: bool) -> DType:
    """`jnp.sum`/`jnp.prod`/`cumsum`: bool and narrow ints accumulate in the default (u)int."""
    if d.kind == "bool" or (d.kind == "int" and _bits(d.name) < _bits(default_name("int", x64))):
        return DType(default_name("int", x64), d.weak)
    if d.kind == "uint" and _bits(d.name) < _bits(default_name("uint", x64)):
        return DType(default_name("uint", x64), d.weak)
    return d


def cumulative_dtype(d: DType, x64: bool) -> DType:
    """`jnp.cumsum`/`cumprod`: only bool is promoted (to the default int); ints keep their width."""
    return DType(default_name("int", x64), d.weak) if d.kind == "bool" else d


def mean_dtype(d: DType, x64: bool) -> DType:
    """`jnp.mean`: jax's `_dtype_to_inexact` table (int32 -> float32 even with x64)."""
    if d.kind in ("bool", "int", "uint"):
        return DType(canonical("float64" if d.name in ("int64", "uint64") else "float32", x64), d.weak)
    return d


def real_dtype(d: DType) -> DType:
    if d.kind == "complex":
        return DType("float32" if d.name == "complex64" else "float64", d.weak)
    return d


def _bits(name: str) -> int:
    if name == BOOL:
        return 1
    digits = "".join(c for c in name if c.isdigit())
    return int(digits)


def fact_from_records(recorded, x64: bool) -> "frozenset[DType] | None":
    """The dtypes a run recorded for a parameter: a dtype name (`"float16"`), or the runtime
    profile's argument records (`[{"dtype": "float32", "weak_type": false}, ...]`, one per
    signature: their union). None when a record has no dtype the model knows."""
    if isinstance(recorded, str):
        recorded = [{"dtype": recorded}]
    out = set()
    for record in recorded:
        name = record.get("dtype") if isinstance(record, dict) else None
        if name not in ALL_NAMES:
            return None
        out.add(DType(canonical(name, x64), bool(record.get("weak_type", False))))
    return frozenset(out) or None


# jaxtyping's dtype classes (float8 variants left out: the model does not know them).
JAXTYPING: dict[str, tuple[str, ...]] = {
    "Bool": (BOOL,),
    "Float": FLOATS, "Float16": ("float16",), "BFloat16": ("bfloat16",), "Float32": ("float32",),
    "Float64": ("float64",),
    "Int": SIGNED, "Int8": ("int8",), "Int16": ("int16",), "Int32": ("int32",), "Int64": ("int64",),
    "UInt": UNSIGNED, "UInt8": ("uint8",), "UInt16": ("uint16",), "UInt32": ("uint32",), "UInt64": ("uint64",),
    "Integer": SIGNED + UNSIGNED,
    "Complex": COMPLEX, "Complex64": ("complex64",), "Complex128": ("complex128",),
    "Inexact": FLOATS + COMPLEX, "Real": SIGNED + UNSIGNED + FLOATS, "Num": SIGNED + UNSIGNED + FLOATS + COMPLEX,
}

# Spellings of a dtype in source: `jnp.float32`, `np.int8`, `"bfloat16"`, `jnp.bool_`, `float`.
_DTYPE_ALIASES = {
    "bool_": BOOL, "bool": BOOL, "float_": "float64", "int_": "int64", "uint": "uint64", "complex_": "complex128",
    "half": "float16", "single": "float32", "double": "float64", "csingle": "complex64", "cdouble": "complex128",
}
_PYTHON_TYPES = {"builtins.int": "int", "builtins.float": "float", "builtins.complex": "complex",
                 "builtins.bool": "bool"}

_INEXACT_FUNCS = frozenset(
    "sin cos tan arcsin arccos arctan sinh cosh tanh arcsinh arccosh arctanh exp exp2 expm1 log log2 log10 "
    "log1p sqrt cbrt rsqrt reciprocal sinc deg2rad rad2deg degrees radians logaddexp logaddexp2 arctan2 hypot "
    "true_divide divide float_power".split())
_SAME_FUNCS = frozenset(
    "negative positive square abs absolute sign floor ceil rint round trunc fix conj conjugate clip "
    "add subtract multiply maximum minimum fmax fmin power mod remainder fmod floor_divide copysign "
    "bitwise_and bitwise_or bitwise_xor bitwise_not invert left_shift right_shift "
    "reshape transpose swapaxes moveaxis expand_dims squeeze flip fliplr flipud roll ravel rot90 "
    "broadcast_to tile repeat atleast_1d atleast_2d atleast_3d copy sort "
    "max min amax amin ptp nanmax nanmin tril triu diag diagonal take".split())
_BOOL_FUNCS = frozenset(
    "isnan isinf isfinite isneginf isposinf signbit logical_and logical_or logical_not logical_xor greater "
    "greater_equal less less_equal equal not_equal any all isclose array_equal allclose".split())
_SUM_FUNCS = frozenset("sum prod nansum nanprod".split())
_CUMULATIVE = frozenset("cumsum cumprod".split())
_MEAN_FUNCS = frozenset("mean nanmean average".split())
_REAL_FUNCS = frozenset({"real", "imag", "angle", "linalg.norm"})
_STACK_FUNCS = frozenset("stack concatenate vstack hstack dstack column_stack".split())
_ARRAY_METHODS_SAME = frozenset(
    "reshape ravel flatten transpose squeeze swapaxes copy clip round conj conjugate max min take repeat "
    "__neg__ __abs__".split())
# Where a jnp function takes its dtype positionally (`jnp.zeros((3,), jnp.int8)`).
_POSITIONAL_DTYPE = {"jax.numpy." + name: index for name, index in {
    "zeros": 1, "ones": 1, "empty": 1, "full": 2, "identity": 1, "eye": 3, "arange": 3, "linspace": 5,
    "array": 1, "asarray": 1, "zeros_like": 1, "ones_like": 1, "empty_like": 1, "full_like": 2,
    "sum": 2, "prod": 2, "mean": 2, "cumsum": 2, "cumprod": 2, "nansum": 2, "nanmean": 2, "nanprod": 2,
}.items()}
_BINOP_OPS = (cst.Add, cst.Subtract, cst.Multiply, cst.Power, cst.FloorDivide, cst.Modulo, cst.BitAnd,
              cst.BitOr, cst.BitXor, cst.LeftShift, cst.RightShift, cst.MatrixMultiply)


class DTypeAnalysis:
    MAX_DEPTH = 30

    def __init__(self, model: "ModelView", x64: bool = False,
                 recorded: Mapping[str, Mapping[str, str]] | None = None) -> None:
        self.model = model
        self.x64 = x64
        # Dtypes recorded at run time: {function display name: {parameter: a dtype name, or the runtime
        # profile's argument records [{"dtype": ..., "weak_type": ...}] (see fact_from_records)}}.
        self.recorded = recorded or {}
        self._memo: dict[tuple[int, int], frozenset[DType] | None] = {}
        self._active: set[tuple[int, int]] = set()

    def _one(self, name: str, weak: bool = False) -> frozenset[DType]:
        return frozenset({DType(canonical(name, self.x64), weak)})

    def _default(self, kind: str, weak: bool = False) -> frozenset[DType]:
        return frozenset({DType(default_name(kind, self.x64), weak)})

    def dtype(self, e: cst.CSTNode, scope: "Scope", depth: int = 0) -> "frozenset[DType] | None":
        key = (id(e), id(scope))
        if key in self._memo:
            return self._memo[key]
        if key in self._active or depth > self.MAX_DEPTH:
            return None
        self._active.add(key)
        try:
            result = self._dtype(e, scope, depth + 1)
        finally:
            self._active.discard(key)
        self._memo[key] = result
        return result

    # -- expressions ---------------------------------------------------------------------------
    def _dtype(self, e: cst.CSTNode, scope: "Scope", depth: int) -> "frozenset[DType] | None":
        if isinstance(e, cst.Integer):
            return self._default("int", weak=True)
        if isinstance(e, cst.Float):
            return self._default("float", weak=True)
        if isinstance(e, cst.Imaginary):
            return self._default("complex", weak=True)
        if isinstance(e, cst.Name):
            if e.value in ("True", "False"):
                return self._one(BOOL)
            return self._name(e, scope, depth)
        if isinstance(e, cst.Comparison):
            return self._one(BOOL)
        if isinstance(e, cst.UnaryOperation):
            inner = self.dtype(e.expression, scope, depth)
            if isinstance(e.operator, cst.Not):
                return None  # Python truthiness: not an array operation
            if isinstance(e.operator, cst.Minus) and inner is not None and any(d.kind == "bool" for d in inner):
                return None  # jnp raises for negating a bool
            return inner
        if isinstance(e, cst.BinaryOperation):
            return self._binop(e, scope, depth)
        if isinstance(e, cst.Subscript):
            return self.dtype(e.value, scope, depth)
        if isinstance(e, cst.Attribute):
            attr = e.attr.value
            if attr in ("T", "mT"):
                return self.dtype(e.value, scope, depth)
            if attr in ("real", "imag"):
                return _map(self.dtype(e.value, scope, depth), real_dtype)
            return None
        if isinstance(e, cst.Call):
            return self._call(e, scope, depth)
        if isinstance(e, cst.IfExp):
            a, b = self.dtype(e.body, scope, depth), self.dtype(e.orelse, scope, depth)
            return a | b if a is not None and b is not None else None
        return None

    def _binop(self, e: cst.BinaryOperation, scope, depth) -> "frozenset[DType] | None":
        left, right = self.dtype(e.left, scope, depth), self.dtype(e.right, scope, depth)
        if isinstance(e.operator, cst.Divide):
            return _map(promote_partly_known([left, right], self.x64), lambda d: to_inexact(d, self.x64))
        if not isinstance(e.operator, _BINOP_OPS):
            return None
        # Python scalars on both sides stay Python numbers; their dtype is still the weak one.
        out = promote_partly_known([left, right], self.x64)
        if out is None:
            return None
        # Dtypes for which the operation raises are not inputs the program accepts: leave them out.
        if isinstance(e.operator, cst.Subtract):
            out = frozenset(d for d in out if d.kind != "bool")
        if isinstance(e.operator, (cst.BitAnd, cst.BitOr, cst.BitXor, cst.LeftShift, cst.RightShift)):
            out = frozenset(d for d in out if d.kind not in ("float", "complex"))
        return out or None

    # -- names -----------------------------------------------------------------------------------
    def _name(self, e: cst.Name, scope, depth) -> "frozenset[DType] | None":
        from jaxfuse_lint.model.scopes import Function

        found = self.model.resolver.lookup(e.value, scope)
        if found is None:
            return None
        owner, bindings = found
        facts = []
        for b in bindings:
            if b.kind == "param":
                facts.append(self.param_dtype(owner, b.name) if isinstance(owner, Function) else None)
            elif b.kind in ("assign", "annassign", "walrus") and b.value is not None and b.index is None:
                fact = self.dtype(b.value, owner, depth)
                if b.kind == "annassign" and fact is None:
                    node = b.node
                    ann = getattr(node, "annotation", None)
                    fact = self.annotation_dtype(ann.annotation) if ann is not None else None
                facts.append(fact)
            elif b.kind == "assign" and b.index is not None and isinstance(b.value, (cst.Tuple, cst.List)) \
                    and b.index < len(b.value.elements):
                facts.append(self.dtype(b.value.elements[b.index].value, owner, depth))
            elif b.kind == "augassign":
                facts.append(None)
            else:
                facts.append(None)
        if not facts or any(f is None for f in facts):
            return None
        out: frozenset[DType] = frozenset()
        for f in facts:
            out |= f  # type: ignore[operator]
        return out

    def param_dtype(self, fn: "Function", name: str) -> "frozenset[DType] | None":
        recorded = self.recorded.get(fn.display_name, {}).get(name)
        if recorded is not None:
            fact = fact_from_records(recorded, self.x64)
            if fact is not None:
                return fact
        p = fn.param_nodes.get(name)
        if p is None or p.annotation is None:
            return None
        return self.annotation_dtype(p.annotation.annotation)

    def annotation_dtype(self, ann: cst.BaseExpression | None) -> "frozenset[DType] | None":
        """`Float[Array, "n 3"]` -> the float dtypes; `Int8[...]` -> int8; anything else unknown."""
        if not isinstance(ann, cst.Subscript):
            return None
        head = ann.value.attr.value if isinstance(ann.value, cst.Attribute) else (
            ann.value.value if isinstance(ann.value, cst.Name) else "")
        names = JAXTYPING.get(head)
        if names is None or len(ann.slice) != 2:
            return None
        return frozenset(DType(canonical(n, self.x64)) for n in names)

    # -- calls ---------------------------------------------------------------------------------
    def dtype_argument(self, e: cst.BaseExpression | None, scope) -> "frozenset[DType] | None":
        """A dtype written in source: `jnp.float32`, `np.int8`, `'bfloat16'`, `float`, `x.dtype`."""
        if e is None:
            return None
        if isinstance(e, cst.SimpleString):
            v = e.evaluated_value
            if isinstance(v, str):
                name = _DTYPE_ALIASES.get(v, v)
                return self._one(name) if name in ALL_NAMES else None
            return None
        if isinstance(e, cst.Attribute) and e.attr.value == "dtype":
            fact = self.dtype(e.value, scope)
            return _map(fact, lambda d: DType(d.name)) if fact is not None else None
        qn = self.model.qn(e, scope)
        if qn is None:
            return None
        if qn in _PYTHON_TYPES:
            return self._default(_PYTHON_TYPES[qn])
        for prefix in ("jax.numpy.", "numpy."):
            if qn.startswith(prefix):
                name = qn[len(prefix):]
                name = _DTYPE_ALIASES.get(name, name)
                if name in ALL_NAMES:
                    return self._one(name)
        if qn in ("jax.numpy.bfloat16", "ml_dtypes.bfloat16"):
            return self._one("bfloat16")
        return None

    def _call(self, e: cst.Call, scope, depth) -> "frozenset[DType] | None":
        m = self.model
        qn = m.qn(e.func, scope)
        if qn is None and isinstance(e.func, cst.Attribute):
            return self._method(e, scope, depth)
        if qn is None:
            if isinstance(e.func, cst.Name):
                callee = m.function_named(e.func.value, scope)
                if callee is not None and callee.returns:
                    facts = [self.dtype(r, callee, depth) for r in callee.returns]
                    if facts and all(f is not None and f == facts[0] for f in facts):
                        return facts[0]
            return None
        explicit = keyword(e, "dtype")
        if explicit is None and qn in _POSITIONAL_DTYPE:
            explicit = positional(e, _POSITIONAL_DTYPE[qn])
        if qn.startswith("jax.numpy.") or qn.startswith("jax.lax."):
            if explicit is not None and not (isinstance(explicit, cst.Name) and explicit.value == "None"):
                name = qn.rsplit(".", 1)[-1]
                if name in _BOOL_FUNCS:
                    return self._one(BOOL)
                return self.dtype_argument(explicit, scope)
        if qn in ("jax.lax.convert_element_type", "jax.numpy.astype"):
            return self.dtype_argument(positional(e, 1) or keyword(e, "new_dtype"), scope)
        if qn.startswith("jax.lax."):
            return self._lax(e, qn[len("jax.lax."):], scope, depth)
        if not qn.startswith("jax.numpy."):
            return None
        name = qn[len("jax.numpy."):]
        first = positional(e, 0)
        arg0 = self.dtype(first, scope, depth) if first is not None else None
        if name in ("zeros", "ones", "empty", "eye", "identity", "linspace", "logspace", "geomspace", "hanning",
                    "hamming", "blackman", "bartlett", "kaiser", "tri", "fft.fftfreq", "fft.rfftfreq"):
            return self._default("float")
        if name in ("zeros_like", "ones_like", "empty_like", "full_like"):
            if name == "full_like" and positional(e, 1) is None and keyword(e, "fill_value") is None:
                return None
            return arg0
        if name == "full":
            fill = positional(e, 1) or keyword(e, "fill_value")
            return self.dtype(fill, scope, depth) if fill is not None else None
        if name == "arange":
            facts = [self.dtype(a.value, scope, depth) for a in e.args if a.keyword is None]
            if not facts or any(f is None for f in facts):
                return None
            if all(all(d.kind in ("int", "bool") and d.weak for d in f) for f in facts):  # type: ignore[union-attr]
                return self._default("int")
            joined = promote(facts, self.x64)
            return _map(joined, lambda d: DType(d.name)) if joined is not None else None
        if name in ("indices",):
            return self._default("int")
        if name in ("array", "asarray"):
            if isinstance(first, (cst.List, cst.Tuple)):
                facts = [self.dtype(el.value, scope, depth) for el in first.elements
                         if not isinstance(el, cst.StarredElement)]
                if not facts or len(facts) != len(first.elements):
                    return None
                joined = promote(facts, self.x64)
                return _map(joined, lambda d: DType(d.name)) if joined is not None else None
            return arg0
        if name in _STACK_FUNCS:
            if isinstance(first, (cst.List, cst.Tuple)) and first.elements and not any(
                    isinstance(el, cst.StarredElement) for el in first.elements):
                facts = [self.dtype(el.value, scope, depth) for el in first.elements]
                return promote(facts, self.x64)  # weak types stay weak: jnp.stack([1.0, 2.0]) is weak
            return None
        if name == "where":
            if len(e.args) != 3:
                return None
            return promote_partly_known([self.dtype(positional(e, 1), scope, depth),
                                         self.dtype(positional(e, 2), scope, depth)], self.x64)
        if name in _BOOL_FUNCS:
            return self._one(BOOL)
        if name in ("argmax", "argmin", "argsort", "nonzero", "searchsorted", "count_nonzero"):
            return self._default("int")
        if name in _SUM_FUNCS:
            return _map(arg0, lambda d: sum_dtype(d, self.x64))
        if name in _CUMULATIVE:
            return _map(arg0, lambda d: cumulative_dtype(d, self.x64))
        if name in _MEAN_FUNCS:
            return _map(arg0, lambda d: mean_dtype(d, self.x64))
        if name in ("real", "imag", "abs", "absolute"):
            return _map(arg0, real_dtype)
        if name == "linalg.norm":
            return _map(_map(arg0, lambda d: to_inexact(d, self.x64)), real_dtype)
        if name in _INEXACT_FUNCS:
            args = [self.dtype(a.value, scope, depth) for a in e.args if a.keyword is None]
            return _map(promote_partly_known(args, self.x64), lambda d: to_inexact(d, self.x64)) if args else None
        if name in ("dot", "matmul", "vdot", "inner", "outer", "kron", "cross"):
            args = [self.dtype(a.value, scope, depth) for a in e.args if a.keyword is None]
            return promote(args, self.x64) if args else None
        if name in _SAME_FUNCS:
            args = [self.dtype(a.value, scope, depth) for a in e.args if a.keyword is None]
            if name in ("reshape", "transpose", "swapaxes", "moveaxis", "expand_dims", "squeeze", "flip", "roll",
                        "broadcast_to", "tile", "repeat", "rot90", "take", "diag", "diagonal", "tril", "triu",
                        "max", "min", "amax", "amin", "ptp", "sort", "clip", "round"):
                args = args[:1]
            return promote_partly_known(args, self.x64) if args else None
        return None

    def _lax(self, e: cst.Call, name: str, scope, depth) -> "frozenset[DType] | None":
        if name in ("add", "sub", "mul", "max", "min", "div", "rem", "pow"):
            args = [self.dtype(a.value, scope, depth) for a in e.args if a.keyword is None]
            if any(f is None for f in args) or not args:
                return None
            # lax does not promote: both operands must already agree.
            if len(set(args)) == 1:
                return args[0]
            return None
        if name in ("sin", "cos", "exp", "log", "sqrt", "tanh", "neg", "abs"):
            return self.dtype(positional(e, 0), scope, depth) if positional(e, 0) is not None else None
        return None

    def _method(self, e: cst.Call, scope, depth) -> "frozenset[DType] | None":
        attr = e.func.attr.value  # type: ignore[union-attr]
        base = e.func.value  # type: ignore[union-attr]
        if attr == "astype":
            return self.dtype_argument(positional(e, 0) or keyword(e, "dtype"), scope)
        if attr in ("sum", "prod", "cumsum", "cumprod", "mean"):
            explicit = keyword(e, "dtype") or positional(e, 1)  # .sum(axis, dtype)
            if explicit is not None and not (isinstance(explicit, cst.Name) and explicit.value == "None"):
                return self.dtype_argument(explicit, scope)
        inner = self.dtype(base, scope, depth)
        if attr in ("sum", "prod"):
            return _map(inner, lambda d: sum_dtype(d, self.x64))
        if attr in _CUMULATIVE:
            return _map(inner, lambda d: cumulative_dtype(d, self.x64))
        if attr == "mean":
            return _map(inner, lambda d: mean_dtype(d, self.x64))
        if attr in ("any", "all"):
            return self._one(BOOL)
        if attr in ("argmax", "argmin", "argsort"):
            return self._default("int")
        if attr in _ARRAY_METHODS_SAME:
            return inner
        return None


__all__ = [
    "DType", "DTypeAnalysis", "DTypes", "ALL_NAMES", "NARROW_INTS", "NARROW_FLOATS", "describe", "only",
    "promote", "promote_pair", "sum_dtype", "mean_dtype", "to_inexact", "real_dtype", "kind_of", "canonical",
]
