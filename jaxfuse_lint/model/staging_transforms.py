"""Which transforms stage, batch, filter or differentiate the function they are given, and how
the model reads their options (`static_argnums`, `static_argnames`, `in_axes`, ...): the tables and
option reading that staging (model/staging.py), the staged parameters (model/staged_parameters.py)
and the project's summaries (project/summary.py) share."""
from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

from jaxfuse_lint.model.api import COMPILING
from jaxfuse_lint.model import routes
from jaxfuse_lint.model.traced import positional

if TYPE_CHECKING:
    from jaxfuse_lint.model.traced import TraceReason

# Transforms that stage their function out to a jaxpr with abstract arguments.
STAGING = frozenset({
    "jax.jit", "jax.pmap", "jax.experimental.pjit.pjit", "jax.make_jaxpr", "jax.eval_shape",
    "jax.xla_computation", "jax.checkpoint", "jax.remat", "jax.ad_checkpoint.checkpoint",
    "jax.experimental.shard_map.shard_map", "jax.shard_map", "jax.experimental.jax2tf.convert",
    "jax.experimental.maps.xmap", "equinox.filter_jit", "equinox.filter_pmap",
}) | routes.names(kind="transform", stages=True)
# Staging transforms that only look at the program (trace once, keep nothing to run).
ANALYSIS = frozenset({"jax.make_jaxpr", "jax.eval_shape", "jax.xla_computation", "equinox.filter_eval_shape",
                      "equinox.filter_make_jaxpr", "flax.nnx.eval_shape"})
# Transforms that batch: eager, but batched arguments have no single value.
BATCHING = frozenset({"jax.vmap", "equinox.filter_vmap"}) | routes.names(kind="transform", batches=True)
# Transforms whose non-array arguments stay Python values (equinox filters by type).
FILTERED = frozenset({"equinox.filter_jit", "equinox.filter_pmap", "equinox.filter_vmap"}) | (
    routes.names(kind="transform", filtered=True))
# Transforms that differentiate: only the `argnums` arguments become their tracers.
DIFFERENTIATING = frozenset({"jax.grad", "jax.value_and_grad", "jax.jacfwd", "jax.jacrev", "jax.hessian",
                             "equinox.filter_grad", "equinox.filter_value_and_grad"})
# Transforms that accept `static_argnums` / `static_argnames` (what a message may suggest).
ACCEPTS_STATIC_ARGNAMES = frozenset({"jax.jit", "jax.experimental.pjit.pjit"})
ACCEPTS_STATIC_ARGNUMS = ACCEPTS_STATIC_ARGNAMES | frozenset({
    "jax.checkpoint", "jax.remat", "jax.ad_checkpoint.checkpoint", "jax.make_jaxpr",
})


# Options that make some arguments Python values (or unbatched) in ways the model does not parse.
_ARGUMENT_OPTIONS = ("static_broadcasted_argnums", "in_axes", "nondiff_argnums", "in_specs")


def option_calls(reason: "TraceReason") -> list[cst.Call]:
    """The calls that carry a transform's options: `jax.jit(f, static_argnums=1)`,
    `@partial(jax.jit, static_argnames="n")`, `@jax.jit(static_argnames=...)`."""
    node = reason.node
    out = []
    if isinstance(node, cst.Decorator) and isinstance(node.decorator, cst.Call):
        out.append(node.decorator)
    elif isinstance(node, cst.Call):
        out.append(node)
        if isinstance(node.func, cst.Call):
            out.append(node.func)
    return out


def _literal_options(value: cst.BaseExpression) -> bool:
    """True for the literal forms traced.py reads (ints, strings, tuples/lists of them)."""
    if isinstance(value, (cst.Integer, cst.SimpleString)):
        return True
    if isinstance(value, cst.UnaryOperation) and isinstance(value.expression, cst.Integer):
        return True
    if isinstance(value, (cst.Tuple, cst.List)):
        return all(not isinstance(el, cst.StarredElement) and _literal_options(el.value) for el in value.elements)
    return False


def options_understood(reason: "TraceReason", transform: str, in_axes_read: bool = False) -> bool:
    """False when the transform's options may make arguments static (or unbatched) in a way
    the model cannot read: non-literal `static_argnums`, `**options`, any `in_axes`..."""
    for call in option_calls(reason):
        for a in call.args:
            if a.star == "**":
                return False
            if a.keyword is None:
                continue
            kw = a.keyword.value
            if kw in ("static_argnums", "static_argnames", "static_broadcasted_argnums"):
                if not _literal_options(a.value):
                    return False
            elif kw == "in_axes" and transform in COMPILING:
                continue  # `pmap(f, in_axes=(0, None))`: an unmapped argument is broadcast, still traced
            elif kw in _ARGUMENT_OPTIONS and not (in_axes_read and kw == "in_axes"):
                return False
        if transform in BATCHING and positional(call, 1) is not None and not in_axes_read:
            return False  # vmap(f, in_axes)
    return True


__all__ = ["STAGING", "BATCHING", "option_calls", "options_understood"]
