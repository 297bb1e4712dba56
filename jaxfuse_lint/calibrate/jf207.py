"""JF207's variants: a jax array bound at module level and read by a jitted function, before and
after the advice (the rule has no fix) — built inside with `jax.numpy` where it is made from
shapes, passed as an argument where it is data (a draw of `jax.random`, a loaded file, a list of
Python ints: built inside it would be the same constant).

The features are JF202's: which function builds the array (`builder`), how many elements it has
(`size`, in 4-byte elements; a converted file has the size its annotation declares), how the
function uses it (`use`) and whether the read is inside a `lax.fori_loop` body. A list of Python
ints is not among the builders: the rule does not flag jax results of Python values.
"""
from __future__ import annotations

from typing import Any, Iterator, Mapping

from jaxfuse_lint.calibrate import jf201, jf202
from jaxfuse_lint.calibrate.jf201 import STEPS, _side

CODE = "JF207"
# A jax array of a list of Python ints (`jnp.stack([...])`) is not JF207's: jax results of Python
# values are not flagged (their size is unknown, most often a handful).
FEATURES = {**jf202.FEATURES, "builder": tuple(b for b in jf202.FEATURES["builder"] if b != "int_list")}
NEAREST = ("size",)
PAGE = jf202.PAGE
HEADER = jf202.HEADER
AS_ARGUMENT = jf202.AS_ARGUMENT
args = jf202.args


def variants() -> Iterator[dict]:
    return (f for f in jf202.variants() if f["builder"] in FEATURES["builder"])


_params = jf202._params


def _builder(f: Mapping[str, Any]) -> str:
    """The jax expression that builds the array (at module level, or inside in the advice)."""
    builder, size = f["builder"], f["size"]
    shape = jf202._constant_shape(f)
    n = _side(size)
    dims = ", ".join(str(d) for d in shape) + ("," if len(shape) == 1 else "")
    if builder == "load":
        return f"jnp.asarray(np.load(_npy({', '.join(str(d) for d in shape)})))"
    if builder == "random":
        if f["use"] == "index":
            return f"jax.random.randint(jax.random.key(0), ({size},), 0, {size})"
        return f"jax.random.normal(jax.random.key(0), ({dims}))"
    if builder == "eye":
        return f"jnp.eye({n})"
    return jf201.constant(jf202._as_jf201(f)).replace("np.", "jnp.")


def binding(f: Mapping[str, Any], name: str) -> str:
    target = f"C_{name}"
    if f["builder"] == "load":
        dims = " ".join(str(d) for d in jf202._constant_shape(f))
        return f'{target}: Float32[Array, "{dims}"] = {_builder(f)}'
    return f"{target} = {_builder(f)}"


def _function(f: Mapping[str, Any], name: str, c: str, bind: bool, inside: str | None = None) -> str:
    head = (binding(f, name) + "\n\n\n" if bind else "") + f"@jax.jit\ndef {name}({jf202._signature(f)}):\n"
    g = jf202._as_jf201(f)
    if f["loop"] == "none":
        first = f"    {c} = {inside}\n" if inside else ""
        return head + first + f"    return {jf201._use(g, c, 'x')}\n"
    body = ["    def body(k, acc):", *([f"        {c} = {inside}"] if inside else []), "        y = x[k]",
            f"        return acc + {jf201._use(g, c, 'y')}"]
    return head + "\n".join(body) + \
        f"\n\n    return jax.lax.fori_loop(0, {STEPS}, body, jnp.zeros({jf201._out_shape(g)}))\n"


def function(f: Mapping[str, Any], name: str) -> str:
    return _function(f, name, f"C_{name}", True)


def advised(f: Mapping[str, Any], name: str) -> str:
    """Data is passed as an argument (`c`, in both versions' signatures); an array made from shapes
    is built inside, first thing in the function that reads it."""
    if f["builder"] in AS_ARGUMENT:
        return _function(f, name, "c", False)
    return _function(f, name, "c", False, inside=_builder(f))
