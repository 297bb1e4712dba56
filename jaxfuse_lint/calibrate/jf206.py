"""JF206's variants: `lax.optimization_barrier` in traced code, and `jax.checkpoint(...,
prevent_cse=True)` in a forward-only computation, against the rule's advice.

The features are what the barrier separates and where it sits, as the rule reads them in real
code:

- `kind`: `barrier` (`lax.optimization_barrier`) or `prevent_cse` (`jax.checkpoint(f,
  prevent_cse=True)` called twice, never differentiated);
- `before`: what computes the value that passes the barrier (or what the checkpointed function
  computes): `elementwise` (the notebook's `sin(x) + 3`), `reduction` (a row mean subtracted),
  `fft`, `matmul`;
- `after`: what reads it: `elementwise` (the notebook's `s + exp(s)`), `reduction` (a row sum),
  `matmul`;
- `context`: `plain` (straight-line code), or `python_loop` (the notebook's serialising idiom:
  `res, x = optimization_barrier((res, x))` at the end of each iteration of a Python loop that
  accumulates `res`, 5 iterations);
- `size`: the number of elements of the array the barrier passes (a size class);
- `collectives`: whether the module also runs collectives or shards its arrays. Only `False` is
  calibrated: a barrier that orders communication against compute is about the overlap of
  several devices, which one compiled device cannot show.

The advice: without the barrier (`s = sin(x) + 3`); in a Python loop, the loop as a
`lax.fori_loop` (the rule's message; the notebook's `f_fft_multi_for`); without the checkpoint
(its `prevent_cse` does nothing in a forward pass).
"""
from __future__ import annotations

from typing import Any, Iterator, Mapping

from jaxfuse_lint.calibrate.variants import product

CODE = "JF206"
FEATURES = {
    "kind": ("barrier", "prevent_cse"),
    "before": ("elementwise", "reduction", "fft", "matmul"),
    "after": ("elementwise", "reduction", "matmul"),
    "context": ("plain", "python_loop"),
    "size": (4096, 262144, 4194304),
    "collectives": (False,),
}
PAGE = (("kind", "context"), ("before", "after"), ("kind", "size"))
NEAREST = ("size",)
WIDTH = 64
ITERATIONS = 5
HEADER = """\
from __future__ import annotations

from typing import TYPE_CHECKING

import jax
import jax.numpy as jnp

if TYPE_CHECKING:
    from jaxtyping import Array, Float32


def g_elementwise(x):
    return jnp.sin(x) + 3.0


def g_reduction(x):
    return x - jnp.mean(x, axis=-1, keepdims=True)


def g_fft(x):
    return jnp.real(jnp.fft.fft(x))


def g_matmul(x):
    return jnp.tanh(x @ jnp.ones((x.shape[-1], x.shape[-1]), x.dtype))
"""
_BEFORE = {"elementwise": "jnp.sin({x}) + 3.0", "reduction": "{x} - jnp.mean({x}, axis=-1, keepdims=True)",
           "fft": "jnp.real(jnp.fft.fft({x}))", "matmul": "{x} @ m"}


def variants() -> Iterator[dict]:
    for features in product(FEATURES):
        if features["context"] == "python_loop" and (features["kind"] != "barrier"
                                                     or features["after"] != "elementwise"):
            continue  # the loop's barrier is read by the accumulation only; checkpoint has no loop form
        yield features


def _rows(features: Mapping[str, Any]) -> int:
    return features["size"] // WIDTH


def args(features: Mapping[str, Any]) -> list[str]:
    return [f"f32[{_rows(features)},{WIDTH}]", f"f32[{WIDTH},{WIDTH}]"]


def _head(features: Mapping[str, Any], name: str) -> list[str]:
    return ["@jax.jit",
            f'def {name}(x: Float32[Array, "{_rows(features)} {WIDTH}"], m: Float32[Array, "{WIDTH} {WIDTH}"]):']


def _after(features: Mapping[str, Any], s: str, s2: str | None = None) -> str:
    s2 = s2 or s
    after = features["after"]
    if after == "elementwise":
        return f"{s} + jnp.exp({s2})"
    if after == "reduction":
        return f"jnp.sum({s} * {s2}, axis=-1)"
    return f"({s} @ m) * {s2}"


def _function(features: Mapping[str, Any], name: str, advised: bool) -> str:
    lines = _head(features, name)
    before = features["before"]
    if features["kind"] == "prevent_cse":
        g = f"g_{before}" if advised else f"jax.checkpoint(g_{before}, prevent_cse=True)"
        lines += [f"    g = {g}", f"    return {_after(features, 'g(x)')}"]
    elif features["context"] == "plain":
        value = _BEFORE[before].format(x="x")
        lines += [f"    s = {value}" if advised else f"    s = jax.lax.optimization_barrier({value})",
                  f"    return {_after(features, 's')}"]
    elif advised:  # the loop as a lax.fori_loop
        term = _BEFORE[before].format(x="(x + i)")
        lines += ["    def step(i, res):", f"        return res + {term}", "",
                  f"    return jax.lax.fori_loop(0, {ITERATIONS}, step, jnp.zeros_like(x))"]
    else:
        term = _BEFORE[before].format(x="(x + i)")
        lines += ["    res = 0", f"    for i in range({ITERATIONS}):", f"        res = res + {term}",
                  "        res, x = jax.lax.optimization_barrier((res, x))", "    return res"]
    return "\n".join(lines) + "\n"


def function(features: Mapping[str, Any], name: str) -> str:
    return _function(features, name, advised=False)


def advised(features: Mapping[str, Any], name: str) -> str:
    return _function(features, name, advised=True)
