"""The shapes calls give: `jnp`/`numpy` array creation (`zeros`, `arange`, `linspace`,
`array([...])`, `stack`, `column_stack`, `meshgrid`), reshapes, layout functions, FFTs,
reductions, elementwise functions, explicit shapes of `jax.random` draws, array methods,
and the return values of the module's own functions and (through the project index) of
other modules' functions."""
from __future__ import annotations

import math
from typing import TYPE_CHECKING, Callable

import libcst as cst

from jaxfuse_lint.model.api import JNP_ELEMENTWISE
from jaxfuse_lint.model.shape_layout import (_FFT_REAL, _FFT_SAME_SHAPE, _concatenate, _insert_axis, _moveaxis,
                                             _real_fft, _swapaxes, _transpose)
from jaxfuse_lint.model.shape_literals import LiteralSizes, _int_literal
from jaxfuse_lint.model.shapes import SCALAR, Shape, broadcast
from jaxfuse_lint.model.traced import keyword, positional

if TYPE_CHECKING:
    from jaxfuse_lint.model.scopes import Function, Scope
    from jaxfuse_lint.model.shape_view import ShapeView
    from jaxfuse_lint.model.view import ModelView

# Reductions that, without an axis, produce a scalar.
_FULL_REDUCTIONS = frozenset("sum mean prod max min amax amin std var any all argmax argmin linalg.norm vdot".split())


# jax.random draws whose `shape` is the result's shape, and its positional place.
_RANDOM_SHAPE_POSITION = {
    "normal": 1, "uniform": 1, "randint": 1, "bits": 1, "exponential": 1, "gumbel": 1, "laplace": 1,
    "logistic": 1, "cauchy": 1, "rademacher": 1, "maxwell": 1, "double_sided_maxwell": 3, "weibull_min": 3,
    "bernoulli": 2, "poisson": 2, "gamma": 2, "loggamma": 2, "t": 2, "chisquare": 2, "rayleigh": 2,
    "pareto": 2, "geometric": 2, "beta": 3, "truncated_normal": 3, "binomial": 3, "f": 3, "triangular": 4,
    "lognormal": 2, "generalized_normal": 2, "wald": 2,
}


# Scalar types, called as functions (`jnp.float32(x)`: x's values in that dtype).
_SCALAR_TYPES = frozenset("float16 float32 float64 bfloat16 int8 int16 int32 int64 uint8 uint16 uint32 uint64 "
                          "complex64 complex128 bool_".split())

_NOT_HANDLED = object()  # `_layout_call` of a function that is not a layout change


# The key of an imported callee's return shape in the model's `external_shapes` (model/return_shapes.py).
def callee_key(model: "ModelView", func: cst.BaseExpression, scope: "Scope") -> str | None:
    """An imported callee as `import_spellings` spells it (`..mesh.components`), or None."""
    if isinstance(func, cst.Attribute):
        base = callee_key(model, func.value, scope)
        return f"{base}.{func.attr.value}" if base else None
    if not isinstance(func, cst.Name):
        return None
    found = model.lookup(func.value, scope)
    if found is None or not found[1] or any(b.kind != "import" for b in found[1]):
        return None
    names = {b.qualified_name for b in found[1]}
    return names.pop() if len(names) == 1 else None


class CallShapes(LiteralSizes):
    """The shape of a call (a base of ShapeAnalysis, whose `shape` it recurses into)."""

    model: "ShapeView"
    cross_module: bool
    shape: Callable[..., Shape | None]

    # -- calls -------------------------------------------------------------------------------------
    def _call(self, e: cst.Call, scope: "Scope", depth: int) -> Shape | None:
        m = self.model
        qn = m.qn(e.func, scope)
        if qn is None and isinstance(e.func, cst.Attribute):
            found = self._method(e, scope, depth)
            # `mesh.components(x)` with `from . import mesh`: another module's function.
            return found if found is not None else self._imported_return_shape(e.func, scope)
        if qn is None:
            if isinstance(e.func, cst.Name):
                callee = m.function_named(e.func.value, scope)
                if callee is not None and callee.returns:
                    return self.return_shape(callee, depth)
            return self._imported_return_shape(e.func, scope)
        if qn in ("builtins.len", "builtins.int", "builtins.float", "builtins.round", "builtins.bool"):
            return SCALAR
        if not qn.startswith(("jax.", "numpy.")):
            return self._imported_return_shape(e.func, scope)  # a function of another project module
        name = qn[len("jax.numpy."):] if qn.startswith("jax.numpy.") else qn[len("numpy."):] if qn.startswith("numpy.") else None
        if name is not None:
            found = self._layout_call(name, e, scope, depth)
            if found is not _NOT_HANDLED:
                return found
        if name in ("stack",):
            seq = positional(e, 0)
            axis = _int_literal(keyword(e, "axis") or positional(e, 1)) if (keyword(e, "axis") or positional(e, 1)) is not None else 0
            grids = self._meshgrid_count(seq, scope)
            if axis is not None and grids is not None:
                return _insert_axis(None, axis, grids)  # `stack(meshgrid(a, b), axis=-1)` ends in 2
            if axis is None or not isinstance(seq, (cst.List, cst.Tuple)) or any(isinstance(el, cst.StarredElement) for el in seq.elements):
                return None
            n = len(seq.elements)
            elem = None
            for i, el in enumerate(seq.elements):
                s = self.shape(el.value, scope, depth)
                elem = s if i == 0 else broadcast(elem, s) if (elem is not None and s is not None) else None
            return _insert_axis(elem, axis, n)
        if name in ("array", "asarray") and isinstance(positional(e, 0), (cst.List, cst.Tuple)):
            return self._literal_array(positional(e, 0), scope, depth)
        if name in ("array", "asarray") and keyword(e, "ndmin") is None:
            grids = self._meshgrid_count(positional(e, 0), scope)
            if grids is not None:
                return Shape.make(None, {0: grids})  # `array(meshgrid(a, b, c))` starts with 3
        if qn.startswith("jax.random."):
            return self._random_shape(qn[len("jax.random."):], e, scope)
        if name == "column_stack":
            seq = positional(e, 0)
            if isinstance(seq, (cst.List, cst.Tuple)):
                shapes = [self.shape(el.value, scope, depth) for el in seq.elements]
                if shapes and all(s is not None and s.rank == 1 for s in shapes):
                    return Shape.make(2, None, {-1: len(shapes)})
            return None
        if name in _SCALAR_TYPES and len(e.args) == 1 and e.args[0].keyword is None:
            # `jnp.float32(0)`: a scalar type called on a value keeps its shape (a scalar of a scalar).
            inner = self.shape(e.args[0].value, scope, depth)
            return inner if inner is not None and inner.rank == 0 else None
        if name in ("zeros", "ones", "empty", "full"):
            return self.literal_shape(positional(e, 0) or keyword(e, "shape"), scope)
        if name in ("zeros_like", "ones_like", "empty_like", "full_like"):
            return self.shape(positional(e, 0), scope, depth) if positional(e, 0) is not None else None
        if name == "reshape":
            return self.literal_shape(positional(e, 1) or keyword(e, "shape") or keyword(e, "newshape"), scope)
        if name in ("ravel", "flatnonzero") or qn == "jax.numpy.ndarray.flatten":
            return Shape.make(1)
        if name in ("arange", "linspace", "fft.fftfreq", "fft.rfftfreq"):
            size = None
            if name == "arange":
                size = self._arange_size(e, scope)
            if name == "linspace":
                num = keyword(e, "num") or positional(e, 2)
                size = self.static_int(num, scope) if num is not None else 50
            if name in ("fft.fftfreq", "fft.rfftfreq"):
                n = self.static_int(positional(e, 0) or keyword(e, "n"), scope)
                if n is not None and n > 0:
                    size = n if name == "fft.fftfreq" else n // 2 + 1
            return Shape.make(1, {0: size} if size is not None else None)
        if name in _FULL_REDUCTIONS and (keyword(e, "axis") is None and positional(e, 1) is None) \
                and keyword(e, "keepdims") is None:
            return SCALAR
        if qn in JNP_ELEMENTWISE:
            shapes = [self.shape(a.value, scope, depth) for a in e.args if a.keyword is None]
            if name in ("asarray", "array", "astype"):
                shapes = shapes[:1]
            if not shapes:
                return None
            out = shapes[0]
            for s in shapes[1:]:
                out = broadcast(out, s)
            return out
        return None

    def _meshgrid_count(self, seq: cst.BaseExpression | None, scope: "Scope", depth: int = 0) -> int | None:
        """How many arrays `meshgrid(a, b, ...)` gives (one per argument; dense grids only, all
        of one shape), looked up through a name bound once to it."""
        if isinstance(seq, cst.Name) and depth < 3:
            found = self.model.lookup(seq.value, scope)
            if found is None or len(found[1]) != 1:
                return None
            b = found[1][0]
            if b.kind != "assign" or b.index is not None:
                return None
            return self._meshgrid_count(b.value, found[0], depth + 1)
        if not isinstance(seq, cst.Call) or self.model.qn(seq.func, scope) not in ("jax.numpy.meshgrid", "numpy.meshgrid"):
            return None
        sparse = keyword(seq, "sparse")
        if sparse is not None and not (isinstance(sparse, cst.Name) and sparse.value == "False"):
            return None
        if any(a.star for a in seq.args):
            return None
        n = sum(1 for a in seq.args if a.keyword is None)
        return n if n >= 1 else None

    def _random_shape(self, name: str, e: cst.Call, scope: "Scope") -> Shape | None:
        """`jax.random.normal(key, (3,))`, `uniform(key, shape=(5, 2))`: a draw with an explicit
        shape has exactly that shape."""
        position = _RANDOM_SHAPE_POSITION.get(name)
        if position is None:
            return None
        shape = keyword(e, "shape")
        if shape is None:
            shape = positional(e, position)
        if shape is None:
            return None
        return self.literal_shape(shape, scope)

    def return_shape(self, callee: "Function", depth: int = 0) -> Shape | None:
        """The shape every `return` of one of the module's functions gives (None if they differ)."""
        shapes = [self.shape(r, callee, depth) for r in callee.returns]
        if shapes and all(s == shapes[0] for s in shapes):
            return shapes[0]
        return None

    def _imported_return_shape(self, func: cst.BaseExpression, scope: "Scope") -> Shape | None:
        """The return shape of another module's function, from the project index."""
        if not self.cross_module or not self.model.external_shapes:
            return None
        key = callee_key(self.model, func, scope)
        return self.model.external_shapes.get(key) if key is not None else None

    def _arange_size(self, e: cst.Call, scope: "Scope") -> int | None:
        """`arange(n)`, `arange(3.0)`, `arange(a, b)`, `arange(a, b, step)` of known numbers."""
        args = [a.value for a in e.args if a.keyword is None]
        start_kw, stop_kw, step_kw = keyword(e, "start"), keyword(e, "stop"), keyword(e, "step")
        if start_kw is not None or stop_kw is not None:
            return None
        values = [self._static_number(a, scope) for a in args]
        if step_kw is not None:
            values.append(self._static_number(step_kw, scope))
        if not values or any(v is None for v in values):
            return None
        if len(values) == 1:
            start, stop, step = 0, values[0], 1
        elif len(values) == 2:
            (start, stop), step = values, 1
        else:
            start, stop, step = values[:3]
        if step == 0:
            return None
        return max(0, math.ceil((stop - start) / step))

    def _layout_call(self, name: str, e: cst.Call, scope: "Scope", depth: int):
        """Functions that move, join or keep axes: transpose, swapaxes, moveaxis, expand_dims,
        concatenate, FFTs. `_NOT_HANDLED` for any other."""
        first = positional(e, 0) or keyword(e, "a") or keyword(e, "x")
        if name in ("transpose", "permute_dims", "matrix_transpose", "swapaxes", "moveaxis", "expand_dims"):
            base = self.shape(first, scope, depth) if first is not None else None
            if name == "transpose" or name == "permute_dims":
                axes = keyword(e, "axes") or positional(e, 1)
                if axes is None:
                    return _transpose(base, None)
                if not isinstance(axes, (cst.Tuple, cst.List)):
                    return None
                return _transpose(base, [self.static_int(el.value, scope) for el in axes.elements])
            if name == "matrix_transpose":
                return _swapaxes(base, -1, -2)
            a, b = positional(e, 1), positional(e, 2)
            if name == "swapaxes":
                return _swapaxes(base, self.static_int(a or keyword(e, "axis1"), scope),
                                 self.static_int(b or keyword(e, "axis2"), scope))
            if name == "moveaxis":
                return _moveaxis(base, self.static_int(a or keyword(e, "source"), scope),
                                 self.static_int(b or keyword(e, "destination"), scope))
            axis = self.static_int(a or keyword(e, "axis"), scope)
            return _insert_axis(base, axis, 1) if axis is not None else None
        if name in ("concatenate", "concat"):
            seq = first if first is not None else keyword(e, "arrays")
            axis_e = keyword(e, "axis") or positional(e, 1)
            axis = self.static_int(axis_e, scope) if axis_e is not None else 0
            if axis is None or not isinstance(seq, (cst.List, cst.Tuple)) or not seq.elements or \
                    any(isinstance(el, cst.StarredElement) for el in seq.elements):
                return None
            return _concatenate([self.shape(el.value, scope, depth) for el in seq.elements], axis)
        if name.startswith("fft."):
            fname = name[4:]
            if fname in ("fftshift", "ifftshift"):
                return self.shape(first, scope, depth) if first is not None else None
            if fname in _FFT_SAME_SHAPE or fname in _FFT_REAL:
                if keyword(e, "n") is not None or keyword(e, "s") is not None or positional(e, 1) is not None:
                    return None  # padded or cropped
                base = self.shape(first, scope, depth) if first is not None else None
                if base is None:
                    return None
                if fname in _FFT_SAME_SHAPE:
                    return base
                return _real_fft(base, fname, e)
            return _NOT_HANDLED
        return _NOT_HANDLED

    def _method(self, e: cst.Call, scope: "Scope", depth: int) -> Shape | None:
        attr = e.func.attr.value  # type: ignore[union-attr]
        if attr in _FULL_REDUCTIONS and not e.args:
            return SCALAR
        if attr == "reshape":
            if len(e.args) == 1:
                return self.literal_shape(e.args[0].value, scope)
            return self.literal_shape(cst.Tuple([cst.Element(a.value) for a in e.args]), scope)
        if attr in ("transpose", "swapaxes"):
            base = self.shape(e.func.value, scope, depth)  # type: ignore[union-attr]
            args = [a.value for a in e.args if a.keyword is None]
            if attr == "transpose":
                if len(args) == 1 and isinstance(args[0], (cst.Tuple, cst.List)):
                    args = [el.value for el in args[0].elements]
                return _transpose(base, [self.static_int(a, scope) for a in args] if args else None)
            if len(args) == 2:
                return _swapaxes(base, self.static_int(args[0], scope), self.static_int(args[1], scope))
            return None
        if attr in ("ravel", "flatten") and not e.args:
            return Shape.make(1)
        if attr in ("astype", "conj", "conjugate", "copy", "clip", "round"):
            return self.shape(e.func.value, scope, depth)  # type: ignore[union-attr]
        return None

    def _literal_array(self, seq: cst.BaseExpression, scope: "Scope", depth: int) -> Shape | None:
        if not isinstance(seq, (cst.List, cst.Tuple)) or not seq.elements:
            return None
        if any(isinstance(el, cst.StarredElement) for el in seq.elements):
            return None
        n = len(seq.elements)
        inner = [self._literal_array(el.value, scope, depth) if isinstance(el.value, (cst.List, cst.Tuple))
                 else self.shape(el.value, scope, depth) for el in seq.elements]
        first = inner[0]
        if first is not None and all(s == first for s in inner):
            return _insert_axis(first, 0, n)
        return Shape.make(None, {0: n})
