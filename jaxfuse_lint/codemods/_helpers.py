"""What the codemods share: building nodes, naming, imports, purity, and the libcst command base.

Detection lives in `jaxfuse_lint/`; a codemod gets a rule's Violation and the
SemanticModel it came from and returns a FixPlan (or None). Everything here is
about writing the replacement: which name `jax.numpy` has in the module, how to
index an expression along an axis, when an expression may be evaluated twice or
moved (`Purity`), and how a rule's fixes run as a `libcst.tool` codemod.
"""
from __future__ import annotations

import argparse
import builtins
import keyword
import re
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Iterable, Sequence

import libcst as cst
from libcst.codemod import CodemodCommand, CodemodContext

from jaxfuse_lint.core.diagnostics import Applicability
from jaxfuse_lint.codemods.plan import FixPlan, ImportSpec, apply_plans, is_valid_python, non_overlapping
from jaxfuse_lint.model.api import (
    CALLBACKS, JNP_CREATORS, JNP_ELEMENTWISE, STATIC_ATTRIBUTES,
)
from jaxfuse_lint.model.scopes import Function, Scope, walk

if TYPE_CHECKING:
    from jaxfuse_lint.core.config import Settings
    from jaxfuse_lint.model import SemanticModel


# ---------------------------------------------------------------------------------------------
# jax.numpy's name in the module
# ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class JnpName:
    """How to spell `jax.numpy` in this module, and the import that spelling needs (if any)."""

    name: str
    imports: tuple[ImportSpec, ...] = ()

    def attr(self, dotted: str) -> cst.BaseExpression:
        """`jnp.fft.fftfreq` as a node."""
        return dotted_expr(f"{self.name}.{dotted}")


def jnp_name(model: "SemanticModel", scopes: Iterable[Scope] = ()) -> JnpName | None:
    """The module's alias for `jax.numpy`, or `jnp` with an import to add.

    None when `jnp` is taken by something else (a local, another module) in the
    module or in any of `scopes`: adding the import would change what it means.
    """
    alias = model.resolver.module_alias("jax.numpy")
    scopes = list(scopes)
    if alias is not None and all(_resolves_to(model, alias, s, "jax.numpy") for s in scopes):
        return JnpName(alias)
    for candidate in ("jnp",):
        if _name_bound_anywhere(model, candidate):
            if all(_resolves_to(model, candidate, s, "jax.numpy") for s in scopes or [model.index.scope]):
                return JnpName(candidate)
            continue
        if any(r.name.value == candidate for r in model.index.reads):
            continue  # read but bound nowhere: a builtin-like name we must not shadow
        return JnpName(candidate, (ImportSpec("jax.numpy", None, candidate),))
    return None


def _resolves_to(model: "SemanticModel", name: str, scope: Scope, qualified: str) -> bool:
    found = model.lookup(name, scope)
    if found is None:
        return False
    _, bindings = found
    return all(b.kind == "import" and model.resolver.canonical(b.qualified_name or "") == qualified for b in bindings)


def _name_bound_anywhere(model: "SemanticModel", name: str) -> bool:
    if name in model.index.scope.bindings:
        return True
    for fn in model.index.functions:
        if name in fn.bindings:
            return True
    return False


def names_in_module(model: "SemanticModel") -> set[str]:
    """Every identifier the module reads or binds, in any scope (module, class bodies,
    functions), every attribute name, and every builtin (for fresh names)."""
    names = {r.name.value for r in model.index.reads}
    names |= set(model.index.scope.bindings)
    for fn in model.index.functions:
        names |= set(fn.bindings)
    for scope in set(model.index.scope_of_node.values()):
        names |= set(scope.bindings)
    for n in walk(model.module):
        if isinstance(n, cst.Attribute):
            names.add(n.attr.value)
        elif isinstance(n, cst.Name):
            names.add(n.value)  # keyword names, parameters, import aliases: never reuse one
    names |= set(dir(builtins))
    return names


def identifier_base(base: str) -> str:
    """`base` made a name a codemod may bind anywhere: a valid identifier, not a keyword, and
    never one Python mangles — `__x` (no trailing `__`) written inside a class body becomes
    `_Class__x`, so leading underscores collapse to one (`_` + `_apply` + `_jit` -> `_apply_jit`);
    dunder names are Python's, so they lose their leading underscores the same way."""
    base = re.sub(r"\W", "_", base) or "_name"
    if base[0].isdigit():
        base = "_" + base
    if base.startswith("__"):
        base = "_" + base.lstrip("_") if base.strip("_") else "_name"
    if keyword.iskeyword(base) or keyword.issoftkeyword(base):
        base += "_"
    return base


def fresh_name(model: "SemanticModel", base: str, taken: set[str] | None = None) -> str:
    """A name bound nowhere in the module (no scope, no attribute, no builtin, nothing in
    `taken`) and never mangled inside a class body (see `identifier_base`)."""
    base = identifier_base(base)
    used = names_in_module(model) | (taken or set())
    if base not in used:
        return base
    i = 2
    while f"{base}_{i}" in used:
        i += 1
    return f"{base}_{i}"


# ---------------------------------------------------------------------------------------------
# Nodes
# ---------------------------------------------------------------------------------------------
def dotted_expr(dotted: str) -> cst.BaseExpression:
    parts = dotted.split(".")
    node: cst.BaseExpression = cst.Name(parts[0])
    for p in parts[1:]:
        node = cst.Attribute(node, cst.Name(p))
    return node


_ATOMS = (cst.Name, cst.Attribute, cst.Subscript, cst.Call, cst.Integer, cst.Float, cst.Imaginary,
          cst.SimpleString, cst.ConcatenatedString, cst.FormattedString, cst.List, cst.Tuple, cst.Dict,
          cst.Set, cst.ListComp, cst.SetComp, cst.DictComp, cst.GeneratorExp, cst.Ellipsis)


def is_atom(e: cst.BaseExpression) -> bool:
    """Binds at least as tightly as a subscript or call (no parentheses needed to index it)."""
    if e.lpar:
        return True
    if isinstance(e, cst.Tuple):
        return False  # an unparenthesized tuple (`a, b`)
    if isinstance(e, (cst.Integer, cst.Float, cst.Imaginary)):
        return False  # `2[0]` / `2.real` parse differently; parenthesize numbers
    return isinstance(e, _ATOMS)


def paren(e: cst.BaseExpression) -> cst.BaseExpression:
    if e.lpar:
        return e
    return e.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])


def atom(e: cst.BaseExpression) -> cst.BaseExpression:
    return e if is_atom(e) else paren(e)


def subscript(value: cst.BaseExpression, elements: Sequence[cst.BaseSlice]) -> cst.Subscript:
    return cst.Subscript(atom(value), [cst.SubscriptElement(s) for s in elements])


def colon() -> cst.Slice:
    return cst.Slice(lower=None, upper=None)


def lane_index(axis: int | None, i: int) -> list[cst.BaseSlice]:
    """The subscript that takes element i along `axis` (None: the only axis of a rank-1 array).

    positive k: `[:, ..k.., i]`; negative -m: `[..., i, :, ..(m-1)..]`.
    """
    if axis is None:
        return [cst.Index(cst.Integer(str(i)))]
    if axis >= 0:
        return [colon() for _ in range(axis)] + [cst.Index(cst.Integer(str(i)))]
    m = -axis
    return [cst.Index(cst.Ellipsis()), cst.Index(cst.Integer(str(i)))] + [colon() for _ in range(m - 1)]


def new_axis_index(axis: int | None) -> list[cst.BaseSlice]:
    """The subscript that puts back a reduced axis as size 1 (keepdims)."""
    none = cst.Index(cst.Name("None"))
    if axis is None:
        return [none]
    if axis >= 0:
        return [colon() for _ in range(axis)] + [none]
    return [cst.Index(cst.Ellipsis()), none] + [colon() for _ in range(-axis - 1)]


def call(func: cst.BaseExpression, *args: cst.BaseExpression) -> cst.Call:
    return cst.Call(func, [cst.Arg(a) for a in args])


def binop(left: cst.BaseExpression, op: cst.BaseBinaryOp, right: cst.BaseExpression) -> cst.BinaryOperation:
    return cst.BinaryOperation(left, op, right)


# Contexts in which an expression needs no parentheses of its own.
def fits_without_parens(model: "SemanticModel", node: cst.CSTNode) -> bool:
    parent = model.parent(node)
    if isinstance(parent, (cst.Arg, cst.Element, cst.Return, cst.Expr, cst.Index, cst.DictElement,
                           cst.Param, cst.Yield, cst.Annotation, cst.AssignTarget)):
        return True
    if isinstance(parent, (cst.Assign, cst.AnnAssign, cst.AugAssign, cst.NamedExpr)):
        return getattr(parent, "value", None) is node
    if isinstance(parent, cst.Lambda):
        return parent.body is node
    if isinstance(parent, (cst.ListComp, cst.SetComp, cst.GeneratorExp)):
        return parent.elt is node
    return False


# Operator precedence (higher binds tighter) for deciding where parentheses are needed.
PRECEDENCE = {
    cst.Power: 8, cst.Multiply: 6, cst.Divide: 6, cst.FloorDivide: 6, cst.Modulo: 6, cst.MatrixMultiply: 6,
    cst.Add: 5, cst.Subtract: 5, cst.LeftShift: 4, cst.RightShift: 4, cst.BitAnd: 3, cst.BitXor: 2, cst.BitOr: 1,
}
UNARY_PRECEDENCE = 7


def precedence(e: cst.BaseExpression) -> int:
    if e.lpar or is_atom(e):
        return 100
    if isinstance(e, cst.BinaryOperation):
        return PRECEDENCE.get(type(e.operator), 0)
    if isinstance(e, cst.UnaryOperation):
        return UNARY_PRECEDENCE if not isinstance(e.operator, cst.Not) else 0
    if isinstance(e, (cst.Integer, cst.Float, cst.Imaginary)):
        return 100
    return 0


def in_context(model: "SemanticModel", original: cst.CSTNode, new: cst.BaseExpression) -> cst.BaseExpression:
    """`new`, parenthesized if it is to take `original`'s place in a tighter-binding context."""
    if is_atom(new) or fits_without_parens(model, original):
        return new
    parent = model.parent(original)
    p_new = precedence(new)
    if isinstance(parent, cst.BinaryOperation) and not original.lpar:
        p_parent = PRECEDENCE.get(type(parent.operator), 0)
        power = isinstance(parent.operator, cst.Power)
        if parent.left is original:
            ok = p_new > p_parent or (p_new == p_parent and not power)
        else:
            ok = p_new > p_parent or (p_new == p_parent and power)
        if ok:
            return new
    if isinstance(parent, cst.IfExp) and not original.lpar and p_new > 0:
        return new  # arithmetic binds tighter than `a if c else b`
    if (isinstance(parent, cst.UnaryOperation) and p_new >= UNARY_PRECEDENCE
            and not isinstance(new, cst.BinaryOperation)):
        return new
    if original.lpar:
        return new.with_changes(lpar=original.lpar, rpar=original.rpar)
    return paren(new)


class _IdentityReplacer(cst.CSTTransformer):
    def __init__(self, mapping: dict[cst.CSTNode, object]) -> None:
        super().__init__()
        self.mapping = mapping

    def on_leave(self, original_node, updated_node):  # type: ignore[override]
        return self.mapping.get(original_node, updated_node)


def replace_within(node: cst.CSTNode, mapping: dict[cst.CSTNode, object]) -> cst.CSTNode:
    """`node` with descendants (by identity) replaced; the plan's other targets stay untouched."""
    if not mapping:
        return node
    return node.visit(_IdentityReplacer(mapping))


def simple_statement(expr_stmt: cst.BaseSmallStatement) -> cst.SimpleStatementLine:
    return cst.SimpleStatementLine([expr_stmt])


def assign(name: str, value: cst.BaseExpression) -> cst.SimpleStatementLine:
    return simple_statement(cst.Assign([cst.AssignTarget(cst.Name(name))], value))


def insert_before(first: cst.BaseStatement, new_stmt: cst.BaseStatement) -> cst.FlattenSentinel:
    """`new_stmt` then `first`; a `def`/`class` that now follows a statement gets its blank line (PEP 8)."""
    if isinstance(first, (cst.FunctionDef, cst.ClassDef)) and not (
            first.leading_lines and first.leading_lines[0].comment is None):
        first = first.with_changes(leading_lines=[cst.EmptyLine(indent=False), *first.leading_lines])
    return cst.FlattenSentinel([new_stmt, first])


def top_of_body(fn_node: cst.FunctionDef) -> cst.BaseStatement | None:
    """The statement a new first statement goes before (after a docstring)."""
    block = fn_node.body
    if not isinstance(block, cst.IndentedBlock) or not block.body:
        return None
    if is_docstring(block.body[0]):
        return block.body[1] if len(block.body) > 1 else None
    return block.body[0]


def remove_statement(model: "SemanticModel", stmt: cst.BaseStatement, replacements: dict) -> bool:
    """Add the removal of `stmt` to `replacements`, keeping the block's blank-line layout tidy.

    The statement after it loses its leading blank lines when `stmt` opened the block (after a
    docstring it keeps one), or inherits `stmt`'s blank line otherwise; replacements already planned inside that next
    statement are folded into its new version. False (nothing added) when `stmt` is the last
    statement of its block (the block must not become empty) or its successor is a target itself.
    """
    block = model.parent(stmt)
    if not isinstance(block, (cst.IndentedBlock, cst.Module)):
        return False
    stmts = list(block.body)
    i = stmts.index(stmt)
    if i + 1 >= len(stmts):
        return False
    nxt = stmts[i + 1]
    if nxt in replacements:
        return False
    lines = list(nxt.leading_lines)
    if i == 0:
        while lines and lines[0].comment is None:
            lines.pop(0)
    elif not (lines and lines[0].comment is None):
        lines = [ln for ln in stmt.leading_lines if ln.comment is None][:1] + lines
    inner = {k: v for k, v in replacements.items() if k is not nxt and is_inside(model, k, nxt)}
    new_next = replace_within(nxt, inner) if inner else nxt
    for k in inner:
        del replacements[k]
    replacements[nxt] = new_next.with_changes(leading_lines=lines)
    replacements[stmt] = cst.RemoveFromParent()
    return True


def keyword_names(call_node: cst.Call) -> set[str]:
    return {a.keyword.value for a in call_node.args if a.keyword is not None}


def n_positional(call_node: cst.Call) -> int:
    return sum(1 for a in call_node.args if a.keyword is None and not a.star)


def has_star(call_node: cst.Call) -> bool:
    return any(a.star for a in call_node.args)


def literal_bool(e: cst.BaseExpression | None) -> bool | None:
    if isinstance(e, cst.Name) and e.value in ("True", "False"):
        return e.value == "True"
    return None


def is_docstring(stmt: cst.CSTNode) -> bool:
    return (isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1 and isinstance(stmt.body[0], cst.Expr)
            and isinstance(stmt.body[0].value, (cst.SimpleString, cst.ConcatenatedString)))


def containing_block(model: "SemanticModel", stmt: cst.CSTNode) -> cst.CSTNode | None:
    """The IndentedBlock or Module whose body lists `stmt` directly."""
    parent = model.parent(stmt)
    if isinstance(parent, (cst.IndentedBlock, cst.Module)) and stmt in parent.body:
        return parent
    return None


def document_order(model: "SemanticModel") -> dict[cst.CSTNode, int]:
    """Pre-order position of every node (cached on the model)."""
    cached = getattr(model, "_jf_document_order", None)
    if cached is None:
        cached = {n: i for i, n in enumerate(walk(model.module))}
        model._jf_document_order = cached  # type: ignore[attr-defined]
    return cached


def is_inside(model: "SemanticModel", node: cst.CSTNode, container: cst.CSTNode) -> bool:
    return node is container or any(a is container for a in model.ancestors(node))


def free_name_nodes(expr: cst.CSTNode) -> list[cst.Name]:
    """Name nodes read in `expr` (attribute names, keywords and lambda-internal names excluded)."""
    out: list[cst.Name] = []
    stack: list[tuple[cst.CSTNode, cst.CSTNode | None, str]] = [(expr, None, "")]
    while stack:
        node, parent, fname = stack.pop()
        if isinstance(node, cst.Name):
            if isinstance(parent, cst.Attribute) and fname == "attr":
                continue
            if isinstance(parent, cst.Arg) and fname == "keyword":
                continue
            if node.value in ("True", "False", "None"):
                continue
            out.append(node)
            continue
        if isinstance(node, (cst.Lambda, cst.ListComp, cst.SetComp, cst.DictComp, cst.GeneratorExp)):
            out.append(cst.Name("<scope>"))  # a nested scope: callers treat it as opaque
            continue
        for f in _fields(node):
            v = getattr(node, f)
            if isinstance(v, cst.CSTNode):
                stack.append((v, node, f))
            elif isinstance(v, (list, tuple)):
                for item in v:
                    if isinstance(item, cst.CSTNode):
                        stack.append((item, node, f))
    return out


def _fields(node: cst.CSTNode) -> list[str]:
    import dataclasses

    return [f.name for f in dataclasses.fields(node)
            if not f.name.startswith(("whitespace", "lpar", "rpar", "comma", "semicolon", "leading_lines",
                                      "lines_after", "header", "footer", "colon", "equal", "star", "dot",
                                      "lbracket", "rbracket", "lbrace", "rbrace", "operator"))]


# ---------------------------------------------------------------------------------------------
# Purity and cost of expressions
# ---------------------------------------------------------------------------------------------
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


# ---------------------------------------------------------------------------------------------
# Plans
# ---------------------------------------------------------------------------------------------
def plan(safe: bool, message: str, replacements: dict, imports: Iterable[ImportSpec] = ()) -> FixPlan:
    return FixPlan(Applicability.SAFE if safe else Applicability.UNSAFE, message, dict(replacements),
                   tuple(imports))


# ---------------------------------------------------------------------------------------------
# The libcst command every codemod module exposes
# ---------------------------------------------------------------------------------------------
class RuleCodemodCommand(CodemodCommand):
    """Run one rule's analysis on the tree and apply its fixes, as `jaxfuse-lint --fix --select CODE` does.

    Usable from libcst's own tooling (`--no-format` unless a formatter is configured in
    `.libcst.codemod.yaml`; libcst defaults to black):
        python -m libcst.tool codemod -x --no-format jaxfuse_lint.codemods.<module>.<Command> PATH [--unsafe-fixes]
    """

    DESCRIPTION = "Base class of the jaxfuse-lint codemods (not a codemod itself)."
    CODE: str = ""
    MAX_PASSES = 10

    def __init__(self, context: CodemodContext, unsafe_fixes: bool = False) -> None:
        super().__init__(context)
        self.unsafe_fixes = unsafe_fixes

    @staticmethod
    def add_args(arg_parser: argparse.ArgumentParser) -> None:
        arg_parser.add_argument("--unsafe-fixes", action="store_true", default=False,
                                help="Also apply the rule's unsafe fixes (review them).")

    def _settings(self) -> "Settings":
        from jaxfuse_lint.core.config import ConfigError, Settings, load_settings

        filename = self.context.filename
        try:
            settings = load_settings(None, start=filename or ".")
        except (ConfigError, OSError):
            settings = Settings()
        return replace(settings, select=(self.CODE,), extend_select=(), ignore=(), per_file_ignores=())

    def transform_module_impl(self, tree: cst.Module) -> cst.Module:
        from jaxfuse_lint.engine.pipeline import Analysis

        if not self.CODE:
            raise NotImplementedError("RuleCodemodCommand is a base class: run one of its subclasses")

        settings = self._settings()
        filename = self.context.filename or "<codemod>"
        allowed = {Applicability.SAFE} | ({Applicability.UNSAFE} if self.unsafe_fixes else set())
        for _ in range(self.MAX_PASSES):
            analysis = Analysis(tree, filename, settings)
            for err in analysis.errors:
                self.warn(err)
            plans = []
            for rule, v in analysis.violations:
                if rule.code != self.CODE:
                    continue
                p = analysis.plan(rule, v)
                if p is not None and p.applicability in allowed:
                    plans.append(p)
            chosen = non_overlapping(plans, analysis.model.index.parents)
            if not chosen:
                break
            new = apply_plans(tree, chosen)
            if new.code == tree.code or is_valid_python(new.code, filename) is not None:
                break
            tree = cst.parse_module(new.code)  # fresh nodes for the next analysis
        return tree
