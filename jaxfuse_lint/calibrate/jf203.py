"""JF203's variants: an array computed outside a `lax` loop and read inside its body, before the
fix that recomputes it in the body.

The features are what decides whether keeping the value alive across the loop costs anything
the recomputation saves, and what the rule can read in real code:

- `value`: what the captured value is: `grid` (built from shapes only: iota, `indices`,
  `fftfreq`, the notebook's k-mesh), `elementwise` (elementwise work on an input), `roll` (a
  layout change of an input), `reduction` (a reduction of a larger input), `cumsum`, `fft`,
  `matmul`, `sort` (the expensive ops), `loop_output` (the result of an earlier `lax` loop);
- `size`: its number of elements, as a size class (1: a 0-d scalar where the op allows one);
- `loop`: `fori_loop`, `scan` or `while_loop`;
- `use`: what the body does with it: `elementwise` (`c * 0.5 + w`), `fft` (it filters the
  carry's spectrum, as the notebook's k-mesh does), `matmul` (an operand of a dot);
- `trips`: the trip count (a size class too);
- `unroll`: whether the loop is fully unrolled (`unroll=True`: no loop is left to capture in);
- `after`: whether the enclosing function reads the value again after the loop.

The variants are a product over value × size × use in a `fori_loop` of 8 trips, rolled, the
value not read after the loop; and slices over value × size with `use` elementwise: in a `scan`
and a `while_loop`, at 64 trips, read after the loop; and fully unrolled loops over value × use
at two sizes. The pilot on XLA:GPU showed the loop kind and the trip count change no verdict (the
figures are the same but for the launches, which scale with the trips), so the rule's decision
is over all of them; it asks about the slice an unrolled loop or a value read after the loop
falls in (jaxfuse_lint/rules/jf203_loop_invariant_capture.py).
"""
from __future__ import annotations

import math
from typing import Any, Iterator, Mapping

from jaxfuse_lint.calibrate.variants import product

CODE = "JF203"
VALUES = ("grid", "elementwise", "roll", "reduction", "cumsum", "fft", "matmul", "sort", "loop_output")
FEATURES = {
    "value": VALUES,
    "size": (1, 64, 4096, 262144),
    "loop": ("fori_loop", "scan", "while_loop"),
    "use": ("elementwise", "fft", "matmul"),
    "trips": (8, 64),
    "unroll": (False, True),
    "after": (False, True),
}
DEFAULTS = {"loop": ("fori_loop",), "use": ("elementwise",), "trips": (8,), "unroll": (False,), "after": (False,)}
ALL_USES = FEATURES["use"]
SIZES = FEATURES["size"]
# Each slice: the features it varies (with value), the others at DEFAULTS.
SLICES = (
    {"size": SIZES, "use": ALL_USES},
    {"size": SIZES, "loop": ("scan", "while_loop")},
    {"size": SIZES, "trips": (64,)},
    {"size": SIZES, "after": (True,)},
    {"size": (4096, 262144), "use": ALL_USES, "unroll": (True,)},
)
PAGE = (("value", "size"), ("value", "use"), ("loop", "unroll", "after"), ("trips",))
NEAREST = ("size", "trips")
HEADER = """\
from __future__ import annotations

from typing import TYPE_CHECKING

import jax
import jax.numpy as jnp

if TYPE_CHECKING:
    from jaxtyping import Array, Float32


def relax(j, v):
    return jnp.sin(v) * 0.5 + v
"""
REDUCED = 8  # the leading axis a `reduction` value sums over
PRE_TRIPS = 3  # iterations of the earlier loop a `loop_output` value comes from


def variants() -> Iterator[dict]:
    seen = set()
    for varied in SLICES:
        grid = {name: varied.get(name, DEFAULTS.get(name)) for name in FEATURES}
        grid["value"] = VALUES
        for features in product(grid):
            key = tuple(features.values())
            if key in seen or not valid(features):
                continue
            seen.add(key)
            yield features


def valid(features: Mapping[str, Any]) -> bool:
    # A 0-d carry has no spectrum and no matrix to multiply.
    return not (_shape(features) == () and features["use"] in ("fft", "matmul"))


def _shape(features: Mapping[str, Any]) -> tuple[int, ...]:
    """The captured value's shape (and the carry's)."""
    n, value = features["size"], features["value"]
    if value == "matmul" and n > 1:
        m = math.isqrt(n)
        return (m, m)
    if n == 1:
        # A 0-d scalar where the op makes one; cumsum, fft, sort and roll give (or take) an axis.
        return (1,) if value in ("cumsum", "fft", "sort", "roll") else ()
    return (n,)


def _input_shape(features: Mapping[str, Any]) -> tuple[int, ...]:
    shape, value = _shape(features), features["value"]
    if value == "reduction":
        return (REDUCED, *shape)
    if value == "matmul" and shape == ():
        return (REDUCED,)  # a vector dot: a 0-d result
    return shape


def _spec(shape: tuple[int, ...]) -> str:
    return f"f32[{','.join(str(d) for d in shape)}]"


def _annotation(shape: tuple[int, ...]) -> str:
    return f'Float32[Array, "{" ".join(str(d) for d in shape)}"]'


def args(features: Mapping[str, Any]) -> list[str]:
    return [_spec(_input_shape(features)), _spec(_shape(features))]


def _value(features: Mapping[str, Any]) -> str:
    value = features["value"]
    if value == "grid":
        return "jnp.cos(jnp.arange(x.size).reshape(x.shape) * 0.25) ** 2"
    if value == "elementwise":
        return "jnp.exp(-0.5 * x) * x"
    if value == "roll":
        return "jnp.roll(x, 1, axis=-1)"
    if value == "reduction":
        return "jnp.sum(x * x, axis=0)"
    if value == "cumsum":
        return "jnp.cumsum(x, axis=-1)"
    if value == "fft":
        return "jnp.real(jnp.fft.fft(x))"
    if value == "matmul":
        return "x @ x" if _shape(features) == () else "x @ x.T"
    if value == "sort":
        return "jnp.sort(x, axis=-1)"
    return f"jax.lax.fori_loop(0, {PRE_TRIPS}, relax, x)"  # loop_output


def _use(features: Mapping[str, Any], c: str) -> str:
    use = features["use"]
    if use == "elementwise":
        return f"{c} * 0.5 + w"
    if use == "fft":
        return f"jnp.real(jnp.fft.ifft(jnp.fft.fft({c}) * w))"
    if len(_shape(features)) == 2:  # matmul
        return f"jnp.dot({c}, w) * 0.5"
    return f"{c} * jnp.dot({c}, w)"


def _loop(features: Mapping[str, Any]) -> tuple[list[str], str]:
    """The body's definition and the loop's call."""
    loop, trips = features["loop"], features["trips"]
    unroll = ", unroll=True" if features["unroll"] else ""
    if loop == "fori_loop":
        return (["    def body(i, c):", f"        return {_use(features, 'c')}"],
                f"jax.lax.fori_loop(0, {trips}, body, y{unroll})")
    if loop == "scan":
        return (["    def body(c, _):", f"        return {_use(features, 'c')}, None"],
                f"jax.lax.scan(body, y, None, length={trips}{unroll})[0]")
    return (["    def cond(s):", f"        return s[0] < {trips}", "", "    def body(s):",
             f"        return s[0] + 1, {_use(features, 's[1]')}"],
            "jax.lax.while_loop(cond, body, (0, y))[1]")


def function(features: Mapping[str, Any], name: str) -> str:
    params = f"x: {_annotation(_input_shape(features))}, y: {_annotation(_shape(features))}"
    body, call = _loop(features)
    lines = ["@jax.jit", f"def {name}({params}):", f"    w = {_value(features)}", "", *body, ""]
    if features["after"]:
        lines += [f"    out = {call}", "    return out + w"]
    else:
        lines.append(f"    return {call}")
    return "\n".join(lines) + "\n"
