"""Where a value flows (model/static_use.py: static uses, the program, in-place changes), which
functions run on the host (model/host_code.py), and which values are arrays the program computes
(model/computed_arrays.py)."""
from __future__ import annotations

import textwrap

import libcst as cst
import pytest

from jaxfuse_lint.model import SemanticModel
from jaxfuse_lint.model.computed_arrays import computed_array, known_scalar

HEADER = "import functools, itertools\nimport jax\nimport jax.numpy as jnp\nimport numpy as np\n"


def model_of(src: str) -> SemanticModel:
    return SemanticModel(cst.parse_module(HEADER + textwrap.dedent(src)))


def uses_of_value(src: str, name: str = "v"):
    """The uses of the value bound to `name` (its first binding) in function `f`."""
    m = model_of(src)
    f = next(fn for fn in m.index.functions if fn.name == "f")
    binding = f.bindings[name][0]
    return m.static_uses.uses(binding.value, f)


@pytest.mark.parametrize("body", [
    "v = np.roll(np.array([0, 1, 2]), -1)\n    a = v[1]\n    return jnp.sum(x, axis=a)",
    "v = np.arange(x.ndim)[::-1]\n    return jnp.transpose(x, v)",
    "v = np.array([4, 8]) * 2\n    return x.reshape(v)",
    "v = np.stack([np.arange(4), np.arange(4) + 1], axis=1)\n"
    "    return jax.lax.ppermute(x, 'i', perm=[tuple(p) for p in v])",
    "v = np.cumsum(np.array([2, 3]))\n    return jnp.split(x, v)",
    "v = np.arange(3)\n    return jnp.sum(x, axis=tuple(set(v)))",
    "v = np.argsort(np.arange(3))\n    fs = [jnp.sin, jnp.cos, jnp.tan]\n    return fs[v[0]](x)",
    "v = np.linspace(0, 1, 5)\n    if v[2] > 0.3:\n        return x\n    return -x",
    "v = np.arange(3)\n    return x * int(v.sum())",
    "v = np.arange(3)\n    return x * len(v.tolist())",
    "v = np.arange(3)\n    return x * len({k: 1 for k in v})",
    "v = np.arange(4)\n    return x * len(list(itertools.combinations(v, 2)))",
    "v = np.arange(3)\n    return jnp.roll(x, 1, v[0])",
])
def test_static_metadata(body):
    u = uses_of_value(f"@jax.jit\ndef f(x):\n    {body}\n")
    assert u.static_metadata and not u.reaches_program and not u.rewritable


def test_a_static_argnum_of_a_jitted_function_and_a_cache_key_are_static():
    src = """
    @functools.partial(jax.jit, static_argnums=(1,))
    def g(x, sizes):
        return jnp.split(x, sizes)

    @functools.lru_cache
    def table(n):
        return n

    @jax.jit
    def f(x):
        v = tuple(np.cumsum(np.array([1, 2])))
        w = np.arange(3)
        return g(x, v) * table(w[0])
    """
    assert uses_of_value(src).static_metadata
    assert uses_of_value(src, "w").static_metadata


def test_followed_into_a_helpers_parameter():
    src = """
    def helper(x, axes):
        return jnp.transpose(x, axes)

    def adds(x, c):
        return x + c

    @jax.jit
    def f(x):
        v = np.arange(x.ndim)[::-1]
        w = np.arange(x.ndim)
        return helper(x, v) + adds(x, w)
    """
    assert uses_of_value(src).static_metadata
    assert uses_of_value(src, "w").reaches_program


def test_program_and_static_uses_together_allow_no_rewrite():
    u = uses_of_value("@jax.jit\ndef f(x):\n    v = np.arange(3)\n    return x[v] + jnp.transpose(x, v)\n")
    assert u.reaches_program and u.needs_static and not u.rewritable and not u.static_metadata


@pytest.mark.parametrize("change", ["v[0, 0] = 1.0", "v.fill(0.5)", "v += 1", "np.fill_diagonal(v, 2.0)",
                                    "v.sort()"])
def test_changed_in_place(change):
    u = uses_of_value(f"@jax.jit\ndef f(x):\n    v = np.zeros((3, 3))\n    {change}\n    return x + v\n")
    assert u.mutated and u.reaches_program and not u.rewritable


def test_only_an_operand_of_traced_math_is_rewritable():
    u = uses_of_value("@jax.jit\ndef f(x):\n    v = np.arange(8) * 2\n    y = v.reshape(2, 4)\n    return x + y\n")
    assert u.reaches_program and u.rewritable


def test_iterated_items_go_where_the_loop_variable_goes():
    program = uses_of_value("@jax.jit\ndef f(x):\n    v = np.arange(3)\n    for i in v:\n"
                            "        x = x + i\n    return x\n")
    static = uses_of_value("@jax.jit\ndef f(x):\n    v = np.arange(3)\n    return x * len([int(i) for i in v])\n")
    assert program.reaches_program
    assert static.static_metadata


def test_a_host_library_needs_the_concrete_array():
    u = uses_of_value("import scipy.special\n@jax.jit\ndef f(x):\n    v = np.arange(3.0)\n"
                      "    return x * float(scipy.special.gamma(v).sum())\n")
    assert u.needs_static and not u.rewritable


def test_host_callback_functions_run_on_the_host():
    m = model_of("""
    def by_name(v):
        return np.asarray(v)

    def by_partial(v, k):
        return np.asarray(v) * k

    def inner(v):
        return v

    def outer(v):
        return inner(v)

    def traced_helper(v):
        return v * 2

    @jax.jit
    def f(x):
        s = jax.ShapeDtypeStruct(x.shape, x.dtype)
        a = jax.pure_callback(by_name, s, x)
        b = jax.pure_callback(functools.partial(by_partial, k=2), s, x)
        jax.debug.callback(functools.partial(outer), x)
        return a + b + traced_helper(x)
    """)
    fns = {f.name: f for f in m.index.functions}
    host = m.host_code.runs_on_host
    assert not host(fns["by_name"]) or not m.is_traced(fns["by_name"])
    assert host(fns["by_partial"]) and host(fns["outer"]) and host(fns["inner"])
    assert not host(fns["traced_helper"]) and not host(fns["f"])


@pytest.mark.parametrize("setup, computed", [
    ("h = p", False),
    ("h = state.params", False),
    ("h = state.weights['w']", False),
    ("h, k = state", False),
    ("h = flag and True", False),
    ("h = jnp.exp(p) * 2.0", True),
    ("h = p * 2.0", True),
    ("h = jnp.asarray(p)", False),
    ("h = jax.vmap(jnp.sin)(p)", True),
    ("g = jnp.exp(p)\n    h = g[1:]", True),
])
def test_computed_array(setup, computed):
    m = model_of(f"@jax.jit\ndef f(p, state, flag):\n    {setup}\n    return h\n")
    f = next(fn for fn in m.index.functions if fn.name == "f")
    ret = f.returns[0]
    assert computed_array(m, ret, f) is computed


@pytest.mark.parametrize("setup, scalar", [
    ("h = jnp.sum(p)", True),
    ("h = jnp.linalg.norm(p)", True),
    ("h = p.mean()", True),
    ("h = jnp.array(n)", True),
    ("h = jax.scipy.special.gammaln(jnp.asarray(n + 1))", True),
    ("h = jnp.zeros(n)", False),
    ("h = jnp.sum(p, axis=0)", False),
    ("h = jnp.exp(p)", False),
])
def test_known_scalar(setup, scalar):
    m = model_of(f"@jax.jit\ndef f(p, n: int = 3):\n    {setup}\n    return h\n")
    f = next(fn for fn in m.index.functions if fn.name == "f")
    assert known_scalar(m, f.returns[0], f) is scalar


def test_followed_through_self_attributes_and_parameter_defaults():
    src = """
    class Block:
        @jax.jit
        def __call__(self, x):
            self.perm = np.roll(np.arange(3), 1)
            self.table = np.linspace(0.0, 1.0, 64)
            return self.permute(x) * self.table

        def permute(self, x):
            return jnp.transpose(x, self.perm)

    @jax.jit
    def f(x):
        def inner(y, p=np.arange(3)[::-1]):
            return jnp.transpose(y, p)
        return inner(x)
    """
    m = model_of(src)
    fns = {f.name: f for f in m.index.functions}
    call = fns["__call__"]
    perm, table = (call.bindings.get(n) for n in ("perm", "table"))
    assert perm is None and table is None  # attributes, not names
    values = {}
    for site in m.index.calls:
        qn = m.qn(site.call.func, site.scope)
        if qn in ("numpy.roll", "numpy.linspace") or (qn == "numpy.arange" and site.scope is fns["f"]):
            values[qn] = m.static_uses.uses(site.call, site.scope)
    assert values["numpy.roll"].static_metadata and values["numpy.roll"].escapes
    assert values["numpy.linspace"].reaches_program and not values["numpy.linspace"].rewritable
    assert values["numpy.arange"].static_metadata


def test_another_librarys_argument_is_reported_but_never_rewritten():
    u = uses_of_value("import numpyro.distributions as dist\n@jax.jit\ndef f(x):\n    v = np.ones(2)\n"
                      "    return dist.LogNormal(x, v, validate_args=True).log_prob(0)\n")
    assert not u.static_metadata and not u.rewritable


def test_the_return_value_of_a_jitted_function_is_a_program_output():
    src = "@jax.jit\ndef f(x):\n    v = np.arange(4096.0)\n    return v\n\ny = f(1)\n"
    assert uses_of_value(src).reaches_program
