"""The code around a folded constant, as the calibration tables of JF201, JF202 and JF207 describe
it (core/calibration.py; calibrate/jf201.py, jf202.py, jf207.py).

What a constant costs depends on what builds it, how large it is and how the program reads it: XLA
rebuilds some constants in place (an `arange` gathered at traced indices is an `iota`, a constant
of ones a broadcast), a `jnp` expression of Python numbers is folded into the very same constant,
and a matmul with a `jnp` operand may take a kernel more. A rule reads those here, in its table's
vocabulary; what this module cannot establish is None (it matches every calibrated value):

- `builder(expr, scope)`: "arange", "linspace" (logspace, geomspace), "ones" (zeros, full, empty,
  the `*_like`s), "eye" (identity), "fftfreq" (rfftfreq), "random" (`np.random.*`, a NumPy
  Generator's draws, `jax.random.*`), "int_list" (an array of a Python list: `np.stack([...])`),
  "load" (`np.load`, `loadtxt`, `fromfile`...: data). Elementwise math and layout on a builder's
  array keep its builder (`np.sin(np.arange(n)).reshape(s)` is an "arange"), and data added to
  anything stays data (`simulated + noise` is "random"); a function this module
  does not group is named by itself (`"meshgrid"`), which the table does not know;
- `size(expr, scope)`: (known, elements): "static" where the code says the size, "input_size" /
  "input_dim" where it is the size (`np.arange(x.size)`, `np.ones(x.shape)`) or one dimension
  (`np.arange(x.shape[0])`, `len(x)`) of a traced value; elements in 4-byte units (a bool array of
  n elements is n / 4 of them; an operation's result is at least as large as its largest known
  operand), None where not established (an input's size without a declared shape);
- `use(node, scope)`: how the program reads the value: "elementwise" (arithmetic with a traced
  value), "index" (indices of a gather from a traced array: `x[C, a]`, `jnp.take(x, C)`), "table"
  (gathered at traced indices: `jnp.take(C, i)`, `jnp.asarray(C)[i]`), "matmul"; None for any other
  use (a scatter, a `lax` call, a return...), or where uses differ;
- `program_op(node, scope)`: the `jax` operation a value is passed to (`jnp.fft.fft(pulse)`), where
  `use` names none;
- `declared_elements(bindings)`: the size a binding's annotation declares (`W: Float32[np.ndarray,
  "1024 64"] = np.load(path)`).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

import libcst as cst

from jaxfuse_lint.model.api import JNP_ELEMENTWISE
from jaxfuse_lint.model.declared_shapes import parse_jaxtyping_dims
from jaxfuse_lint.model.traced import keyword, positional
from jaxfuse_lint.model.values import Kind
from jaxfuse_lint.model.view import ModelView

if TYPE_CHECKING:
    from jaxfuse_lint.model.device_arrays import DeviceArrays
    from jaxfuse_lint.model.numpy_values import NumpyArrays
    from jaxfuse_lint.model.scopes import Binding, Scope
    from jaxfuse_lint.model.shape_analysis import ShapeAnalysis
    from jaxfuse_lint.model.shapes import Shape


class ConstantContextView(ModelView, Protocol):
    shapes: "ShapeAnalysis"

    def shape(self, expr: cst.CSTNode, scope: "Scope") -> "Shape | None": ...

    def kind(self, expr: cst.CSTNode, scope: "Scope") -> Kind: ...

    @property
    def numpy_arrays(self) -> "NumpyArrays": ...

    @property
    def device_arrays(self) -> "DeviceArrays": ...


_GROUPS = {
    "arange": "arange", "linspace": "linspace", "logspace": "linspace", "geomspace": "linspace",
    "ones": "ones", "zeros": "ones", "full": "ones", "empty": "ones", "ones_like": "ones", "zeros_like": "ones",
    "full_like": "ones", "empty_like": "ones", "eye": "eye", "identity": "eye", "fft.fftfreq": "fftfreq",
    "fft.rfftfreq": "fftfreq", "load": "load", "loadtxt": "load", "genfromtxt": "load", "fromfile": "load",
    "frombuffer": "load", "memmap": "load",
}
# Arrays of what they are given: of a Python list, a list of Python values ("int_list").
_OF_SEQUENCE = frozenset({"stack", "array", "asarray", "concatenate", "hstack", "vstack", "column_stack",
                          "ascontiguousarray"})
# Calls that keep the builder of their (first) array argument: conversions and layout.
_KEEP = frozenset({"asarray", "array", "reshape", "transpose", "ravel", "squeeze", "expand_dims", "flip",
                   "roll", "moveaxis", "swapaxes", "tile", "repeat", "broadcast_to", "astype", "copy",
                   "ascontiguousarray", "atleast_1d", "atleast_2d", "fft.fftshift", "fft.ifftshift"})
_KEEP_METHODS = frozenset({"reshape", "astype", "transpose", "ravel", "flatten", "squeeze", "copy", "swapaxes",
                           "clip", "round", "conj", "real", "imag", "T", "__array__"})
_NUMPY_ELEMENTWISE = frozenset("numpy." + n[len("jax.numpy."):] for n in JNP_ELEMENTWISE)
_MATMULS = frozenset({"dot", "matmul", "einsum", "tensordot", "inner", "vdot", "linalg.multi_dot"})
_LAX_MATMULS = frozenset({"jax.lax.dot", "jax.lax.dot_general", "jax.lax.batch_matmul"})
_TAKES = frozenset({"jax.numpy.take", "jax.numpy.take_along_axis"})
_CONVERSIONS = frozenset({"jax.numpy.asarray", "jax.numpy.array", "jax.device_put"})
_ITEMSIZE = {"bool": 1, "bool_": 1, "int8": 1, "uint8": 1, "int16": 2, "uint16": 2, "float16": 2, "half": 2,
             "bfloat16": 2}
_DEPTH = 8
_DATA = frozenset({"random", "load"})


def _short(qn: str | None) -> str | None:
    for prefix in ("jax.numpy.", "numpy."):
        if qn is not None and qn.startswith(prefix):
            return qn[len(prefix):]
    return None


def builder(model: ConstantContextView, expr: cst.BaseExpression, scope: "Scope", depth: int = 0) -> str | None:
    if depth > _DEPTH:
        return None
    if isinstance(expr, cst.Call):
        qn = model.qn(expr.func, scope)
        if qn is not None and qn.startswith(("numpy.random.", "jax.random.")):
            return "random"
        short = _short(qn)
        if short in _GROUPS:
            return _GROUPS[short]
        first = positional(expr, 0)
        if short in _OF_SEQUENCE and first is not None and _python_list(model, first, scope):
            return "int_list"
        if (short in _KEEP or qn in _CONVERSIONS) and first is not None:
            return builder(model, first, scope, depth + 1)
        if qn in JNP_ELEMENTWISE or qn in _NUMPY_ELEMENTWISE:
            found = {builder(model, a.value, scope, depth + 1) for a in expr.args
                     if a.keyword is None and _is_array(model, a.value, scope)}
            return found.pop() if len(found) == 1 else None
        if short is not None:
            return short  # a NumPy or jnp function the table does not group
        if qn is None and isinstance(expr.func, cst.Attribute):
            if model.numpy_arrays._is_generator(expr.func.value, scope):
                return "random"  # `rng.normal(size=...)`
            if expr.func.attr.value in _KEEP_METHODS:
                return builder(model, expr.func.value, scope, depth + 1)
        return None
    if isinstance(expr, cst.Subscript):
        qn = model.qn(expr.value, scope)
        if qn in ("numpy.mgrid", "numpy.ogrid", "jax.numpy.mgrid", "jax.numpy.ogrid"):
            return qn.rsplit(".", 1)[1]
        return builder(model, expr.value, scope, depth + 1)
    if isinstance(expr, cst.BinaryOperation):
        found = {builder(model, side, scope, depth + 1) for side in (expr.left, expr.right)
                 if _is_array(model, side, scope)}
        data = found & _DATA
        if len(data) == 1:
            return data.pop()  # noise added to anything is data: no structure XLA could rebuild
        return found.pop() if len(found) == 1 else None
    if isinstance(expr, cst.UnaryOperation):
        return builder(model, expr.expression, scope, depth + 1)
    if isinstance(expr, cst.Attribute) and expr.attr.value in _KEEP_METHODS:
        return builder(model, expr.value, scope, depth + 1)
    if isinstance(expr, cst.Name):
        value = _single_value(model, expr, scope)
        if value is not None:
            return builder(model, value[0], value[1], depth + 1)
    return None


def _is_array(model: ConstantContextView, e: cst.BaseExpression, scope: "Scope") -> bool:
    return model.numpy_arrays.is_array(e, scope) or model.device_arrays.is_array(e, scope)


def _host_value(model: ConstantContextView, e: cst.BaseExpression, scope: "Scope") -> bool:
    """A number or a NumPy array: arithmetic with it stays on the host."""
    if isinstance(e, (cst.Integer, cst.Float, cst.Imaginary)):
        return True
    if isinstance(e, cst.UnaryOperation):
        return _host_value(model, e.expression, scope)
    if model.numpy_arrays.is_array(e, scope):
        return True
    if model.kind(e, scope) is Kind.STATIC:
        return True
    shape = model.shape(e, scope)
    return shape is not None and shape.rank == 0 and not model.device_arrays.is_array(e, scope)


def _single_value(model: ConstantContextView, name: cst.Name, scope: "Scope"):
    """(value, owner) of a name bound once by a plain assignment, else None."""
    found = model.bindings_at(name, scope)
    if found is None or len(found[1]) != 1:
        return None
    b = found[1][0]
    if b.kind not in ("assign", "annassign") or b.value is None or b.index is not None:
        return None
    return b.value, found[0]


def _python_list(model: ConstantContextView, e: cst.BaseExpression, scope: "Scope", depth: int = 0) -> bool:
    """A list (or tuple) of Python values: a display, a comprehension, or a name bound to one
    (appended to in a loop, say), whose items are not arrays."""
    if isinstance(e, (cst.List, cst.Tuple)):
        return all(not isinstance(el, cst.StarredElement) and not _is_array(model, el.value, scope)
                   for el in e.elements)
    if isinstance(e, (cst.ListComp, cst.GeneratorExp)):
        return not _is_array(model, e.elt, scope)
    if isinstance(e, cst.Call) and model.qn(e.func, scope) in ("builtins.list", "builtins.range") and depth < 3:
        arg = positional(e, 0)
        return arg is None or model.qn(e.func, scope) == "builtins.range" or _python_list(model, arg, scope, depth + 1)
    if isinstance(e, cst.Name) and depth < 3:
        found = model.bindings_at(e, scope)
        if found is None or not found[1]:
            return False
        return all(b.kind in ("assign", "annassign") and b.value is not None and b.index is None
                   and _python_list(model, b.value, found[0], depth + 1) for b in found[1])
    return False


# -- size ---------------------------------------------------------------------------------------------

def size(model: ConstantContextView, expr: cst.BaseExpression, scope: "Scope",
         bound: "Bound | None" = None) -> tuple[str, int | None]:
    """("static" | "input_size" | "input_dim", elements in 4-byte units or None). `bound`: values
    of the parameters of the function `expr` is in (`__init__`'s `n` in `self.k = np.fft.fftfreq(n)`,
    from the call that made the instance: `Mesh(4096)`)."""
    known = _input_kind(model, expr, scope, 0) or "static"
    elements = _elements(model, expr, scope, 0, bound or {})
    if elements is None:
        return known, None
    itemsize = _itemsize(model, expr, scope)
    return known, max(1, elements * itemsize // 4)


# Parameter name -> (the argument expression, the scope it is evaluated in).
Bound = dict


def _int(model: ConstantContextView, e: cst.BaseExpression | None, scope: "Scope", bound: Bound,
         depth: int = 0) -> int | None:
    """`static_int`, with the parameters in `bound` standing for the arguments given for them; a
    parameter of one of the module's functions the same integer at every call site
    (`ring(self.n)`), and `self.n` that the class sets once from such a value (`self.n = n` in
    `__init__`, every construction passing 100000): the names resolve to what runs."""
    if e is None or depth > 6:
        return None
    if isinstance(e, cst.Name):
        found = model.bindings_at(e, scope)
        if found is not None and found[1] and all(b.kind == "param" for b in found[1]):
            if bound and e.value in bound:
                arg, arg_scope = bound[e.value]
                return model.shapes.static_int(arg, arg_scope)
            return _param_int(model, found[0], e.value, depth + 1)
    if isinstance(e, cst.Attribute) and isinstance(e.value, cst.Name) and e.value.value == "self":
        return _self_int(model, e.attr.value, scope, depth + 1)
    if isinstance(e, cst.Call) and model.qn(e.func, scope) == "builtins.len" and e.args:
        n = _list_length(model, e.args[0].value, scope, 0)  # `len(COEFFS)` of a literal tuple
        if n is not None:
            return n
    if isinstance(e, cst.BinaryOperation) and isinstance(e.operator, (cst.Add, cst.Subtract, cst.Multiply)):
        a, b = _int(model, e.left, scope, bound, depth + 1), _int(model, e.right, scope, bound, depth + 1)
        if a is not None and b is not None:
            return a + b if isinstance(e.operator, cst.Add) else a - b if isinstance(e.operator, cst.Subtract) else a * b
    return model.shapes.static_int(e, scope)


def _param_int(model: ConstantContextView, fn: "Scope", name: str, depth: int) -> int | None:
    """The integer every call of the module's function `fn` passes for its parameter `name`
    (for `__init__`, every construction of its class); None unless there is one and they agree."""
    from jaxfuse_lint.model.instances import instances
    from jaxfuse_lint.model.scopes import Function

    if not isinstance(fn, Function) or fn.is_lambda or name in fn.star_params or depth > 6:
        return None
    inst = instances(model)
    values = set()
    for site in model.index.calls:
        func = site.call.func
        if fn.name == "__init__" and fn.cls is not None:
            if inst.class_named(func, site.scope) is not fn.cls:
                continue
        elif not (isinstance(func, cst.Name) and model.function_named(func.value, site.scope) is fn):
            continue
        arg = model.argument_for(site.call, fn, name)
        if arg is None:
            default = fn.param_nodes.get(name)
            arg = default.default if default is not None else None
            if arg is None:
                return None
            values.add(model.shapes.static_int(arg, fn.parent or model.index.scope))
        else:
            values.add(_int(model, arg, site.scope, {}, depth + 1))
        if None in values or len(values) > 1:
            return None
    return values.pop() if len(values) == 1 else None


def _self_int(model: ConstantContextView, attr: str, scope: "Scope", depth: int) -> int | None:
    """`self.n` in a method of a class whose methods set it exactly once, to an integer."""
    from jaxfuse_lint.model.scopes import Function, walk

    fn = scope
    while isinstance(fn, Function) and fn.cls is None:
        fn = fn.parent
    if not isinstance(fn, Function) or fn.cls is None or not fn.params or fn.params[0] != "self":
        return None
    writes = []
    for n in walk(fn.cls.node.body):
        targets = [t.target for t in n.targets] if isinstance(n, cst.Assign) else \
            [n.target] if isinstance(n, (cst.AnnAssign, cst.AugAssign)) else []
        for t in targets:
            for sub in walk(t):
                if isinstance(sub, cst.Attribute) and isinstance(sub.value, cst.Name) and sub.value.value == "self" \
                        and sub.attr.value == attr:
                    writes.append((n, sub is t))
    if len(writes) != 1 or not writes[0][1] or not isinstance(writes[0][0], (cst.Assign, cst.AnnAssign)):
        return None
    value = writes[0][0].value
    if value is None:
        return None
    return _int(model, value, model.scope_of(value), {}, depth + 1)


def _elements(model: ConstantContextView, expr: cst.BaseExpression, scope: "Scope", depth: int,
              bound: Bound) -> int | None:
    if depth > _DEPTH:
        return None
    shape = model.shape(expr, scope)
    total = shape.total() if shape is not None else None
    if total is not None:
        return total
    def static_int(e, sc):
        return _int(model, e, sc, bound)

    if isinstance(expr, cst.Call):
        qn = model.qn(expr.func, scope)
        short = _short(qn)
        if short in ("eye", "identity"):
            n = static_int(positional(expr, 0) or keyword(expr, "N") or keyword(expr, "n"), scope)
            m_expr = positional(expr, 1) or keyword(expr, "M")
            m = static_int(m_expr, scope) if m_expr is not None and not _is_none(m_expr) else n
            return n * m if n is not None and m is not None else None
        if qn is not None and qn.startswith("numpy.random.") or (
                qn is None and isinstance(expr.func, cst.Attribute)
                and model.numpy_arrays._is_generator(expr.func.value, scope)):
            return _random_elements(model, expr, qn, scope, bound)
        if short in _OF_SEQUENCE and positional(expr, 0) is not None:
            return _list_length(model, positional(expr, 0), scope, 0)
        if short in ("ones", "zeros", "empty", "full") and bound:
            shape_arg = positional(expr, 0) or keyword(expr, "shape")
            dims = shape_arg.elements if isinstance(shape_arg, (cst.Tuple, cst.List)) else None
            if dims is not None and dims and not any(isinstance(d, cst.StarredElement) for d in dims):
                values = [static_int(d.value, scope) for d in dims]
                if all(v is not None for v in values):
                    total = 1
                    for v in values:
                        total *= v  # type: ignore[operator]
                    return total
        counted = _counted(model, expr, short, scope, bound)
        if counted is not None:
            return counted
        if short in ("repeat", "tile") and positional(expr, 0) is not None:
            inner = _elements(model, positional(expr, 0), scope, depth + 1, bound)
            reps = positional(expr, 1) or keyword(expr, "repeats") or keyword(expr, "reps")
            times = _input_int(model, reps, scope, 0, bound) if reps is not None else None
            return inner * times if inner is not None and times is not None else None
        if (short in _KEEP or qn in _CONVERSIONS or qn in JNP_ELEMENTWISE or qn in _NUMPY_ELEMENTWISE) \
                and positional(expr, 0) is not None and short not in ("reshape", "tile", "repeat", "broadcast_to"):
            return _elements(model, positional(expr, 0), scope, depth + 1, bound)
        if qn is None and isinstance(expr.func, cst.Attribute) and expr.func.attr.value in (
                "astype", "copy", "ravel", "flatten", "squeeze", "T", "transpose", "clip", "round", "conj"):
            return _elements(model, expr.func.value, scope, depth + 1, bound)
        return None
    if isinstance(expr, cst.UnaryOperation):
        return _elements(model, expr.expression, scope, depth + 1, bound)
    if isinstance(expr, cst.Subscript):
        # Integer indices pick rows: `jnp.eye(5)[k]` is 5 elements.
        dims = _dims(model, expr.value, scope, bound)
        picked = 0
        for el in expr.slice:
            if not isinstance(el.slice, cst.Index) or _int(model, el.slice.value, scope, bound) is None:
                return None
            picked += 1
        if dims is None or picked > len(dims) or any(d is None for d in dims[picked:]):
            return None
        total = 1
        for d in dims[picked:]:
            total *= d  # type: ignore[operator]
        return total
    if isinstance(expr, cst.BinaryOperation):
        # At least as large as each array operand (a broadcast): the largest known one.
        sides = [_elements(model, s, scope, depth + 1, bound) for s in (expr.left, expr.right) if _is_array(model, s, scope)]
        known = [n for n in sides if n is not None]
        return max(known) if known else None
    if isinstance(expr, cst.Name):
        found = model.bindings_at(expr, scope)
        if found is None:
            return None
        declared = declared_elements(model, found[1])
        if declared is not None:
            return declared
        value = _single_value(model, expr, scope)
        if value is not None:
            return _elements(model, value[0], value[1], depth + 1, bound if value[1] is scope else {})
    return None


def _dims(model: ConstantContextView, e: cst.BaseExpression, scope: "Scope", bound: Bound) -> list | None:
    """The dimensions of an array expression, where known (`eye(n)` is n × n)."""
    if isinstance(e, cst.Call) and _short(model.qn(e.func, scope)) in ("eye", "identity"):
        n = _int(model, positional(e, 0) or keyword(e, "N"), scope, bound)
        m_expr = positional(e, 1) or keyword(e, "M")
        m = _int(model, m_expr, scope, bound) if m_expr is not None and not _is_none(m_expr) else n
        return [n, m]
    shape = model.shape(e, scope)
    if shape is None or shape.rank is None:
        return None
    return [shape.size(i) for i in range(shape.rank)]


def _counted(model: ConstantContextView, e: cst.Call, short: str | None, scope: "Scope", bound: Bound) -> int | None:
    """The size of `arange` / `linspace` / `fftfreq` / `ones`... whose count or shape is a traced
    input's (`np.arange(x.size)`, `np.ones(x.shape)`), where that input's shape is declared."""
    if short in ("arange", "fft.fftfreq"):
        arg = positional(e, 0) if len([a for a in e.args if a.keyword is None]) == 1 else None
    elif short in ("linspace", "logspace", "geomspace"):
        arg = keyword(e, "num") or positional(e, 2)
    elif short in ("ones", "zeros", "empty", "full"):
        arg = positional(e, 0) or keyword(e, "shape")
    else:
        return None
    if arg is None:
        return None
    n = _input_int(model, arg, scope, 0, bound)
    if n is not None and short == "fft.rfftfreq":
        return n // 2 + 1
    return n


def _input_int(model: ConstantContextView, e: cst.BaseExpression, scope: "Scope", depth: int,
               bound: Bound) -> int | None:
    """An integer (or a shape's element count) from literals and the declared shapes of traced
    values: `x.size`, `x.shape` (its product), `x.shape[0]`, `len(x)`, arithmetic of those."""
    if depth > 6:
        return None
    v = _int(model, e, scope, bound)
    if v is not None:
        return v
    if isinstance(e, (cst.Tuple, cst.List)) and e.elements:
        total = 1
        for el in e.elements:
            n = None if isinstance(el, cst.StarredElement) else _input_int(model, el.value, scope, depth + 1, bound)
            if n is None:
                return None
            total *= n
        return total
    if isinstance(e, cst.Attribute) and e.attr.value in ("size", "shape"):
        s = model.shape(e.value, scope)
        return s.total() if s is not None else None
    if isinstance(e, cst.Subscript) and isinstance(e.value, cst.Attribute) and e.value.attr.value == "shape" \
            and len(e.slice) == 1 and isinstance(e.slice[0].slice, cst.Index):
        axis = model.shapes.static_int(e.slice[0].slice.value, scope)
        s = model.shape(e.value.value, scope)
        return s.size(axis) if s is not None and axis is not None else None
    if isinstance(e, cst.Call) and model.qn(e.func, scope) == "builtins.len" and e.args:
        s = model.shape(e.args[0].value, scope)
        return s.size(0) if s is not None else None
    if isinstance(e, cst.BinaryOperation) and isinstance(e.operator, (cst.Add, cst.Subtract, cst.Multiply)):
        a, b = _input_int(model, e.left, scope, depth + 1, bound), _input_int(model, e.right, scope, depth + 1, bound)
        if a is None or b is None:
            return None
        return a + b if isinstance(e.operator, cst.Add) else a - b if isinstance(e.operator, cst.Subtract) else a * b
    if isinstance(e, cst.Name):
        value = _single_value(model, e, scope)
        if value is not None and value[1] is scope:
            return _input_int(model, value[0], scope, depth + 1, bound)
    return None


def _is_none(e: cst.BaseExpression) -> bool:
    return isinstance(e, cst.Name) and e.value == "None"


_RANDOM_DIMS = frozenset({"rand", "randn"})


def _random_elements(model: ConstantContextView, e: cst.Call, qn: str | None, scope: "Scope",
                     bound: Bound) -> int | None:
    from jaxfuse_lint.model.numpy_values import _RANDOM_SIZE_POSITION

    name = qn[len("numpy.random."):] if qn is not None else e.func.attr.value  # type: ignore[union-attr]
    shapes = model.shapes
    if name in _RANDOM_DIMS:
        total = 1
        for a in e.args:
            v = _int(model, a.value, scope, bound) if a.keyword is None and not a.star else None
            if v is None:
                return None
            total *= v
        return total
    arg = keyword(e, "size")
    if arg is None:  # the module's functions and a Generator's methods take `size` at the same place
        arg = positional(e, 0 if name in ("random", "random_sample", "ranf", "sample")
                         else 1 if name == "choice" else _RANDOM_SIZE_POSITION.get(name, 2))
    if arg is None or _is_none(arg):
        return None
    s = shapes.literal_shape(arg, scope)
    if (s is None or s.total() is None) and bound:
        return _input_int(model, arg, scope, 0, bound)
    return s.total() if s is not None else None


def _list_length(model: ConstantContextView, e: cst.BaseExpression, scope: "Scope", depth: int) -> int | None:
    """Items of a Python list: a display (nested displays multiply), `[... for i in range(N)]`."""
    if depth > 4:
        return None
    if isinstance(e, (cst.List, cst.Tuple)):
        if any(isinstance(el, cst.StarredElement) for el in e.elements):
            return None
        if not e.elements:
            return 0
        inner = [_list_length(model, el.value, scope, depth + 1) if isinstance(el.value, (cst.List, cst.Tuple))
                 else 1 for el in e.elements]
        return None if any(i is None for i in inner) else sum(inner)  # type: ignore[arg-type]
    if isinstance(e, cst.ListComp) and e.for_in.inner_for_in is None and not e.for_in.ifs:
        it = e.for_in.iter
        if isinstance(it, cst.Call) and model.qn(it.func, scope) == "builtins.range" and len(it.args) == 1:
            n = model.shapes.static_int(it.args[0].value, scope)
            if n is None:
                return None
            per = _list_length(model, e.elt, scope, depth + 1) if isinstance(e.elt, (cst.List, cst.Tuple)) else 1
            return n * per if per is not None else None
    if isinstance(e, cst.Name):
        value = _single_value(model, e, scope)
        if value is not None:
            return _list_length(model, value[0], value[1], depth + 1)
    return None


def declared_elements(model: ConstantContextView, bindings: "list[Binding]") -> int | None:
    """The size a jaxtyping annotation declares on the name's one binding."""
    if len(bindings) != 1 or bindings[0].kind != "annassign":
        return None
    stmt = bindings[0].node
    ann = getattr(stmt, "annotation", None)
    ann = ann.annotation if isinstance(ann, cst.Annotation) else None
    if not isinstance(ann, cst.Subscript) or len(ann.slice) != 2:
        return None
    dims = ann.slice[1].slice
    if not isinstance(dims, cst.Index) or not isinstance(dims.value, cst.SimpleString):
        return None
    shape = parse_jaxtyping_dims(dims.value.evaluated_value if isinstance(dims.value.evaluated_value, str) else "")
    return shape.total() if shape is not None else None


def _itemsize(model: ConstantContextView, expr: cst.BaseExpression, scope: "Scope") -> int:
    """Bytes per element where a `dtype=` or `.astype(...)` names a narrow type, else 4 (the
    canonical 32-bit dtypes of NumPy's float64/int64 without x64)."""
    node = expr
    for _ in range(4):
        dtype = None
        if isinstance(node, cst.Call):
            dtype = keyword(node, "dtype")
            if isinstance(node.func, cst.Attribute) and node.func.attr.value == "astype":
                dtype = positional(node, 0)
        if dtype is not None:
            text = dtype.value if isinstance(dtype, cst.Name) else dtype.attr.value if isinstance(dtype, cst.Attribute) \
                else dtype.evaluated_value if isinstance(dtype, cst.SimpleString) else None
            return _ITEMSIZE.get(str(text), 4)
        parent = model.parent(node)
        if isinstance(parent, cst.Attribute) and parent.value is node:
            node = model.parent(parent) or parent
            continue
        break
    return 4


def _input_kind(model: ConstantContextView, expr: cst.BaseExpression, scope: "Scope", depth: int) -> str | None:
    """"input_size" / "input_dim" when the builder's size comes from a traced value's shape."""
    if depth > 4:
        return None
    call = expr
    while isinstance(call, cst.Call) and isinstance(call.func, cst.Attribute) and model.qn(call.func, scope) is None:
        call = call.func.value  # `.reshape(x.shape)` and other methods: the builder's own arguments
    if not isinstance(call, cst.Call):
        return None
    found: set[str] = set()
    for arg in call.args:
        found |= _shape_reads(model, arg.value, scope, depth)
    if "input_size" in found:
        return "input_size"
    return "input_dim" if found else None


def _shape_reads(model: ConstantContextView, e: cst.CSTNode, scope: "Scope", depth: int) -> set[str]:
    out: set[str] = set()
    stack = [e]
    while stack:
        n = stack.pop()
        if isinstance(n, cst.Attribute) and n.attr.value in ("size", "shape") and model.kind(n.value, scope) is Kind.TRACED:
            parent = model.parent(n)
            out.add("input_dim" if n.attr.value == "shape" and isinstance(parent, cst.Subscript)
                    and parent.value is n else "input_size")
            continue
        if isinstance(n, cst.Call) and model.qn(n.func, scope) == "builtins.len" and n.args \
                and model.kind(n.args[0].value, scope) is Kind.TRACED:
            out.add("input_dim")
            continue
        if isinstance(n, cst.Name) and depth < 4:
            value = _single_value(model, n, scope)
            if value is not None and value[1] is scope:
                out |= _shape_reads(model, value[0], scope, depth + 1)
            continue
        stack.extend(n.children)
    return out


# -- use ----------------------------------------------------------------------------------------------

def use(model: ConstantContextView, node: cst.CSTNode, scope: "Scope", depth: int = 0) -> str | None:
    """How the program reads the value of `node` (see the module's docstring)."""
    if depth > 4:
        return None
    cur = node
    index: int | None = None  # the position in a tuple the value is an element of
    for _ in range(24):
        parent = model.parent(cur)
        if parent is None:
            return None
        if isinstance(parent, cst.Element) and index is None:
            container = model.parent(parent)
            if isinstance(container, cst.Tuple) and parent in container.elements:
                index = list(container.elements).index(parent)
                cur = container
                continue
            return None
        if isinstance(parent, cst.Return) and parent.value is cur:
            return _returned_use(model, scope, index, depth)
        if isinstance(parent, cst.Assign) and index is not None and len(parent.targets) == 1:
            target = parent.targets[0].target
            if isinstance(target, cst.Tuple) and index < len(target.elements) \
                    and isinstance(target.elements[index].value, cst.Name):
                return _name_use(model, target.elements[index].value, scope, depth)
            return None
        if index is not None:
            return None
        if isinstance(parent, cst.Subscript) and parent.value is cur:
            if any(isinstance(el.slice, cst.Index) and model.kind(el.slice.value, scope) is Kind.TRACED
                   for el in parent.slice):
                return "table"  # `jnp.asarray(C)[i]`
            cur = parent
            continue
        if isinstance(parent, cst.Index):
            sub = model.parent(model.parent(parent))
            if isinstance(sub, cst.Subscript):
                base = sub.value
                if isinstance(base, cst.Attribute) and base.attr.value == "at":
                    return None  # scatter indices: not calibrated
                if model.kind(base, scope) is Kind.TRACED:
                    return "index"
            return None
        if isinstance(parent, cst.Attribute) and parent.value is cur:
            if parent.attr.value not in _KEEP_METHODS:
                return None
            grand = model.parent(parent)
            cur = grand if isinstance(grand, cst.Call) and grand.func is parent else parent
            continue
        if isinstance(parent, cst.BinaryOperation):
            other = parent.right if parent.left is cur else parent.left
            if model.kind(other, scope) is Kind.TRACED or not _host_value(model, other, scope):
                # With a tracer — or a value not known to be a host constant (`helpers.g(x)`, another
                # module's result): the program computes it.
                return "matmul" if isinstance(parent.operator, cst.MatrixMultiply) else "elementwise"
            cur = parent  # NumPy arithmetic on the host (`K ** 2`, `C * 0.5`): where the result goes
            continue
        if isinstance(parent, cst.UnaryOperation):
            cur = parent
            continue
        if isinstance(parent, cst.Arg) and parent.value is cur:
            call = model.parent(parent)
            if not isinstance(call, cst.Call):
                return None
            qn = model.qn(call.func, scope)
            short = _short(qn)
            first = call.args[0] is parent if call.args else False
            if qn in _TAKES:
                return "table" if first else "index"
            if short in _MATMULS or qn in _LAX_MATMULS:
                return "matmul"
            if qn in _CONVERSIONS or (qn is not None and (qn in _NUMPY_ELEMENTWISE or short in _KEEP)):
                cur = call
                continue
            if qn in JNP_ELEMENTWISE:
                if any(a is not parent and model.kind(a.value, scope) is Kind.TRACED for a in call.args):
                    return "elementwise"
                cur = call
                continue
            return None
        if isinstance(parent, cst.Assign) and len(parent.targets) == 1 and isinstance(parent.targets[0].target, cst.Name):
            return _name_use(model, parent.targets[0].target, scope, depth)
        return None
    return None


def program_op(model: ConstantContextView, node: cst.CSTNode, scope: "Scope") -> str | None:
    """The `jax` operation the value at `node` is passed to directly (`jnp.fft.fft(pulse)`), as
    written: it reaches the compiled program, through a use `use()` does not name."""
    parent = model.parent(node)
    call = model.parent(parent) if isinstance(parent, cst.Arg) and parent.value is node else None
    if not isinstance(call, cst.Call):
        return None
    qn = model.qn(call.func, scope)
    if qn is None or not qn.startswith("jax."):
        return None
    return model.module.code_for_node(call.func)


def _returned_use(model: ConstantContextView, fn: "Scope", index: int | None, depth: int) -> str | None:
    """The one use, at every call of the module's function `fn`, of what it returns (of element
    `index` of the tuple it returns: `senders, receivers = ring(n)`)."""
    from jaxfuse_lint.model.scopes import Function

    if not isinstance(fn, Function) or fn.is_lambda:
        return None
    uses = set()
    for site in model.index.calls:
        func = site.call.func
        if not (isinstance(func, cst.Name) and model.function_named(func.value, site.scope) is fn):
            continue
        if index is None:
            uses.add(use(model, site.call, site.scope, depth + 1))
            continue
        parent = model.parent(site.call)
        if not (isinstance(parent, cst.Assign) and len(parent.targets) == 1):
            return None
        target = parent.targets[0].target
        if not (isinstance(target, cst.Tuple) and index < len(target.elements)
                and isinstance(target.elements[index].value, cst.Name)):
            return None
        uses.add(_name_use(model, target.elements[index].value, site.scope, depth + 1))
    return uses.pop() if len(uses) == 1 else None


def _name_use(model: ConstantContextView, target: cst.Name, scope: "Scope", depth: int) -> str | None:
    """The one use of every read of a local name bound here, or None."""
    from jaxfuse_lint.model.scopes import Function

    if not isinstance(scope, Function):
        return None
    uses = set()
    for read in scope.reads:
        if read.name.value != target.value:
            continue
        found = model.bindings_at(read.name, scope)
        if found is None or found[0] is not scope or not any(b.target is target for b in found[1]):
            continue
        uses.add(use(model, read.name, scope, depth + 1))
    for inner in scope.nested:
        for read in inner.reads:
            if read.name.value == target.value:
                found = model.bindings_at(read.name, inner)
                if found is not None and found[0] is scope:
                    uses.add(use(model, read.name, inner, depth + 1))
    return uses.pop() if len(uses) == 1 else None
