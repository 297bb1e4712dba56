"""What fuses and what does not: facts the fusion-notebook rules (JF102-JF104, JF204-JF206) share.

- `static_int`: a trip count or bound known before tracing (literals, module
  constants, simple arithmetic on them).
- `large_op`: calls XLA runs as their own library kernels and that keep big
  buffers alive (FFTs, matmuls/contractions, convolutions, linear algebra).
- `cheap_function`: a function whose body is only elementwise arithmetic,
  array creation from shapes and layout changes (one fused kernel).
- `expression_names` / `same_meaning`: structural equality of two expressions
  whose names resolve to the same bindings (for CSE reasoning).

Everything here is additive to the model: nothing in other modules depends on it.
"""
from __future__ import annotations

import weakref
from typing import TYPE_CHECKING, Iterator

import libcst as cst

from jaxfuse_lint.model.names import as_written
from jaxfuse_lint.model.api import CONTROL_FLOW, JNP_CREATORS, JNP_ELEMENTWISE, JNP_STATIC_FUNCTIONS

if TYPE_CHECKING:
    from jaxfuse_lint.model.scopes import Function, Scope
    from jaxfuse_lint.model.semantic import SemanticModel

_FFT_NAMES = "fft ifft rfft irfft hfft ihfft fft2 ifft2 rfft2 irfft2 fftn ifftn rfftn irfftn".split()
FFT_FUNCTIONS = frozenset({f"jax.numpy.fft.{n}" for n in _FFT_NAMES} | {"jax.lax.fft"})
# FFTs over several axes (`axes=`), and over one axis (`axis=`).
FFT_MULTI_AXIS = frozenset(f"jax.numpy.fft.{n}" for n in _FFT_NAMES if n.endswith(("2", "n")))
FFT_ONE_AXIS = frozenset(f"jax.numpy.fft.{n}" for n in ("fft", "ifft", "rfft", "irfft", "hfft", "ihfft"))

CONTRACTIONS = frozenset({
    "jax.numpy.matmul", "jax.numpy.dot", "jax.numpy.vdot", "jax.numpy.einsum", "jax.numpy.tensordot",
    "jax.numpy.inner", "jax.numpy.kron", "jax.numpy.convolve", "jax.numpy.correlate",
    "jax.lax.dot", "jax.lax.dot_general", "jax.lax.batch_matmul", "jax.lax.conv", "jax.lax.conv_general_dilated",
    "jax.lax.conv_with_general_padding", "jax.lax.conv_transpose",
    "jax.scipy.signal.convolve", "jax.scipy.signal.fftconvolve", "jax.scipy.signal.convolve2d",
})
_LARGE_PREFIXES = ("jax.numpy.linalg.", "jax.scipy.linalg.", "jax.lax.linalg.")


def large_op(model: "SemanticModel", node: cst.CSTNode, scope: "Scope") -> str | None:
    """A short name when `node` is an FFT, a contraction (`@`, dot, einsum, conv) or linear algebra."""
    if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.MatrixMultiply):
        return "@"
    if not isinstance(node, cst.Call):
        return None
    qn = model.qn(node.func, scope)
    if qn is None:
        return None
    if qn in FFT_FUNCTIONS or qn in CONTRACTIONS or qn.startswith(_LARGE_PREFIXES):
        return as_written(node, qn)
    return None


def large_op_deep(model: "SemanticModel", node: cst.CSTNode, scope: "Scope", depth: int = 0) -> str | None:
    """`large_op`, or a call of one of the module's functions that runs one (`smooth(x)` whose
    body calls `jnp.fft.rfft`): "smooth (jnp.fft.rfft)"."""
    direct = large_op(model, node, scope)
    if direct is not None or depth > 3:
        return direct
    if not isinstance(node, cst.Call) or not isinstance(node.func, cst.Name):
        return None
    callee = model.function_named(node.func.value, scope)
    if callee is None:
        return None
    for n in own_nodes(callee):
        found = large_op_deep(model, n, model.scope_of(n), depth + 1)
        if found is not None:
            inner = found.split(" (", 1)[-1].rstrip(")") if " (" in found else found
            return f"{callee.name} ({inner})"
    return None


def static_int(model: "SemanticModel", expr: cst.BaseExpression | None, scope: "Scope", depth: int = 0) -> int | None:
    """The value of an integer known before tracing: `4`, `-1`, `N_STEPS` bound once to a literal, `2 * N`."""
    if expr is None or depth > 8:
        return None
    if isinstance(expr, cst.Integer):
        return int(expr.value, 0)
    if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, cst.Minus):
        v = static_int(model, expr.expression, scope, depth + 1)
        return -v if v is not None else None
    if isinstance(expr, cst.BinaryOperation) and isinstance(
            expr.operator, (cst.Add, cst.Subtract, cst.Multiply, cst.FloorDivide)):
        a = static_int(model, expr.left, scope, depth + 1)
        b = static_int(model, expr.right, scope, depth + 1)
        if a is None or b is None:
            return None
        if isinstance(expr.operator, cst.Add):
            return a + b
        if isinstance(expr.operator, cst.Subtract):
            return a - b
        if isinstance(expr.operator, cst.Multiply):
            return a * b
        return a // b if b else None
    if isinstance(expr, cst.Name):
        found = model.lookup(expr.value, scope)
        if found is None:
            return None
        owner, bindings = found
        if len(bindings) != 1:
            return None
        b = bindings[0]
        if b.kind not in ("assign", "annassign") or b.index is not None or b.value is None:
            return None
        # Only a name bound once and never rebound elsewhere (`global` writes land in the module scope).
        return static_int(model, b.value, owner, depth + 1)
    return None


def is_lambda_or_def(node: cst.CSTNode) -> bool:
    return isinstance(node, (cst.Lambda, cst.FunctionDef, cst.ClassDef))


def expression_names(expr: cst.CSTNode) -> list[cst.Name] | None:
    """The names an expression reads, in document order; None when it binds names itself
    (a lambda, a comprehension or a walrus), which structural comparison cannot follow."""
    out: list[cst.Name] = []
    stack: list[cst.CSTNode] = [expr]
    while stack:
        n = stack.pop()
        if isinstance(n, (cst.Lambda, cst.ListComp, cst.SetComp, cst.DictComp, cst.GeneratorExp, cst.NamedExpr)):
            return None
        if isinstance(n, cst.Name):
            out.append(n)
            continue
        children: list[cst.CSTNode] = []
        if isinstance(n, cst.Attribute):
            children = [n.value]
        elif isinstance(n, cst.Arg):
            children = [n.value]
        else:
            children = list(n.children)
        stack.extend(reversed(children))
    return out


def same_meaning(model: "SemanticModel", a: cst.BaseExpression, scope_a: "Scope",
                 b: cst.BaseExpression, scope_b: "Scope") -> bool:
    """`a` and `b` are the same code (libcst `deep_equals`) and each name in them resolves
    to the same bindings from where it is written (so both compute the same value)."""
    if type(a) is not type(b) or not a.deep_equals(b):
        return False
    na, nb = expression_names(a), expression_names(b)
    if na is None or nb is None or len(na) != len(nb):
        return False
    for x, y in zip(na, nb):
        fx = model.lookup(x.value, scope_a)
        fy = model.lookup(y.value, scope_b)
        if fx is None and fy is None:
            continue  # the same builtin
        if fx is None or fy is None or fx[0] is not fy[0] or fx[1] is not fy[1]:
            return False
    return True


def own_nodes(fn: "Function") -> Iterator[cst.CSTNode]:
    """The nodes of a function's body that belong to it, not to functions or classes nested in it."""
    node = fn.node
    body = node.body
    stack: list[cst.CSTNode] = [body]
    while stack:
        n = stack.pop()
        yield n
        if n is not body and is_lambda_or_def(n):
            continue
        stack.extend(reversed(list(n.children)))


# -- cheap bodies (JF103) ----------------------------------------------------------------------------------
_CHEAP_JNP = JNP_ELEMENTWISE | JNP_CREATORS | JNP_STATIC_FUNCTIONS | frozenset(
    "jax.numpy." + n
    for n in (
        "where select reshape ravel transpose swapaxes moveaxis expand_dims squeeze broadcast_to "
        "broadcast_arrays stack concatenate hstack vstack column_stack atleast_1d atleast_2d "
        "atleast_3d roll flip zeros_like ones_like full_like real imag conj conjugate clip float32 "
        "float64 int32 int64 complex64 complex128 sign square pi e inf nan nan_to_num"
    ).split()
) | frozenset(
    "jax.lax." + n
    for n in (
        "add sub mul div neg exp log sin cos tan tanh max min select select_n convert_element_type "
        "broadcast_in_dim broadcast reshape squeeze expand_dims dynamic_slice dynamic_update_slice "
        "dynamic_index_in_dim dynamic_slice_in_dim dynamic_update_index_in_dim integer_pow pow sqrt "
        "rsqrt abs sign square clamp iota broadcasted_iota full full_like rem"
    ).split()
) | frozenset(
    "jax.nn." + n for n in "relu relu6 sigmoid softplus gelu silu swish elu leaky_relu tanh hard_tanh celu selu".split()
)
_CHEAP_BUILTINS = frozenset(
    "builtins." + n for n in "len range int float complex bool abs min max tuple list zip enumerate isinstance".split()
)
_CHEAP_METHODS = frozenset(
    "reshape astype transpose squeeze ravel flatten conj conjugate clip round swapaxes real imag".split()
)
_AT_METHODS = frozenset("set add multiply mul divide min max get apply power".split())


def cheap_function(model: "SemanticModel", fn: "Function", depth: int = 0,
                   seen: set[int] | None = None) -> bool:
    """True when everything `fn` computes is elementwise arithmetic, array creation from
    shapes, indexing and layout changes — what XLA fuses into one kernel. Calls of the
    module's own functions are followed; anything unknown makes the answer False."""
    seen = set() if seen is None else seen
    if id(fn) in seen:
        return True
    if depth > 4:
        return False
    seen.add(id(fn))
    stack: list[cst.CSTNode] = [fn.node.body]
    while stack:
        n = stack.pop()
        if isinstance(n, cst.BinaryOperation) and isinstance(n.operator, cst.MatrixMultiply):
            return False
        if isinstance(n, (cst.For, cst.While)):
            return False  # a Python loop unrolls into an unknown amount of work
        if isinstance(n, (cst.AssignTarget, cst.AugAssign)) and isinstance(
                n.target, (cst.Subscript, cst.Attribute)):
            return False  # writes to a mutable ref or object: state, not dataflow
        if isinstance(n, cst.Call) and not _cheap_call(model, n, model.scope_of(n), depth, seen):
            return False
        stack.extend(n.children)
    return True


def cheap_call(model: "SemanticModel", call: cst.Call, scope: "Scope") -> bool:
    """A call `cheap_function` accepts: elementwise, array creation from shapes, indexing and
    layout changes, an `.at[...]` update, or the module's own cheap function."""
    return _cheap_call(model, call, scope, 0, set())


def _cheap_call(model: "SemanticModel", call: cst.Call, scope: "Scope", depth: int, seen: set[int]) -> bool:
    qn = model.qn(call.func, scope)
    if qn is not None:
        if qn in CONTROL_FLOW:
            return False
        return qn in _CHEAP_JNP or qn in _CHEAP_BUILTINS
    func = call.func
    if isinstance(func, cst.Attribute):
        attr = func.attr.value
        if attr in _CHEAP_METHODS:
            return True
        # x.at[i].set(v) and friends: an in-place update, fused on GPU.
        at = func.value.value if isinstance(func.value, cst.Subscript) else None
        if attr in _AT_METHODS and isinstance(at, cst.Attribute) and at.attr.value == "at":
            return True
        return False
    if isinstance(func, cst.Name):
        callee = model.function_named(func.value, scope)
        if callee is not None:
            return cheap_function(model, callee, depth + 1, seen)
    return False


# -- document order and reaching bindings ------------------------------------------------------------------
_ORDERS: "weakref.WeakKeyDictionary[SemanticModel, DocumentOrder]" = weakref.WeakKeyDictionary()


class DocumentOrder:
    """Pre-order positions of every node: `start[n]` and `end[n]` (the last position in n's subtree)."""

    def __init__(self, module: cst.Module, parents: dict) -> None:
        from jaxfuse_lint.model.scopes import walk

        self.start: dict[cst.CSTNode, int] = {}
        order: list[cst.CSTNode] = []
        for i, n in enumerate(walk(module)):
            self.start[n] = i
            order.append(n)
        self.end: dict[cst.CSTNode, int] = dict(self.start)
        for n in reversed(order):
            p = parents.get(n)
            if p is not None and self.end[n] > self.end[p]:
                self.end[p] = self.end[n]

    def before(self, a: cst.CSTNode, b: cst.CSTNode) -> bool:
        """a's subtree ends before b starts."""
        return self.end[a] < self.start[b]

    def inside(self, a: cst.CSTNode, b: cst.CSTNode) -> bool:
        """a is b or in b's subtree."""
        return self.start[b] <= self.start[a] <= self.end[b]


def document_order(model: "SemanticModel") -> DocumentOrder:
    """The model's document order, computed once per model."""
    order = _ORDERS.get(model)
    if order is None:
        order = DocumentOrder(model.module, model.index.parents)
        _ORDERS[model] = order
    return order


def _enclosing_blocks(model: "SemanticModel", node: cst.CSTNode, stop: cst.CSTNode) -> list[cst.CSTNode]:
    out = []
    for a in model.ancestors(node):
        if isinstance(a, (cst.IndentedBlock, cst.SimpleStatementSuite, cst.Module)):
            out.append(a)
        if a is stop:
            break
    return out


def reaching_value(model: "SemanticModel", name: cst.Name):
    """The value of the plain assignment (`name = value`) that reaches a read: (value, owner) or None."""
    found = reaching_binding(model, name)
    if found is None:
        return None
    owner, b = found
    if b.kind not in ("assign", "annassign") or b.index is not None or b.value is None:
        return None
    return b.value, owner


def reaching_binding(model: "SemanticModel", name: cst.Name):
    """The one binding of a read name that reaches it in straight-line code: the last binding
    before it in its own function, in a block that also holds the read, with no binding after
    it inside a loop around both. Returns (owner scope, Binding) or None when unsure."""
    from jaxfuse_lint.model.scopes import Function

    scope = model.scope_of(name)
    found = model.lookup(name.value, scope)
    if found is None:
        return None
    owner, bindings = found
    if len(bindings) == 1:
        return owner, bindings[0]
    if owner is not scope or not isinstance(owner, Function):
        return None  # a closure over a name bound several times: which one depends on the call time
    order = document_order(model)
    stmt = model.statement_of(name)
    before = [b for b in bindings if b.node in order.start and order.end[b.node] < order.start[name]
              and not (stmt is not None and order.inside(b.node, stmt))]
    if not before:
        return None
    last = max(before, key=lambda b: order.start[b.node])
    if last.kind not in ("assign", "annassign", "augassign", "walrus"):
        return None
    read_blocks = _enclosing_blocks(model, name, owner.node)
    last_stmt = model.statement_of(last.node)
    if last_stmt is None or model.parent(last_stmt) not in read_blocks:
        return None
    # A binding after the read inside a loop that also holds the read may reach it on the next pass.
    for a in model.ancestors(name):
        if a is owner.node:
            break
        if isinstance(a, (cst.For, cst.While)):
            if any(order.inside(b.node, a) and order.start[b.node] > order.start[name] for b in bindings):
                return None
    return owner, last
