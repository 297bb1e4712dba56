"""The semantic model: name resolution, traced regions and why, static/traced values, axis sizes."""
from __future__ import annotations

import textwrap

import libcst as cst
import pytest

from jaxfuse_lint.model import Kind, SemanticModel


def model_of(src: str, jax_modules=("jax",)) -> SemanticModel:
    return SemanticModel(cst.parse_module(textwrap.dedent(src)), jax_modules)


def fn(model, name):
    matches = [f for f in model.index.functions if f.name == name]
    assert matches, name
    return matches[-1]


def traced_names(model):
    return {f.display_name: sorted({r.kind for r in rs}) for f, rs in model.traced.reasons.items()}


def line_of(model):
    from jaxfuse_lint.parse.locate import Locator

    nodes = [r.node for rs in model.traced.reasons.values() for r in rs]
    loc = Locator(model.module, nodes)
    return loc.line


@pytest.mark.parametrize("imports,expr,expected", [
    ("import jax.numpy as jnp", "jnp.sum", "jax.numpy.sum"),
    ("import jax", "jax.numpy.sum", "jax.numpy.sum"),
    ("from jax.numpy import sum as jsum", "jsum", "jax.numpy.sum"),
    ("import jax.numpy as np", "np.sum", "jax.numpy.sum"),
    ("from jax import lax, jit", "lax.fori_loop", "jax.lax.fori_loop"),
    ("from jax import numpy as jnp", "jnp.fft.fftfreq", "jax.numpy.fft.fftfreq"),
    ("import numpy as onp", "onp.arange", "numpy.arange"),
    ("from functools import partial", "partial", "functools.partial"),
    ("import jax.numpy", "jax.numpy.linalg.norm", "jax.numpy.linalg.norm"),
    ("", "print", "builtins.print"),
])
def test_qualified_names(imports, expr, expected):
    m = model_of(f"{imports}\n\ndef f():\n    return {expr}\n")
    f = fn(m, "f")
    ret = f.returns[0]
    assert m.qn(ret, f) == expected


def test_local_shadowing_beats_imports():
    m = model_of("import jax.numpy as jnp\n\ndef f(jnp):\n    return jnp.sum\n")
    f = fn(m, "f")
    assert m.qn(f.returns[0], f) is None


def test_configured_jax_roots_are_canonical():
    m = model_of("import myjax.numpy as jnp\n\ndef f():\n    return jnp.sum\n", ("jax", "myjax"))
    f = fn(m, "f")
    assert m.qn(f.returns[0], f) == "jax.numpy.sum"


SRC = '''
import jax
from functools import partial
from jax import lax
from jax.experimental.shard_map import shard_map


def finternal(x):
    return x * 2 + 25.0
finternal.jit = jax.jit(finternal, inline=False)


def smooth(x):
    return helper(x)


def helper(x):
    return x


smooth_jit = jax.jit(smooth)


@partial(jax.jit, static_argnames=("n",))
def decorated(x, n):
    def body(i, c):
        return c + n
    return lax.fori_loop(0, 3, body, x)


class Model:
    def __init__(self):
        self.apply = jax.jit(self._apply)

    def _apply(self, x):
        return x


@jax.custom_jvp
def f_custom(x):
    return x


@f_custom.defjvp
def f_custom_jvp(primals, tangents):
    return primals, tangents


def mapped(x):
    return x


g = jax.jit(jax.vmap(mapped))
sm = shard_map(lambda x: x, mesh=None, in_specs=None, out_specs=None)


def host(x):
    return jax.pure_callback(on_host, None, x)


def on_host(v):
    return v


def never(x):
    return x
'''


def test_traced_routes_and_reasons():
    m = model_of(SRC)
    t = traced_names(m)
    assert t["finternal"] == ["transform"]
    assert t["smooth"] == ["transform"]
    assert t["helper"] == ["called"]
    assert t["decorated"] == ["decorator"]
    assert t["body"] == ["control-flow", "passed"]
    assert t["Model._apply"] == ["transform"]
    assert t["f_custom"] == ["decorator"]
    assert t["f_custom_jvp"] == ["decorator"]
    assert t["mapped"] == ["transform"]
    assert "<lambda>" in t
    assert "host" not in t and "on_host" not in t and "never" not in t


def test_reason_descriptions_name_the_line():
    m = model_of(SRC)
    line = line_of(m)
    smooth = fn(m, "smooth")
    assert m.trace_reason(smooth).describe(line) == "passed to `jax.jit` on line 21"
    helper = fn(m, "helper")
    assert m.trace_reason(helper).describe(line) == "called from traced `smooth` on line 14"
    body = fn(m, "body")
    assert m.trace_reason(body).describe(line) == "the function traced by `lax.fori_loop` on line 28"


def test_static_and_traced_values():
    m = model_of('''
        import jax, jax.numpy as jnp
        from functools import partial

        @partial(jax.jit, static_argnums=(1,))
        def f(x, flag, opt=None):
            n = x.shape[0]
            m = len(x)
            y = jnp.sin(x)
            z = n * 2 + m
            k = x.ndim
            return x, flag, opt, n, y, z, k, x.dtype, y.T, helper(n), helper(x)

        def helper(v):
            return v
    ''')
    f = fn(m, "f")
    kinds = [m.kind(el.value, f) for el in f.returns[0].elements]
    assert kinds == [Kind.TRACED, Kind.STATIC, Kind.UNKNOWN, Kind.STATIC, Kind.TRACED, Kind.STATIC, Kind.STATIC,
                     Kind.STATIC, Kind.TRACED, Kind.STATIC, Kind.TRACED]


def test_loop_body_params_are_traced():
    m = model_of('''
        import jax
        def f(x):
            def body(i, c):
                return i, c
            return jax.lax.fori_loop(0, 3, body, x)
    ''')
    body = fn(m, "body")
    assert [m.kind(e.value, body) for e in body.returns[0].elements] == [Kind.TRACED, Kind.TRACED]


@pytest.mark.parametrize("expr,axis,size", [
    ("jnp.stack([x, x], axis=-1)", -1, 2),
    ("jnp.stack([x, x, x], axis=0)", 0, 3),
    ("jnp.stack([x, x, x], axis=1)", 1, 3),
    ("jnp.zeros((n, 3))", 1, 3),
    ("jnp.zeros((n, 3))", -1, 3),
    ("jnp.ones((2, 5, n))", -3, 2),
    ("x[..., :3]", -1, 3),
    ("x[..., 1:3, :]", -2, 2),
    ("x[:, -2:]", 1, 2),
    ("x.reshape(-1, 4)", 1, 4),
    ("jnp.array([x, x, x, x])", 0, 4),
    ("jnp.array([1.0, 2.0])", 0, 2),
    ("jnp.stack([x, x], axis=-1) * x", -1, 2),
    ("jnp.stack([x, x], axis=-1)[..., None]", -2, 2),
    ("jnp.sin(jnp.stack([x, x], axis=-1))", -1, 2),
])
def test_axis_sizes(expr, axis, size):
    m = model_of(f"import jax.numpy as jnp\n\ndef f(x, n):\n    return {expr}\n")
    f = fn(m, "f")
    assert m.axis_size(f.returns[0], f, axis) == size


@pytest.mark.parametrize("expr,axis", [
    ("jnp.concatenate([x, x], axis=-1)", -1),
    ("jnp.stack([x, x], axis=-1)", 0),
    ("jnp.zeros((n, 3))", 0),
    ("x[..., :n]", -1),
    ("jnp.stack([x, x], axis=1)", -1),
])
def test_unknown_sizes_stay_unknown(expr, axis):
    m = model_of(f"import jax.numpy as jnp\n\ndef f(x, n):\n    return {expr}\n")
    f = fn(m, "f")
    assert m.axis_size(f.returns[0], f, axis) is None


def test_walk_survives_deep_nesting():
    deep = "x = " + " + ".join(["1"] * 1500) + "\n"
    m = model_of("import jax\n" + deep)
    assert m.index.functions == []


@pytest.mark.parametrize("setup,expr,axis,size", [
    # Indexing: new axes, integer drops, gathers on leading axes keep the trailing sizes.
    ("p = jnp.zeros((n, 3))", "p[:, None, :]", -1, 3),
    ("p = jnp.zeros((n, 3))", "p[:, None, :]", 1, 1),
    ("p = jnp.zeros((4, 3))", "p[None]", 1, 4),
    ("p = jnp.zeros((5, 4, 3))", "p[..., 1]", 1, 4),
    ("p = jnp.zeros((5, 4, 3))", "p[..., k]", 1, 4),
    ("p = jnp.zeros((n, 3))\n    idx = jnp.argsort(x)", "p[idx]", -1, 3),
    ("p = jnp.zeros((n, 4, 3))\n    idx = jnp.arange(5)", "p[idx]", -2, 4),
    ("p = jnp.zeros((n, 4, 3))\n    idx = jnp.arange(5)", "p[idx]", 0, 5),
    ("p = jnp.zeros((n, 3))\n    for i in range(n):\n        pass", "p[i]", 0, 3),
    # arange of numbers and constants
    ("", "jnp.arange(3.0)", 0, 3),
    ("", "jnp.arange(1, 4)", 0, 3),
    ("", "jnp.arange(0.0, 1.0, 0.25)", 0, 4),
    ("m = 6", "jnp.arange(m)", 0, 6),
    ("m = 6", "jnp.zeros((m, m // 2))", 1, 3),
    # moving axes
    ("p = jnp.zeros((3, n))", "p.T", -1, 3),
    ("p = jnp.zeros((3, n))", "jnp.transpose(p)", -1, 3),
    ("p = jnp.zeros((3, 4, 5))", "jnp.transpose(p, (2, 0, 1))", 0, 5),
    ("p = jnp.zeros((3, 4, 5))", "p.transpose(1, 2, 0)", -1, 3),
    ("p = jnp.zeros((3, n, n))", "jnp.swapaxes(p, 0, -1)", -1, 3),
    ("p = jnp.zeros((3, n, n))", "jnp.moveaxis(p, 0, -1)", -1, 3),
    ("p = jnp.zeros((3, n, n))", "jnp.expand_dims(p, 0)", 1, 3),
    # joining
    ("a = jnp.zeros((n, 2))\n    b = jnp.zeros((n, 1))", "jnp.concatenate([a, b], axis=-1)", -1, 3),
    ("a = jnp.zeros((2, n))\n    b = jnp.zeros((1, n))", "jnp.concatenate([a, b])", 0, 3),
    ("a = jnp.zeros((n, 3))", "jnp.concatenate([a, a], axis=0)", -1, 3),
    ("", "jnp.reshape(x, (m, 3))", 1, 3),
    # FFTs keep the shape; rfft halves the last transformed axis
    ("v = jnp.stack([x, x], axis=-1)", "jnp.fft.fftn(v, axes=(0, 1, 2))", -1, 2),
    ("v = jnp.zeros((8, 8, 3))", "jnp.fft.rfftn(v, axes=(0, 1))", 1, 5),
    ("v = jnp.zeros((8, 8, 3))", "jnp.fft.rfftn(v, axes=(0, 1))", -1, 3),
    ("v = jnp.zeros((8, 8, 3))", "jnp.fft.fftshift(v)", -1, 3),
    ("", "jnp.fft.fftfreq(8)", 0, 8),
    ("", "jnp.fft.rfftfreq(8)", 0, 5),
])
def test_axis_sizes_through_indexing_layout_and_joins(setup, expr, axis, size):
    m = model_of(f"import jax, jax.numpy as jnp\n\n@jax.jit\ndef f(x, n, k, m=4):\n    {setup}\n    return {expr}\n")
    f = fn(m, "f")
    assert m.axis_size(f.returns[-1], f, axis) == size


@pytest.mark.parametrize("setup,expr,axis", [
    ("p = jnp.zeros((n, 3))", "p[p > 0]", -1),  # a boolean mask flattens
    ("p = jnp.zeros((n, 3))\n    mask = jnp.isfinite(p[:, 0])", "p[mask]", -1),
    ("p = jnp.zeros((n, 3))", "p[k]", -1),  # k: a tuple of indices, for all the model knows
    ("p = jnp.zeros((n, 3))\n    mask = x > 0", "p[mask, :]", -1),
    ("p = jnp.zeros((n, 3))\n    mask = ~jnp.isnan(x)", "p[mask]", -1),
    ("p = jnp.zeros((n, 3))\n    idx = jnp.nonzero(x)", "p[idx]", -1),
    ("p = jnp.zeros((4, 3))\n    i = jnp.argsort(x)", "p[0, ..., i]", 0),
    ("a = jnp.zeros((n, 2))", "jnp.concatenate([a, x], axis=-1)", -1),
    ("v = jnp.zeros((8, 8, 3))", "jnp.fft.fftn(v, s=(4, 4), axes=(0, 1))", 0),
    ("v = jnp.zeros((8, 8, 3))", "jnp.fft.irfftn(v, axes=(0, 1))", 1),
    ("", "jnp.arange(n)", 0),
])
def test_sizes_the_model_must_not_guess(setup, expr, axis):
    m = model_of(f"import jax, jax.numpy as jnp\n\n@jax.jit\ndef f(x, n, k):\n    {setup}\n    return {expr}\n")
    f = fn(m, "f")
    assert m.axis_size(f.returns[-1], f, axis) is None


def test_return_shapes_of_the_module_functions():
    m = model_of('''
        import jax.numpy as jnp
        def components(x):
            return jnp.stack([x, x, x], axis=-1)
        def g(x):
            v = components(x)[None]
            return v
    ''')
    g = fn(m, "g")
    assert m.axis_size(g.returns[0], g, -1) == 3


@pytest.mark.parametrize("setup,expr,axis,size", [
    ("v = jnp.stack([x, x], axis=0)", "jnp.moveaxis(v, 0, -1)", -1, 2),
    ("v = jnp.stack([x, x, x], axis=-1)", "jnp.moveaxis(v, -1, 0)", 0, 3),
    ("v = jnp.stack([x, x], axis=1)", "jnp.moveaxis(v, 1, 0)", 0, 2),
    ("v = jnp.stack([x, x], axis=-2)", "jnp.moveaxis(v, -2, -1)", -1, 2),
])
def test_moveaxis_with_unknown_rank(setup, expr, axis, size):
    m = model_of(f"import jax.numpy as jnp\n\ndef f(x):\n    {setup}\n    return {expr}\n")
    f = fn(m, "f")
    assert m.axis_size(f.returns[-1], f, axis) == size


def test_moveaxis_across_ends_forgets_the_far_end():
    m = model_of("import jax.numpy as jnp\n\ndef f(x):\n    v = jnp.stack([x, x], axis=0)[..., None]\n"
                 "    return jnp.moveaxis(v, 0, -1)\n")
    f = fn(m, "f")
    assert m.axis_size(f.returns[-1], f, -1) == 2 and m.axis_size(f.returns[-1], f, -2) is None


def test_a_concrete_numpy_index_may_be_a_mask_unless_it_is_integer():
    m = model_of('''
        import jax, jax.numpy as jnp, numpy as np
        MASK = np.ones((4, 5), bool)
        IDX = np.arange(4)
        @jax.jit
        def f(x):
            p = jnp.zeros((4, 5, 3))
            a = p[MASK, :]
            b = p[IDX, :]
            return a, b
    ''')
    f = fn(m, "f")
    assert m.shape(f.bindings["a"][0].value, f) is None
    assert m.shape(f.bindings["b"][0].value, f).size(-2) == 5
