"""Which call arguments jax reads as Python values: a shape, axis, permutation, split point, size or
axis name (`static_argument`), and which parameters a jit decorator marks static (`static_params`:
`static_argnums` / `static_argnames`). A value that reaches one is static metadata, never program
data (model/static_use.py).
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

from jaxfuse_lint.model.numpy_values import NumpyView, static_argument as _numpy_static_argument
from jaxfuse_lint.model.scopes import Function
from jaxfuse_lint.model.traced import keyword

if TYPE_CHECKING:
    from jaxfuse_lint.model.scopes import Scope

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
_ARRAY_CALL_ROUTES = ("jax.", "flax.", "haiku.", "equinox.", "optax.", "diffrax.", "numpyro.", "chex.")


def static_params(model: "NumpyView", fn: Function) -> set[str]:
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


def static_argument(model: "NumpyView", node: cst.CSTNode, scope: "Scope") -> bool:
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


__all__ = ["static_argument", "static_params"]
