"""Purity and cost of expressions, through the module's own functions: whether a fix may evaluate
an expression twice, move it or drop it (`Purity`), and whether XLA recomputes it cheaply."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import libcst as cst

from jaxfuse_lint.codemods._lookups import is_docstring
from jaxfuse_lint.model.api import CALLBACKS, JNP_CREATORS, JNP_ELEMENTWISE, STATIC_ATTRIBUTES
from jaxfuse_lint.model.scopes import Function, Scope

if TYPE_CHECKING:
    from jaxfuse_lint.model import SemanticModel


# jax functions that are cheap to recompute: array creation, elementwise math, layout changes.
CHEAP_JAX = JNP_CREATORS | JNP_ELEMENTWISE | frozenset(
    "jax.numpy." + n
    for n in (
        "stack concatenate hstack vstack dstack column_stack reshape ravel transpose moveaxis swapaxes "
        "expand_dims squeeze broadcast_to broadcast_arrays atleast_1d atleast_2d atleast_3d tile repeat "
        "outer flip fliplr flipud roll where select clip shape ndim size result_type float32 float64 "
        "int32 int64 complex64 bool_ pi e inf nan newaxis astype"
    ).split()
) | frozenset({"jax.lax.broadcast_in_dim", "jax.lax.convert_element_type", "jax.lax.select", "jax.lax.div",
               "jax.lax.add", "jax.lax.mul", "jax.lax.sub", "jax.lax.rem", "jax.lax.max", "jax.lax.min"})

# jax functions that read their array argument only for its shape and dtype.
SHAPE_ONLY_JAX = frozenset(
    "jax.numpy." + n for n in "zeros_like ones_like empty_like shape ndim size result_type".split()
)

# Array methods that are pure; the first set is also cheap.
CHEAP_METHODS = frozenset(
    "reshape astype transpose squeeze swapaxes ravel flatten conj conjugate copy clip round".split()
)
PURE_METHODS = CHEAP_METHODS | frozenset(
    "sum mean max min prod std var argmax argmin cumsum cumprod dot any all sort argsort take".split()
)
VIEW_ATTRIBUTES = frozenset({"T", "mT", "real", "imag"})

_PURE_BUILTINS = frozenset({
    "builtins.len", "builtins.int", "builtins.float", "builtins.bool", "builtins.complex", "builtins.abs",
    "builtins.min", "builtins.max", "builtins.round", "builtins.range", "builtins.tuple", "builtins.list",
    "builtins.divmod", "builtins.pow", "builtins.sum", "builtins.isinstance",
})
_IMPURE_JAX_PREFIXES = ("jax.debug", "jax.experimental.io_callback", "jax.experimental.host_callback")


@dataclass
class ExprInfo:
    """What evaluating an expression involves.

    pure: no side effects (may be evaluated twice, moved, or dropped).
    cheap: only array creation, elementwise arithmetic and layout (no FFT, matmul,
        reduction or random draw) — what XLA recomputes inside a fused kernel.
    value: free names whose *values* are read. static: free names read only for
        their static facts (`.shape`, `.ndim`, `.dtype`, `.size`, `len`).
    closure: a called local function reads a non-module value of its own.
    """

    pure: bool = True
    cheap: bool = True
    value: set[str] = field(default_factory=set)
    static: set[str] = field(default_factory=set)
    closure: bool = False

    def merge(self, other: "ExprInfo") -> "ExprInfo":
        self.pure &= other.pure
        self.cheap &= other.cheap
        self.value |= other.value
        self.static |= other.static
        self.closure |= other.closure
        return self

    def as_static(self) -> "ExprInfo":
        return ExprInfo(self.pure, self.cheap, set(), self.value | self.static, self.closure)


IMPURE = ExprInfo(pure=False, cheap=False)


@dataclass
class FunctionSummary:
    pure: bool
    cheap: bool
    value_params: set[str]  # parameters whose values (not only shapes) are read
    closure: bool  # reads a value of an enclosing function


class Purity:
    """Purity, cost and value dependencies of expressions, through the module's own functions."""

    MAX_DEPTH = 12

    def __init__(self, model: "SemanticModel") -> None:
        self.model = model
        self._summaries: dict[int, FunctionSummary | None] = {}

    @classmethod
    def of(cls, model: "SemanticModel") -> "Purity":
        cached = getattr(model, "_jf_purity", None)
        if cached is None:
            cached = cls(model)
            model._jf_purity = cached  # type: ignore[attr-defined]
        return cached

    # -- expressions ---------------------------------------------------------------------------
    def info(self, e: cst.CSTNode, scope: Scope, depth: int = 0) -> ExprInfo:
        if depth > 60:
            return ExprInfo(False, False)
        d = depth + 1
        m = self.model
        if isinstance(e, (cst.Integer, cst.Float, cst.Imaginary, cst.SimpleString, cst.ConcatenatedString,
                          cst.Ellipsis)):
            return ExprInfo()
        if isinstance(e, cst.Name):
            if e.value in ("True", "False", "None"):
                return ExprInfo()
            return ExprInfo(value={e.value})
        if isinstance(e, cst.Attribute):
            if m.qn(e, scope) is not None:  # jnp.pi, np.float32: a module constant
                return ExprInfo(static={_root(e)})
            base = self.info(e.value, scope, d)
            if e.attr.value in STATIC_ATTRIBUTES:
                return base.as_static()
            return base
        if isinstance(e, cst.Subscript):
            out = self.info(e.value, scope, d)
            for el in e.slice:
                s = el.slice
                if isinstance(s, cst.Index):
                    out.merge(self.info(s.value, scope, d))
                else:
                    for part in (s.lower, s.upper, s.step):
                        if part is not None:
                            out.merge(self.info(part, scope, d))
            return out
        if isinstance(e, cst.UnaryOperation):
            return self.info(e.expression, scope, d)
        if isinstance(e, cst.BinaryOperation):
            out = self.info(e.left, scope, d).merge(self.info(e.right, scope, d))
            if isinstance(e.operator, cst.MatrixMultiply):
                out.cheap = False
            return out
        if isinstance(e, cst.BooleanOperation):
            return self.info(e.left, scope, d).merge(self.info(e.right, scope, d))
        if isinstance(e, cst.Comparison):
            out = self.info(e.left, scope, d)
            for c in e.comparisons:
                out.merge(self.info(c.comparator, scope, d))
            return out
        if isinstance(e, cst.IfExp):
            return self.info(e.test, scope, d).merge(self.info(e.body, scope, d)).merge(self.info(e.orelse, scope, d))
        if isinstance(e, (cst.Tuple, cst.List)):
            out = ExprInfo()
            for el in e.elements:
                if isinstance(el, cst.StarredElement):
                    out.merge(self.info(el.value, scope, d))
                else:
                    out.merge(self.info(el.value, scope, d))
            return out
        if isinstance(e, cst.Call):
            return self._call(e, scope, d)
        return ExprInfo(False, False)

    def _args(self, e: cst.Call, scope: Scope, depth: int) -> ExprInfo:
        out = ExprInfo()
        for a in e.args:
            out.merge(self.info(a.value, scope, depth))
        return out

    def _call(self, e: cst.Call, scope: Scope, depth: int) -> ExprInfo:
        m = self.model
        if any(a.star for a in e.args):
            return ExprInfo(False, False)
        qn = m.qn(e.func, scope)
        if qn is not None:
            root = ExprInfo(static={_root(e.func)}) if _root(e.func) else ExprInfo()
            if qn == "builtins.len":
                return self._args(e, scope, depth).as_static().merge(root)
            if qn in _PURE_BUILTINS:
                return self._args(e, scope, depth).merge(root)
            if qn.startswith("builtins."):
                return ExprInfo(False, False)
            if qn.startswith("jax.") or qn.startswith("numpy.") or qn.startswith("math."):
                if qn in CALLBACKS or qn.startswith(_IMPURE_JAX_PREFIXES) or qn.startswith("numpy.random."):
                    return ExprInfo(False, False)
                if any(isinstance(a.value, cst.Lambda) for a in e.args):
                    return ExprInfo(False, False)
                if qn in SHAPE_ONLY_JAX:
                    args = self._args(e, scope, depth).as_static()
                elif qn in ("jax.numpy.full_like",):
                    first = e.args[0].value if e.args else None
                    args = ExprInfo()
                    for a in e.args:
                        part = self.info(a.value, scope, depth)
                        args.merge(part.as_static() if a.value is first else part)
                else:
                    args = self._args(e, scope, depth)
                args.merge(root)
                if qn.startswith("jax.") and qn not in CHEAP_JAX:
                    args.cheap = False
                return args
            return ExprInfo(False, False)
        if isinstance(e.func, cst.Name):
            fn = m.function_named(e.func.value, scope)
            if fn is None or not isinstance(fn.node, cst.FunctionDef):
                return ExprInfo(False, False)
            summary = self.summary(fn, depth)
            if summary is None or not summary.pure:
                return ExprInfo(False, False)
            out = ExprInfo(cheap=summary.cheap, closure=summary.closure, static={e.func.value})
            for a in e.args:
                if a.keyword is not None:
                    pname = a.keyword.value
                else:
                    pname = None
                    idx = [x for x in e.args if x.keyword is None].index(a)
                    params = fn.params
                    if idx < len(params) and params[idx] not in fn.star_params:
                        pname = params[idx]
                part = self.info(a.value, scope, depth)
                if pname is None or pname not in fn.params:
                    return ExprInfo(False, False)
                out.merge(part if pname in summary.value_params else part.as_static())
            return out
        if isinstance(e.func, cst.Attribute):
            method = e.func.attr.value
            if method in PURE_METHODS:
                out = self.info(e.func.value, scope, depth).merge(self._args(e, scope, depth))
                if method not in CHEAP_METHODS:
                    out.cheap = False
                return out
        return ExprInfo(False, False)

    # -- the module's functions ------------------------------------------------------------------
    def summary(self, fn: Function, depth: int = 0) -> FunctionSummary | None:
        key = id(fn)
        if key in self._summaries:
            s = self._summaries[key]
            return s if s is not None else FunctionSummary(False, False, set(), False)  # recursion
        if depth > self.MAX_DEPTH:
            return FunctionSummary(False, False, set(), False)
        self._summaries[key] = None
        result = self._summarize(fn, depth)
        self._summaries[key] = result
        return result

    def _summarize(self, fn: Function, depth: int) -> FunctionSummary:
        node = fn.node
        assert isinstance(node, cst.FunctionDef)
        if node.decorators or fn.star_params or fn.globals or fn.nonlocals or fn.nested:
            return FunctionSummary(False, False, set(), False)
        exprs: list[cst.BaseExpression] = []
        assigns: list[tuple[list[str], cst.BaseExpression, bool]] = []  # targets, value, augmented
        ok = _collect_statements(node.body, exprs, assigns)
        if not ok:
            return FunctionSummary(False, False, set(), False)
        infos: dict[int, ExprInfo] = {}
        pure = cheap = True
        for ex in exprs + [v for _, v, _ in assigns]:
            info = self.info(ex, fn, depth + 1)
            infos[id(ex)] = info
            pure &= info.pure
            cheap &= info.cheap
        if not pure:
            return FunctionSummary(False, False, set(), False)
        params = set(fn.params)
        local_names = {t for ts, _, _ in assigns for t in ts}
        # Which parameters (by value) each local depends on: a flow-insensitive fixed point.
        deps: dict[str, set[str]] = {n: set() for n in local_names}
        closure = False

        def value_deps(info: ExprInfo) -> tuple[set[str], bool]:
            out: set[str] = set()
            outer = False
            for name in info.value:
                if name in params:
                    out.add(name)
                elif name in deps:
                    out |= deps[name]
                else:
                    found = self.model.lookup(name, fn)
                    if found is not None and isinstance(found[0], Function):
                        outer = True
            return out, outer or info.closure

        changed = True
        rounds = 0
        while changed and rounds < 50:
            changed = False
            rounds += 1
            for targets, value, _ in assigns:
                d, _ = value_deps(infos[id(value)])
                for t in targets:
                    if not d <= deps[t]:
                        deps[t] |= d
                        changed = True
        value_params: set[str] = set()
        for info in infos.values():
            d, outer = value_deps(info)
            value_params |= d
            closure |= outer
        return FunctionSummary(True, cheap, value_params, closure)


def _root(e: cst.BaseExpression) -> str:
    while isinstance(e, cst.Attribute):
        e = e.value
    return e.value if isinstance(e, cst.Name) else ""


def _collect_statements(block: cst.BaseSuite, exprs: list, assigns: list) -> bool:
    """The expressions and assignments of a simple function body; False if it does more."""
    if not isinstance(block, cst.IndentedBlock):
        if isinstance(block, cst.SimpleStatementSuite):
            return all(_small(s, exprs, assigns) for s in block.body)
        return False
    for i, stmt in enumerate(block.body):
        if isinstance(stmt, cst.SimpleStatementLine):
            if i == 0 and is_docstring(stmt):
                continue
            if not all(_small(s, exprs, assigns) for s in stmt.body):
                return False
        elif isinstance(stmt, cst.If):
            exprs.append(stmt.test)
            if not _collect_statements(stmt.body, exprs, assigns):
                return False
            orelse = stmt.orelse
            while orelse is not None:
                if isinstance(orelse, cst.If):
                    exprs.append(orelse.test)
                    if not _collect_statements(orelse.body, exprs, assigns):
                        return False
                    orelse = orelse.orelse
                else:
                    if not _collect_statements(orelse.body, exprs, assigns):
                        return False
                    orelse = None
        else:
            return False
    return True


def _small(s: cst.BaseSmallStatement, exprs: list, assigns: list) -> bool:
    if isinstance(s, cst.Pass):
        return True
    if isinstance(s, cst.Return):
        if s.value is not None:
            exprs.append(s.value)
        return True
    if isinstance(s, cst.Assign):
        names: list[str] = []
        for t in s.targets:
            if not _target_names(t.target, names):
                return False
        assigns.append((names, s.value, False))
        return True
    if isinstance(s, cst.AnnAssign):
        if s.value is None:
            return True
        names = []
        if not _target_names(s.target, names):
            return False
        assigns.append((names, s.value, False))
        return True
    if isinstance(s, cst.AugAssign):
        if not isinstance(s.target, cst.Name):
            return False
        assigns.append(([s.target.value], s.value, True))
        return True
    if isinstance(s, cst.Assert):
        exprs.append(s.test)
        return True
    if isinstance(s, cst.Raise):
        return True  # an error for bad input: deterministic, no state changes
    return False


def _target_names(t: cst.BaseExpression, out: list[str]) -> bool:
    if isinstance(t, cst.Name):
        out.append(t.value)
        return True
    if isinstance(t, (cst.Tuple, cst.List)):
        return all(not isinstance(el, cst.StarredElement) and _target_names(el.value, out) for el in t.elements)
    return False
