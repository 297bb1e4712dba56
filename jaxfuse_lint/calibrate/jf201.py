"""JF201's variants: a NumPy array built while a jitted function is traced, before and after its
`jax.numpy` fix (or, for a draw of `np.random`, which has no fix, passed as an argument).

The features are what decides what the constant costs, and what the rule can read in real code:
which NumPy function builds it (`builder`: `np.arange`, `linspace`, `ones`, `eye`, `fft.fftfreq`,
`random`, and `np.stack` of a list of Python ints, whose `jnp` version is the very same constant);
how many elements it has (`size`: a few, a batch, thousands, a mesh; in 4-byte elements); whether
that size is written in the code (`known`: "static") or is the size of a traced input
(`np.arange(x.size)`: "input_size", `np.arange(x.shape[0])`: "input_dim"), calibrated over
realistic sizes of inputs; how the program uses it (`use`: elementwise with an input, as gather
indices `x[C, a]`, as a table gathered at traced indices
`jnp.take(C, i, axis=0)`, as a matmul operand); and
whether it is built inside a `lax.fori_loop` body.
"""
from __future__ import annotations

import math
from typing import Any, Iterator, Mapping

CODE = "JF201"
FEATURES = {
    "builder": ("arange", "linspace", "ones", "eye", "fftfreq", "random", "int_list"),
    "use": ("elementwise", "index", "table", "matmul"),
    # Elements (4 bytes each): 16 B, 576 B, 4 KiB, 256 KiB, 16 MiB. Squares, for `eye` and matmuls.
    "size": (4, 144, 1024, 65536, 4194304),
    "known": ("static", "input_dim", "input_size"),
    "loop": ("none", "fori_loop"),
}
NEAREST = ("size",)
PAGE = (("builder", "use"), ("size", "known"), ("size", "loop"))
HEADER = """\
from __future__ import annotations

from typing import TYPE_CHECKING

import jax
import jax.numpy as jnp
import numpy as np

if TYPE_CHECKING:
    from jaxtyping import Array, Float32, Int32
"""
STEPS = 8  # iterations of the fori_loop variants (over the leading axis of `x`)
ROWS = 256  # rows of the matmul's other operand, entries looked up in a table
# Builders whose values can be gather indices (the others make floats).
INT_BUILDERS = ("arange", "random", "int_list")
# Sizes of a list of Python ints that real code writes (`jnp.stack` of 65,536 scalars is not code).
INT_LIST_SIZES = (4, 144, 1024)
# Realistic sizes of traced inputs: a whole input (`x.size`), one of its dimensions (`x.shape[0]`).
INPUT_SIZES = {"input_size": (1024, 65536, 4194304), "input_dim": (144, 1024, 65536)}
INPUT_BUILDERS = ("arange", "linspace", "ones", "fftfreq")


def variants() -> Iterator[dict]:
    for builder in FEATURES["builder"]:
        for use in FEATURES["use"]:
            if use == "index" and builder not in INT_BUILDERS:
                continue
            for size in FEATURES["size"]:
                if builder == "int_list" and size not in INT_LIST_SIZES:
                    continue
                for loop in FEATURES["loop"]:
                    yield {"builder": builder, "use": use, "size": size, "known": "static", "loop": loop}
    for known, sizes in INPUT_SIZES.items():
        for builder in INPUT_BUILDERS:
            for use in ("elementwise", "index"):
                if use == "index" and (builder != "arange" or known != "input_dim"):
                    continue
                for size in sizes:
                    for loop in FEATURES["loop"]:
                        yield {"builder": builder, "use": use, "size": size, "known": known, "loop": loop}


def _side(size: int) -> int:
    return math.isqrt(size)


def _x_shape(f: Mapping[str, Any]) -> tuple[int, ...]:
    """The shape of `x` for one step."""
    size, use, n = f["size"], f["use"], _side(f["size"])
    if use == "elementwise":
        if f["known"] == "input_dim":
            return (size, 4)
        return (n, n) if f["builder"] == "eye" or f["known"] == "input_size" else (size,)
    if use == "index":
        return (size, 4)
    if use == "table":
        return (ROWS,)
    return (ROWS, n)  # matmul


def _params(f: Mapping[str, Any]) -> list[tuple[str, str, tuple[int, ...]]]:
    """(name, dtype, shape) of the arguments."""
    steps = (STEPS,) if f["loop"] != "none" else ()
    out = [("x", "f32", steps + _x_shape(f))]
    if f["use"] == "index":
        out.append(("a", "i32", (f["size"],)))
    if f["use"] == "table":
        out.append(("i", "i32", (ROWS,)))
    if f["builder"] == "random":
        out.append(("r", "f32" if f["use"] != "index" else "i32", _constant_shape(f)))
    return out


def _constant_shape(f: Mapping[str, Any]) -> tuple[int, ...]:
    n = _side(f["size"])
    if f["builder"] == "eye" or f["use"] == "matmul" or (f["use"] == "elementwise" and f["known"] == "input_size"):
        return (n, n)
    return (f["size"],)


def args(f: Mapping[str, Any]) -> list[str]:
    return [f"{dt}[{','.join(str(d) for d in shape)}]" for _, dt, shape in _params(f)]


def _signature(f: Mapping[str, Any]) -> str:
    names = {"f32": "Float32", "i32": "Int32"}
    return ", ".join(f'{name}: {names[dt]}[Array, "{" ".join(str(d) for d in shape)}"]'
                     for name, dt, shape in _params(f))


def constant(f: Mapping[str, Any], y: str = "x") -> str:
    """The NumPy expression of the variant (`y`: the input it may take its size from)."""
    builder, size, known = f["builder"], f["size"], f["known"]
    n = _side(size)
    shape = _constant_shape(f)
    two_d = len(shape) == 2
    if known == "input_size":
        return {"arange": f"np.arange({y}.size).reshape({y}.shape)",
                "linspace": f"np.linspace(0.0, 1.0, {y}.size).reshape({y}.shape)",
                "ones": f"np.ones({y}.shape)",
                "fftfreq": f"np.fft.fftfreq({y}.size).reshape({y}.shape)"}[builder]
    count = f"{y}.shape[0]" if known == "input_dim" else str(size)
    if builder == "eye":
        return f"np.eye({n})"
    if builder == "random":
        if f["use"] == "index":
            return f"np.random.randint(0, {size}, {size})"
        return f"np.random.rand({n}, {n})" if two_d else f"np.random.rand({size})"
    base = {"arange": f"np.arange({count})", "linspace": f"np.linspace(0.0, 1.0, {count})",
            "ones": f"np.ones({count})", "fftfreq": f"np.fft.fftfreq({count})",
            "int_list": f"np.stack([(k * 7) % {size} for k in range({size})])"}[builder]
    if two_d:
        return f"np.ones(({n}, {n}))" if builder == "ones" else f"{base}.reshape({n}, {n})"
    return base


def _use(f: Mapping[str, Any], c: str, y: str) -> str:
    """The expression that puts the constant `c` into the program, reading the input `y`."""
    use = f["use"]
    if use == "elementwise":
        return f"{y} + {c}[:, None]" if f["known"] == "input_dim" else f"{y} + {c}"
    if use == "index":
        return f"{y}[{c}, a]"
    if use == "table":
        # (`C[i]` with a tracer `i` fails on a NumPy array: real code gathers with `jnp.take`.)
        taken = f"jnp.take({c}, i, axis=0)"
        return f"{y}[:, None] * {taken}" if f["builder"] == "eye" else f"{y} * {taken}"
    return f"{y} @ {c}"


def _out_shape(f: Mapping[str, Any]) -> str:
    use, n = f["use"], _side(f["size"])
    if use == "index":
        return f"({f['size']},)"
    if use == "table":
        return f"({ROWS}, {n})" if f["builder"] == "eye" else f"({ROWS},)"
    if use == "matmul":
        return f"({ROWS}, {n})"
    return "(" + ", ".join(str(d) for d in _x_shape(f)) + ("," if len(_x_shape(f)) == 1 else "") + ")"


def _function(f: Mapping[str, Any], name: str, c_of) -> str:
    head = f"@jax.jit\ndef {name}({_signature(f)}):\n"
    if f["loop"] == "none":
        return head + f"    return {_use(f, c_of('x'), 'x')}\n"
    body = ["    def body(k, acc):", "        y = x[k]", f"        return acc + {_use(f, c_of('y'), 'y')}"]
    return head + "\n".join(body) + f"\n\n    return jax.lax.fori_loop(0, {STEPS}, body, jnp.zeros({_out_shape(f)}))\n"


def function(f: Mapping[str, Any], name: str) -> str:
    return _function(f, name, lambda y: constant(f, y))


def advised(f: Mapping[str, Any], name: str) -> str | None:
    """A draw of `np.random` has no `jax.numpy` fix: the advice is to pass it as an argument (the
    same values; `r` is in both versions' signatures). Every other variant takes the rule's fix."""
    if f["builder"] != "random":
        return None
    return _function(f, name, lambda y: "r")
