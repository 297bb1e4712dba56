"""Which expressions are NumPy arrays built on the host (and so folded into a traced program).

`np.arange(n)`, `np.linspace(...)`, `np.random.normal(...)`, and array math on
them (`np.sin(np.arange(n))`, `np.arange(n).reshape(s) ** 2`) are arrays.
`np.prod(x.shape)`, `np.pi`, `np.float32(2.0)`, dtypes, and `np.array` of a
literal list (a handful of numbers, folding costs nothing) are not.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

from jaxfuse_lint.model.api import NUMPY_ARRAY_BUILDERS, NUMPY_SCALAR_NAMES
from jaxfuse_lint.model.traced import positional

if TYPE_CHECKING:
    from jaxfuse_lint.model.scopes import Scope
    from jaxfuse_lint.model.semantic import SemanticModel

_RANDOM_NOT_ARRAYS = frozenset({
    "numpy.random.seed", "numpy.random.default_rng", "numpy.random.RandomState", "numpy.random.Generator",
    "numpy.random.get_state", "numpy.random.set_state", "numpy.random.SeedSequence", "numpy.random.PCG64",
})
_SCALAR_METHODS = frozenset({"item", "tolist", "tobytes", "sum", "mean", "max", "min", "prod", "std", "var", "any", "all", "argmax", "argmin"})
_NUMPY_REDUCTIONS = frozenset(
    "numpy." + n for n in "sum prod max min amax amin mean median std var any all argmax argmin count_nonzero ptp".split()
)
_LITERAL_WRAPPERS = frozenset({"numpy.array", "numpy.asarray", "numpy.ascontiguousarray", "numpy.asanyarray"})


def _is_literal(e: cst.BaseExpression) -> bool:
    if isinstance(e, (cst.Integer, cst.Float, cst.Imaginary, cst.SimpleString)):
        return True
    if isinstance(e, cst.UnaryOperation):
        return _is_literal(e.expression)
    if isinstance(e, (cst.List, cst.Tuple)):
        return all(not isinstance(el, cst.StarredElement) and _is_literal(el.value) for el in e.elements)
    if isinstance(e, cst.Name):
        return e.value in ("True", "False", "None")
    return False


class NumpyArrays:
    def __init__(self, model: "SemanticModel") -> None:
        self.model = model
        self._memo: dict[tuple[int, int], bool] = {}

    def is_array(self, e: cst.CSTNode, scope: "Scope", depth: int = 0) -> bool:
        key = (id(e), id(scope))
        if key in self._memo:
            return self._memo[key]
        self._memo[key] = False  # cycles: not an array
        result = depth < 30 and self._is_array(e, scope, depth + 1)
        self._memo[key] = result
        return result

    def is_numpy_call(self, e: cst.CSTNode, scope: "Scope") -> str | None:
        """The numpy function a call (or `np.mgrid[...]`) makes, if any."""
        if isinstance(e, cst.Call):
            qn = self.model.qn(e.func, scope)
            return qn if qn is not None and qn.startswith("numpy.") else None
        if isinstance(e, cst.Subscript):
            qn = self.model.qn(e.value, scope)
            return qn if qn in ("numpy.mgrid", "numpy.ogrid", "numpy.r_", "numpy.c_") else None
        return None

    def _is_array(self, e: cst.CSTNode, scope: "Scope", depth: int) -> bool:
        m = self.model
        if isinstance(e, cst.Call):
            qn = m.qn(e.func, scope)
            if qn is not None and qn.startswith("numpy."):
                if qn in _LITERAL_WRAPPERS:
                    arg = positional(e, 0)
                    return arg is not None and not _is_literal(arg) and self.is_array(arg, scope, depth)
                if qn.startswith("numpy.random."):
                    return qn not in _RANDOM_NOT_ARRAYS
                if qn in NUMPY_ARRAY_BUILDERS:
                    return True
                if qn in _NUMPY_REDUCTIONS and not any(a.keyword is not None and a.keyword.value == "axis" for a in e.args) \
                        and positional(e, 1) is None:
                    return False  # a whole-array reduction is a scalar
                if qn in NUMPY_SCALAR_NAMES and not any(self.is_array(a.value, scope, depth) for a in e.args):
                    return False
                # Array math: an array when one of its arguments is.
                return any(self.is_array(a.value, scope, depth) for a in e.args)
            if qn is None and isinstance(e.func, cst.Attribute):
                if e.func.attr.value in _SCALAR_METHODS and not e.args:
                    return False
                return self.is_array(e.func.value, scope, depth)
            return False
        if isinstance(e, cst.Subscript):
            if self.is_numpy_call(e, scope):
                return True
            return self.is_array(e.value, scope, depth)
        if isinstance(e, cst.BinaryOperation):
            return (self.is_array(e.left, scope, depth) or self.is_array(e.right, scope, depth)) and \
                self.model.kind(e.left, scope).value != "traced" and self.model.kind(e.right, scope).value != "traced"
        if isinstance(e, cst.UnaryOperation):
            return self.is_array(e.expression, scope, depth)
        if isinstance(e, cst.Attribute) and e.attr.value in ("T", "real", "imag", "flat"):
            return self.is_array(e.value, scope, depth)
        if isinstance(e, cst.Name):
            found = m.bindings_at(e, scope)
            if found is None:
                return False
            owner, bindings = found
            return self.binding_is_array(bindings, owner, depth)
        return False

    def binding_is_array(self, bindings, owner: "Scope", depth: int = 0) -> bool:
        """All of a name's bindings give it a NumPy array."""
        if not bindings:
            return False
        for b in bindings:
            if b.kind not in ("assign", "annassign", "augassign", "walrus") or b.value is None:
                return False
            value = b.value
            if b.index is not None and isinstance(value, (cst.Tuple, cst.List)):
                value = value.elements[b.index].value
            if b.kind == "augassign":
                continue  # `a += 1` keeps an array an array
            if not self.is_array(value, owner, depth):
                return False
        return any(b.kind != "augassign" for b in bindings)
