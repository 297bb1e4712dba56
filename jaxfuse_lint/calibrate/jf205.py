"""JF205's variants: a Python loop in traced code whose iterations each run an independent FFT,
matmul or convolution and add the result into an accumulator, before the rule's fix (the loop as
a `lax.fori_loop`, its first iteration peeled off as the initial value).

The features are what decides how much XLA overlaps the unrolled iterations and what the loop
costs instead, as the rule reads them in real code:

- `call`: the expensive call of each iteration: `rfftn` (the notebook's `irfftn(rfftn(x + i))`
  over three axes), `fft` (a batched 1-D `ifft(fft(...))`), `matmul` (`tanh((x * k) @ w)`),
  `conv` (`lax.conv` of an NCHW image with a 3×3 kernel);
- `iterations`: the trip count of the Python loop (a size class);
- `size`: the number of elements of the array each iteration transforms (a size class);
- `epilogue`: the term is the call itself (`none`) or raised to a power of the loop variable as
  in the notebook (`power`: `... ** (i + 2)`, a float `pow` once the index is traced).
"""
from __future__ import annotations

from typing import Any, Iterator, Mapping

from jaxfuse_lint.calibrate.variants import product

CODE = "JF205"
FEATURES = {
    "call": ("rfftn", "fft", "matmul", "conv"),
    "iterations": (2, 3, 5, 9),
    "size": (16384, 262144, 2097152),
    "epilogue": ("none", "power"),
}
PAGE = (("call", "iterations"), ("call", "size"), ("epilogue",))
NEAREST = ("iterations", "size")
HEADER = """\
from __future__ import annotations

from typing import TYPE_CHECKING

import jax
import jax.numpy as jnp

if TYPE_CHECKING:
    from jaxtyping import Array, Float32
"""
# Two fields transformed over their three spatial axes: the notebook's (2, 64, 64, 32) at 262,144.
RFFTN_SHAPES = {16384: (2, 32, 16, 16), 262144: (2, 64, 64, 32), 2097152: (2, 128, 128, 64)}
FFT_ROW = 256  # the transformed axis of the `fft` variants
MATMUL_WIDTH = 512
CHANNELS = 8


def variants() -> Iterator[dict]:
    yield from product(FEATURES)


def _shapes(features: Mapping[str, Any]) -> list[tuple[int, ...]]:
    n, call = features["size"], features["call"]
    if call == "rfftn":
        return [RFFTN_SHAPES[n]]
    if call == "fft":
        return [(n // FFT_ROW, FFT_ROW)]
    if call == "matmul":
        return [(n // MATMUL_WIDTH, MATMUL_WIDTH), (MATMUL_WIDTH, MATMUL_WIDTH)]
    side = round((n // CHANNELS) ** 0.5)
    return [(1, CHANNELS, side, n // CHANNELS // side), (CHANNELS, CHANNELS, 3, 3)]


def args(features: Mapping[str, Any]) -> list[str]:
    return [f"f32[{','.join(str(d) for d in s)}]" for s in _shapes(features)]


def _term(features: Mapping[str, Any]) -> str:
    call = features["call"]
    if call == "rfftn":
        term = "jnp.fft.irfftn((i + 2) * jnp.fft.rfftn(x + i, axes=(1, 2, 3)), axes=(1, 2, 3))"
    elif call == "fft":
        term = "jnp.real(jnp.fft.ifft(jnp.fft.fft(x + i) * (i + 2)))"
    elif call == "matmul":
        term = "jnp.tanh((x * (i + 1)) @ w)"
    else:
        term = 'jax.lax.conv(x * (i + 1), w, (1, 1), "SAME")'
    return f"{term} ** (i + 2)" if features["epilogue"] == "power" else term


def function(features: Mapping[str, Any], name: str) -> str:
    shapes = _shapes(features)
    names = ["x", "w"][:len(shapes)]
    params = ", ".join(f'{n}: Float32[Array, "{" ".join(str(d) for d in s)}"]' for n, s in zip(names, shapes))
    return (f"@jax.jit\ndef {name}({params}):\n"
            "    res = 0\n"
            f"    for i in range({features['iterations']}):\n"
            f"        res = res + {_term(features)}\n"
            "    return res\n")
