"""NumPy indexing: what kind an index expression is (an integer or integer array, a
boolean mask or tuple of indices, or unsure), and the shape an indexing gives from its
base's shape and its indices (new axes, integer indices, one integer-array gather, `...`)."""
from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

from jaxfuse_lint.model.shape_literals import _int_literal
from jaxfuse_lint.model.shapes import Shape

if TYPE_CHECKING:
    from jaxfuse_lint.model.scopes import Scope
    from jaxfuse_lint.model.shape_view import ShapeView


# Array functions whose result is boolean (a mask, not a gather index) or a tuple of arrays.
_BOOLEAN_RESULTS = frozenset(
    "isnan isfinite isinf isposinf isneginf isclose isin in1d isreal iscomplex signbit logical_and logical_or "
    "logical_not logical_xor greater greater_equal less less_equal equal not_equal array_equal allclose "
    "any all".split()
)
_TUPLE_RESULTS = frozenset("nonzero where indices meshgrid unravel_index tril_indices triu_indices "
                           "diag_indices mask_indices argwhere split array_split divmod frexp modf".split())
_INTEGER_RESULTS = frozenset("arange argsort argmax argmin searchsorted digitize randint permutation argpartition "
                             "lexsort ravel_multi_index bincount".split())
_INDEX_METHODS = frozenset("argsort argmax argmin searchsorted astype ravel flatten reshape".split())


INT, NOT_INT, UNSURE = "int", "not-int", "unsure"


def index_kind(model: "ShapeView", v: cst.BaseExpression, scope: "Scope", depth: int = 0) -> str:
    """What an index expression is: INT (an integer or integer array: integer arithmetic,
    `range` loop variables, `argsort`/`arange`/`astype(int)` results, names bound to those),
    NOT_INT (a boolean mask, a tuple of indices, a float), or UNSURE."""
    if depth > 8:
        return UNSURE
    if _int_literal(v) is not None:
        return INT
    if isinstance(v, (cst.Float, cst.Comparison, cst.Tuple, cst.List, cst.SimpleString, cst.BooleanOperation)):
        return NOT_INT
    if isinstance(v, cst.BinaryOperation):
        if isinstance(v.operator, (cst.BitAnd, cst.BitOr, cst.BitXor, cst.Divide, cst.MatrixMultiply)):
            return NOT_INT
        kinds = {index_kind(model, v.left, scope, depth + 1), index_kind(model, v.right, scope, depth + 1)}
        return NOT_INT if NOT_INT in kinds else INT if kinds == {INT} else UNSURE
    if isinstance(v, cst.UnaryOperation):
        if isinstance(v.operator, (cst.BitInvert, cst.Not)):
            return NOT_INT
        return index_kind(model, v.expression, scope, depth + 1)
    if isinstance(v, cst.Subscript):
        if all(isinstance(el.slice, cst.Slice) for el in v.slice):
            return index_kind(model, v.value, scope, depth + 1)
        return UNSURE
    if isinstance(v, cst.Call):
        qn = model.qn(v.func, scope)
        if qn is not None:
            if qn in ("builtins.len", "builtins.int", "builtins.round", "builtins.range"):
                return INT
            for prefix in ("jax.numpy.", "numpy.", "jax.random.", "jax.lax."):
                if qn.startswith(prefix):
                    name = qn[len(prefix):].rsplit(".", 1)[-1]
                    if name in _BOOLEAN_RESULTS or name in _TUPLE_RESULTS or name == "bernoulli":
                        return NOT_INT
                    dtype = keyword_value(v, "dtype")
                    if dtype is not None:
                        return INT if _integer_dtype(model, dtype, scope) else NOT_INT
                    if name in ("array", "asarray"):
                        arg = v.args[0].value if v.args else None
                        return INT if arg is not None and _int_elements(arg) else UNSURE
                    # Functions that make integers; the others keep their input's dtype.
                    return INT if name in _INTEGER_RESULTS else UNSURE
            return UNSURE
        if isinstance(v.func, cst.Attribute) and v.func.attr.value in _INDEX_METHODS:
            if v.func.attr.value == "astype":
                return INT if v.args and _integer_dtype(model, v.args[0].value, scope) else NOT_INT
            if v.func.attr.value in ("ravel", "flatten", "reshape"):
                return index_kind(model, v.func.value, scope, depth + 1)
            return INT
        return UNSURE
    if isinstance(v, cst.Name):
        if v.value in ("True", "False", "None"):
            return NOT_INT
        found = model.bindings_at(v, scope)
        if found is None:
            return UNSURE
        owner, bindings = found
        kinds = set()
        for b in bindings:
            if b.kind == "param":
                kinds.add(_param_index_kind(model, owner, b.name))
            elif b.kind == "for" and b.index is None and isinstance(b.value, cst.Call) and \
                    model.qn(b.value.func, owner) == "builtins.range":
                kinds.add(INT)
            elif b.kind in ("assign", "annassign") and b.index is None and b.value is not None:
                kinds.add(index_kind(model, b.value, owner, depth + 1))
            else:
                kinds.add(UNSURE)
        if kinds != {INT} and model.numpy_arrays.binding_is_array(bindings, owner):
            return NOT_INT  # a concrete NumPy array may be a boolean mask, which jit accepts
        return NOT_INT if NOT_INT in kinds else INT if kinds == {INT} else UNSURE
    return UNSURE


def _param_index_kind(model: "ShapeView", fn, name: str) -> str:
    """The index of a `fori_loop` body, a parameter annotated `int` / `Int[Array, ...]`: INT;
    annotated as a tuple, list, bool or boolean array: NOT_INT."""
    from jaxfuse_lint.model.scopes import Function

    if not isinstance(fn, Function):
        return UNSURE
    if fn.params and fn.params[0] == name and any(
            r.kind == "control-flow" and r.transform == "jax.lax.fori_loop" for r in model.traced.reasons.get(fn, ())):
        return INT
    p = fn.param_nodes.get(name)
    if p is None or p.annotation is None:
        return UNSURE
    ann = p.annotation.annotation
    head = ann.value if isinstance(ann, cst.Subscript) else ann
    head_name = head.attr.value if isinstance(head, cst.Attribute) else head.value if isinstance(head, cst.Name) else ""
    if head_name in ("int", "Int", "Int8", "Int16", "Int32", "Int64", "UInt", "UInt8", "UInt16", "UInt32", "UInt64",
                     "Integer"):
        return INT
    if head_name in ("bool", "Bool", "tuple", "Tuple", "list", "List", "Sequence", "float", "Float"):
        return NOT_INT
    return UNSURE


def keyword_value(call: cst.Call, name: str) -> cst.BaseExpression | None:
    for a in call.args:
        if a.keyword is not None and a.keyword.value == name:
            return a.value
    return None


def _has_integer_dtype(model: "ShapeView", call: cst.Call, scope: "Scope") -> bool:
    dtype = keyword_value(call, "dtype")
    return dtype is not None and _integer_dtype(model, dtype, scope)


def _integer_dtype(model: "ShapeView", dtype: cst.BaseExpression, scope: "Scope") -> bool:
    if isinstance(dtype, cst.SimpleString):
        text = dtype.evaluated_value
        return isinstance(text, str) and text.lstrip("<>=").startswith(("int", "uint", "i", "u"))
    qn = model.qn(dtype, scope)
    if qn is None:
        return False
    last = qn.rsplit(".", 1)[-1]
    return last in ("int",) or last.startswith(("int", "uint"))


def _int_elements(e: cst.BaseExpression) -> bool:
    if isinstance(e, (cst.List, cst.Tuple)):
        return bool(e.elements) and all(not isinstance(el, cst.StarredElement) and _int_elements(el.value)
                                        for el in e.elements)
    return _int_literal(e) is not None


_GAP = object()  # an unknown number of axes (a gather by an index of unknown rank)


def _keep_size(op, src: int | None) -> int | None:
    return src if op[2] else op[1]


def _index_known_rank(base: Shape, ops: list, consumed: int) -> Shape | None:
    rank = base.rank or 0
    src_dims = [base.size(i) for i in range(rank)]
    middle = rank - consumed
    out: list = []
    src = 0
    for op in ops:
        kind = op[0]
        if kind == "ellipsis":
            out.extend(src_dims[src:src + middle])
            src += middle
        elif kind == "keep":
            out.append(_keep_size(op, src_dims[src]))
            src += 1
        elif kind == "new":
            out.append(1)
        elif kind == "drop":
            src += 1
        else:  # gather
            index = op[1]
            if index is not None and index.rank is not None:
                out.extend(index.size(i) for i in range(index.rank))
            else:
                out.append(_GAP)
            src += 1
    if _GAP not in out:
        return Shape.of_dims(out)
    g = out.index(_GAP)
    head, tail = out[:g], out[g + 1:]
    return Shape.make(None, {i: d for i, d in enumerate(head) if d is not None},
                      {i - len(tail): d for i, d in enumerate(tail) if d is not None})


def _index_unknown_rank(base: Shape | None, ops: list) -> Shape | None:
    """Rank unknown: sizes from the left up to the ellipsis (or a gather), from the right back to it."""
    k = next(i for i, op in enumerate(ops) if op[0] == "ellipsis")
    before, after = ops[:k], ops[k + 1:]
    left: dict[int, int] = {}
    right: dict[int, int] = {}
    pos = src = 0
    clean_left = True
    for op in before:
        kind = op[0]
        if kind == "keep":
            size = _keep_size(op, base.size(src) if base is not None else None)
            if size is not None:
                left[pos] = size
            pos += 1
            src += 1
        elif kind == "new":
            left[pos] = 1
            pos += 1
        elif kind == "drop":
            src += 1
        else:
            clean_left = False
            break
    out_r = src_r = 0
    clean_right = True
    for op in reversed(after):
        kind = op[0]
        if kind == "keep":
            size = _keep_size(op, base.size(-(src_r + 1)) if base is not None else None)
            out_r += 1
            src_r += 1
            if size is not None:
                right[-out_r] = size
        elif kind == "new":
            out_r += 1
            right[-out_r] = 1
        elif kind == "drop":
            src_r += 1
        else:
            clean_right = False
            break
    if base is not None:
        # The untouched middle keeps its sizes: from the left when nothing after the ellipsis
        # consumes axes, from the right when nothing before it does.
        if clean_left and not any(op[0] in ("keep", "drop", "gather") for op in after):
            for a, size in base.left:
                if a >= src:
                    left.setdefault(a - src + pos, size)
        if clean_right and not any(op[0] in ("keep", "drop", "gather") for op in before):
            for a, size in base.right:
                if -a > src_r:
                    right.setdefault(a + src_r - out_r, size)
    return Shape.make(None, left, right)
