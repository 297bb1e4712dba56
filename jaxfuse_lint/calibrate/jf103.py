"""JF103's variants: a short `lax.fori_loop` / `lax.scan` without `unroll=`, before its `unroll=True` fix.

The features are what decides what XLA makes of the loop, and what the rule can read in real
code: the loop (`fori_loop` with literal bounds, `scan` with `length=`); its trip count (`steps`);
the heaviest work of its body (`body`: elementwise only, a reduction, a matmul, a gather of the
carry's rows, a scatter into the carry); the carry's size in elements and its dtype; and the code
around the loop (`context`: "alone", the loop reads an argument and its result is returned, as
when the loop runs outside `jit` and lax compiles it by itself; "around", elementwise work on
the argument makes the carry's initial value and elementwise work reads the result).
"""
from __future__ import annotations

from typing import Any, Iterator, Mapping

from jaxfuse_lint.calibrate.variants import dtype_spec, product

CODE = "JF103"
FEATURES = {
    "loop": ("fori_loop", "scan"),
    "steps": (2, 4, 8),
    "body": ("elementwise", "reduction", "matmul", "gather", "scatter"),
    "size": (1024, 65536, 4194304),
    "dtype": ("float32", "bfloat16"),
    "context": ("alone", "around"),
}
PAGE = (("body", "steps"), ("body", "size"), ("loop", "context"), ("dtype",))
# Trip counts and carry sizes stand for classes: 5 steps behave as the nearest calibrated count
# (on a log scale: 6 would be 4 or 8), 100,000 elements as 65,536.
NEAREST = ("steps", "size")
HEADER = """\
from __future__ import annotations

from typing import TYPE_CHECKING

import jax
import jax.numpy as jnp

if TYPE_CHECKING:
    from jaxtyping import Array, BFloat16, Float32, Int32
"""
WIDTH = 128  # the carry is (size // WIDTH, WIDTH); a matmul body multiplies it by a (WIDTH, WIDTH) weight
SCATTERED = 8  # a scatter body updates one row in SCATTERED
_BODY = {
    "elementwise": "c * 0.5 + jnp.sin(c)",
    "reduction": "c - jnp.mean(c, axis=-1, keepdims=True) * 0.5",
    "matmul": "jnp.tanh(c @ w)",
    "gather": "c[perm] * 0.5 + c",
    "scatter": "(c * 0.5).at[idx].add(1.0)",
}


def variants() -> Iterator[dict]:
    yield from product(FEATURES)


def _rows(features: Mapping[str, Any]) -> int:
    return features["size"] // WIDTH


def _extra(features: Mapping[str, Any]) -> list[tuple[str, str, str]]:
    """(name, `--arg` spec, annotation) of the body's other inputs."""
    short, annotation = dtype_spec(features["dtype"])
    rows, body = _rows(features), features["body"]
    if body == "matmul":
        return [("w", f"{short}[{WIDTH},{WIDTH}]", f'{annotation}[Array, "{WIDTH} {WIDTH}"]')]
    if body == "gather":
        return [("perm", f"i32[{rows}]", f'Int32[Array, "{rows}"]')]
    if body == "scatter":
        k = max(1, rows // SCATTERED)
        return [("idx", f"i32[{k}]", f'Int32[Array, "{k}"]')]
    return []


def args(features: Mapping[str, Any]) -> list[str]:
    short, _ = dtype_spec(features["dtype"])
    return [f"{short}[{_rows(features)},{WIDTH}]"] + [spec for _, spec, _ in _extra(features)]


def function(features: Mapping[str, Any], name: str) -> str:
    _, annotation = dtype_spec(features["dtype"])
    params = [f'x: {annotation}[Array, "{_rows(features)} {WIDTH}"]'] + [
        f"{n}: {a}" for n, _, a in _extra(features)]
    expr, steps = _BODY[features["body"]], features["steps"]
    lines = [f"@jax.jit\ndef {name}({', '.join(params)}):"]
    init = "x"
    if features["context"] == "around":
        lines.append("    y = x * 2.0 - 1.0")
        init = "y"
    if features["loop"] == "fori_loop":
        lines += ["    def body(i, c):", f"        return {expr}", "",
                  f"    r = jax.lax.fori_loop(0, {steps}, body, {init})"]
    else:
        lines += ["    def body(c, _):", f"        return {expr}, None", "",
                  f"    r, _ = jax.lax.scan(body, {init}, None, length={steps})"]
    lines.append("    return jnp.exp(-r) * 2.0" if features["context"] == "around" else "    return r")
    return "\n".join(lines) + "\n"
