"""JF204's variants: one shape-only expression computed before a `lax` loop, recomputed in its body
and computed again after it, against the advice (the copy after the loop made different: the
notebook's `eps` trick, so CSE cannot merge it with the copy before).

The features are the shape of the repeated expression and where its copies sit, as the rule
reads them in real code:

- `cost`: the operation that makes the expression worth merging for XLA's CSE, as the rule names
  it: `transcendental` (the notebook's `sin(iota ** 2.3)`), `power` (a non-integer power of a
  grid), `select` (a `where`: the notebook's fftfreq k-mesh from `indices`), `remainder` (`%`);
- `size`: the expression's number of elements (a size class);
- `before`: the copy before the loop is part of the loop's initial value (`init`: `x + E`) or a
  statement of its own whose result the loop starts from (`statement`: `y = x * E`);
- `after`: how the copy after the loop is combined with the loop's result: `additive`
  (`out + E`) or `multiplicative` (`out / (1 + E)`);
- `loop`: `fori_loop`, `scan` or `while_loop` (8 iterations).
"""
from __future__ import annotations

from typing import Any, Iterator, Mapping

from jaxfuse_lint.calibrate.variants import product

CODE = "JF204"
FEATURES = {
    "cost": ("transcendental", "power", "select", "remainder"),
    "size": (256, 16384, 1048576),
    "before": ("init", "statement"),
    "after": ("additive", "multiplicative"),
    "loop": ("fori_loop", "scan", "while_loop"),
}
PAGE = (("cost", "size"), ("before", "after"), ("loop",))
NEAREST = ("size",)
WIDTH = 64  # the trailing axis of every input: (size // 64, 64)
TRIPS = 8
HEADER = """\
from __future__ import annotations

from typing import TYPE_CHECKING

import jax
import jax.numpy as jnp

if TYPE_CHECKING:
    from jaxtyping import Array, Float32


def wave(x, eps=0.0):
    return jnp.sin((jnp.arange(x.size).reshape(x.shape) + eps) ** 2.3)


def ramp(x, eps=0.0):
    return (jnp.arange(x.size).reshape(x.shape) * 0.01 + 1.0 + eps) ** 1.5


def freq(i, n):
    return jnp.where(i < (n + 1) // 2, i / n, (i - n) / n)


def kmesh(x, eps=0.0):
    ix, iy = jnp.indices(x.shape)
    return freq(ix, x.shape[0]) ** 2 + freq(iy, x.shape[1]) ** 2 + eps


def phase(x, eps=0.0):
    return (jnp.arange(x.size).reshape(x.shape) % 7) * 0.5 + eps
"""
_HELPER = {"transcendental": "wave", "power": "ramp", "select": "kmesh", "remainder": "phase"}
EPS = "1e-10"


def variants() -> Iterator[dict]:
    yield from product(FEATURES)


def _shape(features: Mapping[str, Any]) -> tuple[int, int]:
    return (features["size"] // WIDTH, WIDTH)


def args(features: Mapping[str, Any]) -> list[str]:
    rows, width = _shape(features)
    return [f"f32[{rows},{width}]"]


def _function(features: Mapping[str, Any], name: str, after_copy: str) -> str:
    rows, width = _shape(features)
    e = f"{_HELPER[features['cost']]}(x)"
    lines = ["@jax.jit", f'def {name}(x: Float32[Array, "{rows} {width}"]):']
    loop = features["loop"]
    if loop == "fori_loop":
        lines += ["    def step(i, a):", f"        return a * 0.5 + {e}", ""]
    elif loop == "scan":
        lines += ["    def step(a, _):", f"        return a * 0.5 + {e}, None", ""]
    else:
        lines += ["    def cond(s):", f"        return s[0] < {TRIPS}", "", "    def step(s):",
                  f"        return s[0] + 1, s[1] * 0.5 + {e}", ""]
    if features["before"] == "init":
        init = f"x + {e}"
    else:
        lines.append(f"    y = x * {e}")
        init = "y"
    call = {"fori_loop": f"jax.lax.fori_loop(0, {TRIPS}, step, {init})",
            "scan": f"jax.lax.scan(step, {init}, None, length={TRIPS})[0]",
            "while_loop": f"jax.lax.while_loop(cond, step, (0, {init}))[1]"}[loop]
    lines.append(f"    out = {call}")
    if features["after"] == "additive":
        lines.append(f"    return out + {after_copy}")
    else:
        lines.append(f"    return out / (1.0 + {after_copy})")
    return "\n".join(lines) + "\n"


def function(features: Mapping[str, Any], name: str) -> str:
    return _function(features, name, f"{_HELPER[features['cost']]}(x)")


def advised(features: Mapping[str, Any], name: str) -> str:
    """The rule's advice: the copy after the loop differs (`eps`), so CSE cannot merge it."""
    return _function(features, name, f"{_HELPER[features['cost']]}(x, {EPS})")
