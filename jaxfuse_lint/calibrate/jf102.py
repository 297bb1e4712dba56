"""JF102's variants: a dense `jnp.meshgrid` of coordinate vectors, before the `jnp.indices` form.

The features are what decides what XLA makes of the grid, and what the rule can read in real
code: the number of grid axes (`dims`); the number of grid points (`points`, a size class); the
vectors (`vectors`: `fftfreq` on every axis; `fftfreq` with `rfftfreq` on the last axis, the
k-space of an `rfftn`; `linspace` on every axis); whether they are used as built or scaled
(`scale`: `fftfreq(n)` or `2 * jnp.pi * fftfreq(n, d=0.1)`, `linspace(-1.0, 1.0, n)` or
`jnp.pi * linspace(...)`); and what reads the grid (`consumer`: returned, as `k² = kx² + ky²`;
a reduction of `exp(-k²) * x`; an FFT filter, `ifftn(fftn(x) * exp(-k²))` or
`irfftn(rfftn(x) * exp(-k²))`).

The fix of the `fftfreq`/`rfftfreq` variants is the rule's own codemod; `linspace` has no codemod,
and its "after" is the form the rule advises (`advised`): `jnp.indices` and the index arithmetic
of `linspace`, `start + i * step`.
"""
from __future__ import annotations

from typing import Any, Iterator, Mapping

from jaxfuse_lint.calibrate.variants import product

CODE = "JF102"
FEATURES = {
    "dims": (2, 3),
    "points": (4096, 262144, 2097152),
    "vectors": ("fftfreq", "fftfreq_rfftfreq", "linspace"),
    "scale": ("plain", "scaled"),
    "consumer": ("returned", "reduction", "fft_filter"),
}
PAGE = (("consumer", "dims", "points"), ("vectors", "consumer"), ("scale",))
# Grid points stand for size classes (a 400 × 400 grid behaves as the 512 × 512 variant does).
NEAREST = ("points",)
HEADER = """\
from __future__ import annotations

from typing import TYPE_CHECKING

import jax
import jax.numpy as jnp

if TYPE_CHECKING:
    from jaxtyping import Array, Float32
"""
# The input's shape for each (dims, points): the grid spans it (or its rfftn's half spectrum).
SHAPES = {
    (2, 4096): (64, 64), (2, 262144): (512, 512), (2, 2097152): (1024, 2048),
    (3, 4096): (16, 16, 16), (3, 262144): (64, 64, 64), (3, 2097152): (128, 128, 128),
}
NAMES = ("kx", "ky", "kz")


def variants() -> Iterator[dict]:
    yield from product(FEATURES)


def _shape(features: Mapping[str, Any]) -> tuple[int, ...]:
    return SHAPES[features["dims"], features["points"]]


def args(features: Mapping[str, Any]) -> list[str]:
    return [f"f32[{','.join(str(s) for s in _shape(features))}]"]


def _vector(features: Mapping[str, Any], axis: int) -> str:
    dims, scaled = features["dims"], features["scale"] == "scaled"
    n = f"x.shape[{axis}]"
    if features["vectors"] == "linspace":
        v = f"jnp.linspace(-1.0, 1.0, {n})"
        return f"jnp.pi * {v}" if scaled else v
    kind = "rfftfreq" if features["vectors"] == "fftfreq_rfftfreq" and axis == dims - 1 else "fftfreq"
    return f"2 * jnp.pi * jnp.fft.{kind}({n}, d=0.1)" if scaled else f"jnp.fft.{kind}({n})"


def _consumer(features: Mapping[str, Any]) -> list[str]:
    dims = features["dims"]
    k2 = " + ".join(f"{name}**2" for name in NAMES[:dims])
    lines = [f"    k2 = {k2}"]
    consumer = features["consumer"]
    if consumer == "returned":
        lines.append("    return k2")
    elif consumer == "reduction":
        if features["vectors"] == "fftfreq_rfftfreq":
            # The grid spans the half spectrum: the reduction reads the input's matching part.
            half = ", ".join([":"] * (dims - 1) + [f": x.shape[{dims - 1}] // 2 + 1"])
            lines.append(f"    return jnp.sum(jnp.exp(-k2) * x[{half}])")
        else:
            lines.append("    return jnp.sum(jnp.exp(-k2) * x)")
    elif features["vectors"] == "fftfreq_rfftfreq":
        lines += ["    xk = jnp.fft.rfftn(x)", "    return jnp.fft.irfftn(xk * jnp.exp(-k2), x.shape)"]
    else:
        lines += ["    xk = jnp.fft.fftn(x)", "    return jnp.fft.ifftn(xk * jnp.exp(-k2)).real"]
    return lines


def _head(features: Mapping[str, Any], name: str) -> str:
    shape = " ".join(str(s) for s in _shape(features))
    return f'@jax.jit\ndef {name}(x: Float32[Array, "{shape}"]):'


def function(features: Mapping[str, Any], name: str) -> str:
    dims = features["dims"]
    names = NAMES[:dims]
    lines = [_head(features, name)]
    lines += [f"    {n} = {_vector(features, axis)}" for axis, n in enumerate(names)]
    lines.append(f"    {', '.join(names)} = jnp.meshgrid({', '.join(names)}, indexing=\"ij\")")
    return "\n".join(lines + _consumer(features)) + "\n"


def advised(features: Mapping[str, Any], name: str) -> str | None:
    """The `jnp.indices` form of a `linspace` grid (the rule has no codemod for it); None: the
    rule's codemod fixes the `fftfreq`/`rfftfreq` variants."""
    if features["vectors"] != "linspace":
        return None
    dims = features["dims"]
    names = NAMES[:dims]
    lines = [_head(features, name),
             f"    {', '.join(names)} = jnp.indices(({', '.join(f'x.shape[{a}]' for a in range(dims))},))"]
    scaled = features["scale"] == "scaled"
    formulas = []
    for axis, n in enumerate(names):
        f = f"{n} * (2.0 / (x.shape[{axis}] - 1)) - 1.0"
        formulas.append(f"jnp.pi * ({f})" if scaled else f)
    lines.append(f"    {', '.join(names)} = {', '.join(formulas)}")
    return "\n".join(lines + _consumer(features)) + "\n"
