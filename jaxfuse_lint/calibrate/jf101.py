"""JF101's variants: a reduction over a small trailing axis, before its explicit-terms fix.

The features are what decides fusion around the reduction, and what the rule can read in real
code: which reduction; where the small axis comes from (`producer`: the argument itself,
elementwise work on it, a `jnp.stack` or `jnp.concatenate` of columns, a broadcast of a
vector); what reads the result (`consumer`: returned, a scalar epilogue, broadcast back against
an array, a further reduction, a matmul); the axis size; the number of rows; the dtype; and
whether it runs straight in the jitted function or inside a `lax.fori_loop` body.
"""
from __future__ import annotations

from typing import Any, Iterator, Mapping

from jaxfuse_lint.calibrate.variants import dtype_spec, product

CODE = "JF101"
FEATURES = {
    "reduction": ("sum", "mean", "max", "min", "prod", "norm"),
    "producer": ("arg", "elementwise", "stack", "concatenate", "broadcast"),
    "consumer": ("returned", "epilogue", "broadcast_back", "reduction", "matmul"),
    "size": (2, 3, 4),
    "rows": (4096, 262144, 4194304),
    "dtype": ("float32", "bfloat16"),
    "loop": ("none", "fori_loop"),
}
# The groupings the rule's page shows.
PAGE = (("producer", "consumer"), ("size", "loop"), ("reduction",))
# XLA:CPU's table is timed (every variant run and timed on this machine): a smaller space. Rows past
# 262,144 read the 262,144-row variants there; bfloat16, mean, min and prod are not calibrated on CPU.
TIMED = {"rows": (4096, 262144), "dtype": ("float32",), "reduction": ("sum", "max", "norm")}
# Rows stand for size classes (a reduction over 100,000 rows behaves as over 262,144).
NEAREST = ("rows",)
HEADER = """\
from __future__ import annotations

from typing import TYPE_CHECKING

import jax
import jax.numpy as jnp

if TYPE_CHECKING:
    from jaxtyping import Array, BFloat16, Float32
"""
_REDUCE = {"sum": "jnp.sum", "mean": "jnp.mean", "max": "jnp.max", "min": "jnp.min", "prod": "jnp.prod",
           "norm": "jnp.linalg.norm"}
# Elementwise work on each column of a stack: different per column, as real code has.
_COLUMN_WORK = ("{c} * 2.0", "{c} + 1.0", "{c} - 0.5", "{c} * {c}")
MATMUL_WIDTH = 64
STEPS = 8  # iterations of the fori_loop variants (over the leading axis of their input)


def variants() -> Iterator[dict]:
    for features in product(FEATURES):
        # bfloat16 where the dtype changes the fix (sum casts to float32 and back; max does not).
        if features["dtype"] == "bfloat16" and features["reduction"] not in ("sum", "max"):
            continue
        yield features


def args(features: Mapping[str, Any]) -> list[str]:
    short, _ = dtype_spec(features["dtype"])
    rows, size = features["rows"], features["size"]
    steps = f"{STEPS}," if features["loop"] != "none" else ""
    out = [f"{short}[{steps}{rows}]", f"{short}[{size}]"] if features["producer"] == "broadcast" else [
        f"{short}[{steps}{rows},{size}]"]
    if features["consumer"] == "matmul":
        out.append(f"{short}[{MATMUL_WIDTH},{MATMUL_WIDTH}]")
    return out


def _params(features: Mapping[str, Any]) -> str:
    _, annotation = dtype_spec(features["dtype"])
    rows, size = features["rows"], features["size"]
    steps = f"{STEPS} " if features["loop"] != "none" else ""
    if features["producer"] == "broadcast":
        params = [f'x: {annotation}[Array, "{steps}{rows}"]', f'w: {annotation}[Array, "{size}"]']
    else:
        params = [f'x: {annotation}[Array, "{steps}{rows} {size}"]']
    if features["consumer"] == "matmul":
        params.append(f'm: {annotation}[Array, "{MATMUL_WIDTH} {MATMUL_WIDTH}"]')
    return ", ".join(params)


def _pattern(features: Mapping[str, Any], x: str, indent: str) -> tuple[list[str], str]:
    """Statements and the final expression of the pattern, reading the input `x`."""
    producer, size = features["producer"], features["size"]
    lines = []
    if producer == "arg":
        operand, base = x, x
    elif producer == "elementwise":
        operand, base = f"({x} - 1.0) * {x}", x
    elif producer == "stack":
        columns = ", ".join(_COLUMN_WORK[i % len(_COLUMN_WORK)].format(c=f"{x}[:, {i}]") for i in range(size))
        lines.append(f"{indent}v = jnp.stack([{columns}], axis=-1)")
        operand, base = "v * v", "v"
    elif producer == "concatenate":
        lines.append(f"{indent}v = jnp.concatenate([{x}[:, :1] * 2.0, {x}[:, 1:{size}] + 1.0], axis=-1)")
        operand, base = "v * v", "v"
    else:  # broadcast
        operand, base = f"{x}[:, None] * w", f"{x}[:, None]"
    reduce = _REDUCE[features["reduction"]]
    consumer = features["consumer"]
    if consumer == "broadcast_back":
        return lines, f"{base} * {reduce}({operand}, axis=-1, keepdims=True)"
    reduced = f"{reduce}({operand}, axis=-1)"
    if consumer == "returned":
        return lines, reduced
    if consumer == "epilogue":
        return lines, f"jnp.exp(-{reduced}) * 2.0"
    if consumer == "reduction":
        return lines, f"jnp.sum({reduced})"
    return lines, f"{reduced}.reshape(-1, {MATMUL_WIDTH}) @ m"  # matmul


def _out_shape(features: Mapping[str, Any]) -> str:
    rows, size, consumer = features["rows"], features["size"], features["consumer"]
    if consumer == "broadcast_back":
        return f"({rows}, 1)" if features["producer"] == "broadcast" else f"({rows}, {size})"
    if consumer == "reduction":
        return "()"
    if consumer == "matmul":
        return f"({rows // MATMUL_WIDTH}, {MATMUL_WIDTH})"
    return f"({rows},)"


def function(features: Mapping[str, Any], name: str) -> str:
    head = f"@jax.jit\ndef {name}({_params(features)}):\n"
    if features["loop"] == "none":
        lines, result = _pattern(features, "x", "    ")
        return head + "".join(line + "\n" for line in lines) + f"    return {result}\n"
    # Inside a fori_loop body, on the step's slice of the input (so nothing is hoisted out of the loop).
    lines, result = _pattern(features, "y", "        ")
    body = ["    def body(i, acc):", "        y = x[i]", *lines, f"        return acc + {result}"]
    init = f"jnp.zeros({_out_shape(features)}, x.dtype)"
    return head + "\n".join(body) + f"\n\n    return jax.lax.fori_loop(0, {STEPS}, body, {init})\n"
