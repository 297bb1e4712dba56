"""Which expressions are JAX (device) arrays computed outside traced code.

A `jax.Array` bound at module level (`K = jnp.linspace(0, 1, 4096)`, `X = jax.device_put(data)`)
or in an enclosing eager function, and read by a jitted function, is not an argument: jit
folds its value into the compiled program as a constant, exactly as it does a NumPy array
(measured with `jaxfuse-lint verify` on CPU, jax 0.10.2: a captured `float32[65536]` is
256 KiB of folded constants; passed as an argument or built inside, 0 B).

Arrays are what jax creates with a size (`jnp.zeros`/`linspace`/`arange`/`meshgrid`/
`indices`/`fftfreq`..., `jax.random.*` with a shape), sparse arrays (`BCOO((data, indices), ...)`,
`BCOO.fromdense(M)`: they carry arrays in their fields), conversions of NumPy or jax arrays
(`jnp.asarray(data)`, `jax.device_put(x)`), and math, indexing, methods and views of
those, and the module's own functions whose every `return` is one. Not arrays: shapes,
dtypes and predicates (`jnp.shape`, `jnp.finfo`), PRNG keys (a key is a couple of words),
and jax results of Python numbers or of values of unknown size (`f32(box)`,
`r_cutoff ** 2`: most often a 0-d array, whose folding costs nothing).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

import libcst as cst

from jaxfuse_lint.model.api import JNP_CREATORS, JNP_STATIC_FUNCTIONS
from jaxfuse_lint.model.numpy_values import MemoizedArrays, NumpyArrays
from jaxfuse_lint.model.traced import keyword, positional
from jaxfuse_lint.model.values import ARRAY_NAMESPACES
from jaxfuse_lint.model.view import ModelView

if TYPE_CHECKING:
    from jaxfuse_lint.model.scopes import Function, Scope


class DeviceView(ModelView, Protocol):
    """What the device-array analysis reads of the model besides its structure and names."""

    def is_traced(self, fn: Function | None) -> bool: ...

    @property
    def numpy_arrays(self) -> NumpyArrays: ...

_KEYS = frozenset({
    "jax.random.PRNGKey", "jax.random.key", "jax.random.split", "jax.random.fold_in", "jax.random.key_data",
    "jax.random.wrap_key_data", "jax.random.clone", "jax.random.key_impl",
})
# Creators besides api.JNP_CREATORS: arrays whose size comes from their arguments.
_MORE_CREATORS = frozenset("jax.numpy." + n for n in (
    "tril_indices triu_indices diag_indices hanning hamming blackman bartlett kaiser vander fromfunction "
    "frombuffer load loadtxt".split()
))
_SPARSE = "jax.experimental.sparse."
_SPARSE_CLASSES = frozenset({"BCOO", "BCSR", "CSR", "CSC", "COO"})
_NOT_ARRAY_METHODS = frozenset({"item", "tolist", "tobytes", "__array__", "copy_to_host_async"})
_VIEWS = frozenset({"T", "mT", "real", "imag", "at"})
_BATCHING = frozenset({"jax.vmap", "jax.pmap"})


class DeviceArrays(MemoizedArrays):
    model: "DeviceView"

    def _is_array(self, e: cst.CSTNode, scope: "Scope", depth: int) -> bool:
        m = self.model
        if isinstance(e, cst.Call):
            qn = m.qn(e.func, scope)
            if qn is not None:
                if qn in JNP_STATIC_FUNCTIONS or qn in _KEYS or qn.startswith(("jax.tree", "jax.dtypes")):
                    return False
                if (qn in JNP_CREATORS or qn in _MORE_CREATORS) and not qn.endswith("_like"):
                    return True  # an array of a size given by its arguments (`jnp.linspace(0, 1, 4096)`)
                if qn.startswith("jax.random."):
                    shape = keyword(e, "shape") or positional(e, 1)
                    return shape is not None and not (isinstance(shape, (cst.Tuple, cst.List)) and not shape.elements)
                if qn.startswith(_SPARSE):
                    # A sparse array carries its data and indices: `BCOO((data, indices), shape=...)`,
                    # `BCOO.fromdense(M)`, `BCOO.from_scipy_sparse(S)` (always arrays of its entries).
                    rest = qn[len("jax.experimental.sparse."):]
                    if rest.endswith(".from_scipy_sparse"):
                        return True
                    first = positional(e, 0)
                    if rest in _SPARSE_CLASSES and isinstance(first, (cst.Tuple, cst.List)):
                        return any(self.is_array(el.value, scope, depth) or m.numpy_arrays.is_array(el.value, scope)
                                   for el in first.elements)
                if qn.startswith(ARRAY_NAMESPACES) or qn == "jax.device_put":
                    # Conversions and math follow their inputs: an array from a NumPy or jax
                    # array, a scalar from a Python number or a parameter of unknown size.
                    return any(self.is_array(a.value, scope, depth) or m.numpy_arrays.is_array(a.value, scope)
                               for a in e.args if a.keyword is None or a.keyword.value in ("x", "a", "arr"))
                return False
            if self._batched(e.func, scope, 0):
                return True  # `jax.vmap(jax.jit(simulate))(thetas)`: arrays with a batch axis
            if isinstance(e.func, cst.Attribute):
                if e.func.attr.value in _NOT_ARRAY_METHODS:
                    return False
                return self.is_array(e.func.value, scope, depth)
            if isinstance(e.func, cst.Name):
                callee = m.function_named(e.func.value, scope)
                if callee is not None and callee.returns and not callee.is_lambda and not m.is_traced(callee):
                    return all(self.is_array(r, callee, depth) for r in callee.returns)
            return False
        if isinstance(e, cst.Subscript):
            return self.is_array(e.value, scope, depth)
        if isinstance(e, cst.BinaryOperation):
            return self.is_array(e.left, scope, depth) or self.is_array(e.right, scope, depth)
        if isinstance(e, cst.UnaryOperation):
            return self.is_array(e.expression, scope, depth)
        if isinstance(e, cst.Attribute) and e.attr.value in _VIEWS:
            return self.is_array(e.value, scope, depth)
        if isinstance(e, cst.Name):
            found = m.bindings_at(e, scope)
            if found is None:
                return False
            return self.binding_is_array(found[1], found[0], depth)
        return False

    def _batched(self, func: cst.BaseExpression, scope: "Scope", depth: int) -> bool:
        """`jax.vmap(f)` / `jax.pmap(f)` (of a jitted f too), or a name bound once to one: called,
        it gives arrays with a leading batch axis (never a 0-d array)."""
        m = self.model
        if isinstance(func, cst.Call):
            return m.qn(func.func, scope) in _BATCHING
        if isinstance(func, cst.Name) and depth < 3:
            found = m.bindings_at(func, scope)
            if found is None or len(found[1]) != 1:
                return False
            b = found[1][0]
            return b.kind == "assign" and b.index is None and b.value is not None and \
                self._batched(b.value, found[0], depth + 1)
        return False

    def binding_is_array(self, bindings, owner: "Scope", depth: int = 0) -> bool:
        """Every binding of a name gives it a jax array."""
        if not bindings:
            return False
        for b in bindings:
            if b.kind not in ("assign", "annassign", "augassign", "walrus") or b.value is None:
                return False
            if b.kind == "augassign":
                continue
            value = b.value
            if b.index is not None:
                if isinstance(value, (cst.Tuple, cst.List)):
                    value = value.elements[b.index].value
                elif not (isinstance(value, cst.Call) and (self.model.qn(value.func, owner) or "").startswith(
                        ARRAY_NAMESPACES)):
                    return False  # `a, b = f()`: which element is an array is unknown
                # `kx, ky = jnp.meshgrid(...)`: every element of a jax function's tuple is an array
            if not self.is_array(value, owner, depth):
                return False
        return any(b.kind != "augassign" for b in bindings)
