"""JF104's variants: an FFT over the leading axes of an array whose trailing axis holds components.

The features are what decides what XLA makes of the transform, and what the rule can read in
real code: the transform (`fftn`; `rfftn` alone; the round trip `irfftn(rfftn(v))`); the number
of transformed axes (`dims`); the number of points they span (`points`, a size class); the
number of components (`components`, the trailing axis); where the array comes from (`producer`:
an argument stored component-last, or a `jnp.stack(..., axis=-1)` of computed components); and
what reads the result (`consumer`: returned as it is; elementwise work, `jnp.abs(r) * 2.0`, then
returned; a sum over the components, `jnp.sum(jnp.abs(r) ** 2, axis=-1)`).

The rule has no codemod (the layout is decided where the array is built): the "after" is the
form it advises (`advised`), the components stored first (`(c, N, N, N)`, `jnp.stack(..., axis=0)`)
and the trailing axes transformed, the consumer reading the components on axis 0.
"""
from __future__ import annotations

from typing import Any, Iterator, Mapping

from jaxfuse_lint.calibrate.variants import product

CODE = "JF104"
FEATURES = {
    "transform": ("fftn", "rfftn", "rfftn_irfftn"),
    "dims": (2, 3),
    "points": (32768, 262144, 1048576),
    "components": (2, 3, 4),
    "producer": ("arg", "stack"),
    "consumer": ("returned", "elementwise", "componentwise"),
}
PAGE = (("transform", "producer", "consumer"), ("components",), ("dims", "points"))
# Points stand for size classes (a 100³ grid behaves as the 1,048,576-point variant does).
NEAREST = ("points",)
HEADER = """\
from __future__ import annotations

from typing import TYPE_CHECKING

import jax
import jax.numpy as jnp

if TYPE_CHECKING:
    from jaxtyping import Array, Float32
"""
# The transformed axes' sizes for each (dims, points).
GRIDS = {
    (2, 32768): (128, 256), (2, 262144): (512, 512), (2, 1048576): (1024, 1024),
    (3, 32768): (32, 32, 32), (3, 262144): (64, 64, 64), (3, 1048576): (128, 128, 64),
}
# Each stacked component is different elementwise work on the input, as real code has.
_COMPONENT = ("x", "x * 2.0 + 1.0", "jnp.sin(x)", "x * x")


def variants() -> Iterator[dict]:
    yield from product(FEATURES)


def _grid(features: Mapping[str, Any]) -> tuple[int, ...]:
    return GRIDS[features["dims"], features["points"]]


def _shape(features: Mapping[str, Any], first: bool) -> tuple[int, ...]:
    grid, c = _grid(features), features["components"]
    if features["producer"] == "stack":
        return grid
    return (c, *grid) if first else (*grid, c)


def args(features: Mapping[str, Any]) -> list[str]:
    return [f"f32[{','.join(str(s) for s in _shape(features, False))}]"]


def advised_args(features: Mapping[str, Any]) -> list[str]:
    """The advised form takes an argument stored components first."""
    return [f"f32[{','.join(str(s) for s in _shape(features, True))}]"]


def _body(features: Mapping[str, Any], name: str, first: bool) -> str:
    dims, c = features["dims"], features["components"]
    shape = " ".join(str(s) for s in _shape(features, first))
    lines = [f'@jax.jit\ndef {name}(x: Float32[Array, "{shape}"]):']
    operand = "x"
    if features["producer"] == "stack":
        lines.append(f"    v = jnp.stack([{', '.join(_COMPONENT[:c])}], axis={0 if first else -1})")
        operand = "v"
    axes = "(" + ", ".join(str(a + 1 if first else a) for a in range(dims)) + ")"
    transform = features["transform"]
    if transform == "fftn":
        lines.append(f"    r = jnp.fft.fftn({operand}, axes={axes})")
    elif transform == "rfftn":
        lines.append(f"    r = jnp.fft.rfftn({operand}, axes={axes})")
    else:
        lines.append(f"    a = jnp.fft.rfftn({operand}, axes={axes})")
        lines.append(f"    r = jnp.fft.irfftn(a, axes={axes})")
    consumer = features["consumer"]
    if consumer == "returned":
        lines.append("    return r")
    elif consumer == "elementwise":
        lines.append("    return jnp.abs(r) * 2.0")
    else:
        lines.append(f"    return jnp.sum(jnp.abs(r) ** 2, axis={0 if first else -1})")
    return "\n".join(lines) + "\n"


def function(features: Mapping[str, Any], name: str) -> str:
    return _body(features, name, first=False)


def advised(features: Mapping[str, Any], name: str) -> str:
    """The components stored first and the trailing axes transformed (the rule has no codemod)."""
    return _body(features, name, first=True)
