"""JF202's variants: a NumPy array bound at module level and read by a jitted function, before and
after the advice — rebuilt inside with `jax.numpy` (the rule's fix) where the array is made from
shapes, passed as an argument where it is data (a draw of `np.random`, a file loaded with
`np.load`, a list of Python ints: rebuilt with `jnp` it would be the same constant).

The features are what decides what the constant costs, and what the rule can read in real code:
which NumPy function builds the array (`builder`), how many elements it has (`size`, in 4-byte
elements; a loaded array has the size its annotation declares), how the function uses it
(`use`: elementwise with an input, as gather indices `x[C, a]`, as a table gathered at traced
indices, as a matmul operand) and whether the read is inside a `lax.fori_loop` body.
"""
from __future__ import annotations

from typing import Any, Iterator, Mapping

from jaxfuse_lint.calibrate import jf201
from jaxfuse_lint.calibrate.jf201 import INT_BUILDERS, INT_LIST_SIZES, ROWS, STEPS, _side

CODE = "JF202"
FEATURES = {
    "builder": ("arange", "linspace", "ones", "eye", "fftfreq", "random", "int_list", "load"),
    "use": ("elementwise", "index", "table", "matmul"),
    "size": jf201.FEATURES["size"],
    "loop": ("none", "fori_loop"),
}
NEAREST = ("size",)
PAGE = (("builder", "use"), ("size", "loop"), ("builder", "size"))
HEADER = """\
from __future__ import annotations

import os
import tempfile
from typing import TYPE_CHECKING

import jax
import jax.numpy as jnp
import numpy as np

if TYPE_CHECKING:
    from jaxtyping import Array, Float32, Int32


def _npy(*shape):
    \"\"\"A .npy file of that shape: what the variants load, as real code loads data.\"\"\"
    path = os.path.join(tempfile.gettempdir(), f"jaxfuse_calibrate_{'x'.join(map(str, shape))}.npy")
    if not os.path.exists(path):
        np.save(path, np.random.default_rng(0).standard_normal(shape).astype(np.float32))
    return path
"""
# Data, not a function of shapes: the advice is an argument (the "after" version takes `c`).
AS_ARGUMENT = ("random", "int_list", "load")


def variants() -> Iterator[dict]:
    for builder in FEATURES["builder"]:
        for use in FEATURES["use"]:
            if use == "index" and builder not in INT_BUILDERS:
                continue
            for size in FEATURES["size"]:
                if builder == "int_list" and size not in INT_LIST_SIZES:
                    continue
                for loop in FEATURES["loop"]:
                    yield {"builder": builder, "use": use, "size": size, "loop": loop}


def _as_jf201(f: Mapping[str, Any]) -> dict:
    return {**f, "known": "static", "builder": f["builder"] if f["builder"] != "load" else "random"}


def _constant_shape(f: Mapping[str, Any]) -> tuple[int, ...]:
    return jf201._constant_shape(_as_jf201(f))


def _params(f: Mapping[str, Any]) -> list[tuple[str, str, tuple[int, ...]]]:
    out = [p for p in jf201._params(_as_jf201(f)) if p[0] != "r"]
    if f["builder"] in AS_ARGUMENT:
        out.append(("c", "i32" if f["use"] == "index" else "f32", _constant_shape(f)))
    return out


def args(f: Mapping[str, Any]) -> list[str]:
    return [f"{dt}[{','.join(str(d) for d in shape)}]" for _, dt, shape in _params(f)]


def binding(f: Mapping[str, Any], name: str) -> str:
    """The module-level statement that binds the array."""
    builder, size = f["builder"], f["size"]
    shape = _constant_shape(f)
    n = _side(size)
    target = f"C_{name}"
    if builder == "load":
        dims = " ".join(str(d) for d in shape)
        return f'{target}: Float32[np.ndarray, "{dims}"] = np.load(_npy({", ".join(str(d) for d in shape)}))'
    if builder == "random":
        if f["use"] == "index":
            return f"{target} = np.random.randint(0, {size}, size={size})"
        return f"{target} = np.random.normal(0.0, 1.0, size={shape if len(shape) == 2 else size})"
    return f"{target} = {jf201.constant(_as_jf201(f))}" if builder != "eye" else f"{target} = np.eye({n})"


def _signature(f: Mapping[str, Any]) -> str:
    names = {"f32": "Float32", "i32": "Int32"}
    return ", ".join(f'{p}: {names[dt]}[Array, "{" ".join(str(d) for d in shape)}"]' for p, dt, shape in _params(f))


def _function(f: Mapping[str, Any], name: str, c: str, bind: bool) -> str:
    head = (binding(f, name) + "\n\n\n" if bind else "") + f"@jax.jit\ndef {name}({_signature(f)}):\n"
    g = _as_jf201(f)
    if f["loop"] == "none":
        return head + f"    return {jf201._use(g, c, 'x')}\n"
    body = ["    def body(k, acc):", "        y = x[k]", f"        return acc + {jf201._use(g, c, 'y')}"]
    return head + "\n".join(body) + \
        f"\n\n    return jax.lax.fori_loop(0, {STEPS}, body, jnp.zeros({jf201._out_shape(g)}))\n"


def function(f: Mapping[str, Any], name: str) -> str:
    return _function(f, name, f"C_{name}", True)


def advised(f: Mapping[str, Any], name: str) -> str | None:
    """Data is passed as an argument (`c`, in both versions' signatures); an array made from shapes
    takes the rule's fix (rebuilt inside with `jax.numpy`)."""
    if f["builder"] not in AS_ARGUMENT:
        return None
    return _function(f, name, "c", False)


__all__ = ["CODE", "FEATURES", "HEADER", "NEAREST", "PAGE", "ROWS", "advised", "args", "function", "variants"]
