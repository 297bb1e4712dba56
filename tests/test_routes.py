"""Routes into tracing (model/routes.py, model/instances.py) and library mode (model/assumed.py)."""
from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import libcst as cst
import pytest

from jaxfuse_lint.core.config import ConfigError, settings_from_table
from jaxfuse_lint.model import SemanticModel
from jaxfuse_lint.model import api
from jaxfuse_lint.model.routes import ROUTES
from jaxfuse_lint.model.staged_values import staged_values
from jaxfuse_lint.model.staging import staging
from jaxfuse_lint.model.staging_transforms import STAGING


def model_of(src: str) -> SemanticModel:
    return SemanticModel(cst.parse_module(textwrap.dedent(src)))


def traced_names(src: str) -> set[str]:
    return {fn.display_name for fn in model_of(src).traced.reasons}


def test_the_table_drives_the_model():
    for name, r in ROUTES.items():
        if r.kind == "transform":
            assert name in api.TRANSFORMS
        if r.kind == "driver":
            assert name in api.CONTROL_FLOW
        if r.compiles:
            assert r.stages and name in api.COMPILING and name in STAGING, name
    assert "equinox.filter_jit" in api.COMPILING


def test_a_class_that_merely_has_call_is_not_traced():
    names = traced_names("""
        import jax
        import equinox as eqx

        class Layer(eqx.Module):
            def __call__(self, x):
                return x
            def other(self, x):
                return x

        class Unused:
            def __call__(self, x):
                return x

        @jax.jit
        def f(x):
            layer = Layer()
            return layer(x)
    """)
    # (an equinox Module's `__call__` is traced by default: test_framework_bodies_are_traced_by_default)
    assert names == {"f", "Layer.__call__"}


def test_instances_through_attributes_lists_and_annotations():
    names = traced_names("""
        import jax

        class Block:
            def __call__(self, x):
                return x

        class Head:
            def __call__(self, x):
                return x
            def aux(self, x):
                return x

        class Net:
            head: Head
            def __init__(self):
                self.blocks = [Block() for _ in range(3)]
            def __call__(self, x):
                for b in self.blocks:
                    x = b(x)
                return self.head.aux(x)

        def step(net: Net, x):
            return jax.vmap(net)(x)

        fast = jax.jit(step)
    """)
    assert names == {"step", "Net.__call__", "Block.__call__", "Head.aux"}


def test_haiku_transform_and_linen_apply_are_entry_points():
    m = model_of("""
        import haiku as hk
        import flax.linen as nn
        import jax

        def forward(x):
            return x

        def unused_forward(x):
            return x

        net = hk.transform_with_state(forward)
        other = hk.transform(unused_forward)

        class Model(nn.Module):
            def __call__(self, x):
                return x

        model = Model()

        @jax.jit
        def step(params, state, rng, x):
            out, state = net.apply(params, state, rng, x)
            return model.apply(params, x), out
    """)
    names = {fn.display_name: fn for fn in m.traced.reasons}
    # `unused_forward` is traced by default (a `hk.transform`ed function), not as an entry point.
    assert set(names) == {"step", "forward", "unused_forward", "Model.__call__"}
    assert m.trace_reason(names["forward"]).kind == "entry"
    assert m.trace_reason(names["unused_forward"]).kind == "framework"
    values = staged_values(m)
    # apply(params, state, rng, x): `x` is forward's first parameter, a tracer.
    assert values.param_kind(names["forward"], "x").value == "traced"
    assert values.param_kind(names["Model.__call__"], "x").value == "traced"


def test_config_assume_traced():
    s = settings_from_table({"assume-traced": "public-array-functions"}, "pyproject.toml", "/")
    assert s.assume_traced == ("public-array-functions",)
    s = settings_from_table({"assume-traced": ["pkg.kernels.*"]}, "pyproject.toml", "/")
    assert s.assume_traced == ("pkg.kernels.*",)
    with pytest.raises(ConfigError, match="assume-traced"):
        settings_from_table({"assume-traced": "everything"}, "pyproject.toml", "/")
    with pytest.raises(ConfigError, match="assume-traced"):
        settings_from_table({"assume-traced": [1]}, "pyproject.toml", "/")


LIBRARY = """
import jax.numpy as jnp

_log = []


def deposit(pos, weights):
    _log.append(pos)
    return jnp.sum(pos * weights)


def count(n):
    _log.append(n)
    return n + 1


def _helper(x):
    _log.append(x)
    return jnp.sin(x)
"""


def run_check(tmp_path: Path, config: str | None) -> str:
    (tmp_path / "pm").mkdir()
    (tmp_path / "pm" / "__init__.py").write_text("")
    (tmp_path / "pm" / "kernels.py").write_text(LIBRARY)
    if config is not None:
        (tmp_path / "pyproject.toml").write_text(f"[tool.jaxfuse-lint]\nassume-traced = {config}\n")
    proc = subprocess.run([sys.executable, "-m", "jaxfuse_lint", "check", "--no-cache", "-j1", "--select", "JF403",
                           "pm"], cwd=tmp_path, capture_output=True, text=True)
    assert proc.returncode in (0, 1), proc.stderr
    return proc.stdout


def test_library_mode_is_off_by_default(tmp_path):
    assert "JF403" not in run_check(tmp_path, None)


def test_library_mode_public_array_functions(tmp_path):
    out = run_check(tmp_path, '"public-array-functions"')
    lines = [line for line in out.splitlines() if "JF403" in line]
    # `deposit` takes arrays to jnp; `count` does not; `_helper` is private.
    assert len(lines) == 1 and ":8:5:" in lines[0], out
    assert "assumed traced (configured)" in lines[0]


def test_library_mode_patterns(tmp_path):
    out = run_check(tmp_path, '["pm.kernels._*", "pm.kernels.count"]')
    rows = sorted(int(line.split(":")[1]) for line in out.splitlines() if "JF403" in line)
    assert rows == [13, 18], out


def test_library_drivers_and_lifted_transforms():
    m = model_of("""
        import blackjax
        import flax.linen as nn
        import jax
        import optax

        def logdensity(position):
            return -position ** 2

        def never_used(position):
            return position

        kernel = blackjax.nuts(logdensity, step_size=0.1, inverse_mass_matrix=1.0)

        class Cell(nn.Module):
            def __call__(self, carry, x):
                return carry, x

        class Stack(nn.Module):
            def __call__(self, xs):
                scan = nn.scan(Cell, variable_broadcast="params", split_rngs={"params": False})
                return scan()(0.0, xs)

        def make_opt():
            def init_fn(params):
                return ()
            def update_fn(updates, state, params=None):
                return updates, state
            return optax.GradientTransformation(init_fn, update_fn)
    """)
    reasons = {fn.display_name: fn for fn in m.traced.reasons}
    assert {"logdensity", "Cell.__call__", "init_fn", "update_fn"} <= set(reasons)
    assert "never_used" not in reasons
    assert [r.kind for r in m.traced.reasons[reasons["Stack.__call__"]]] == ["framework"]
    st = staging(m)
    # blackjax passes tracers to the log-density; optax's update is staged only where the
    # optimizer is used under jit.
    assert staged_values(m).param_kind(reasons["logdensity"], "position").value == "traced"
    assert not st.is_staged(reasons["update_fn"])
    why = m.trace_reason(reasons["logdensity"])
    assert why.kind == "driver" and why.transform == "blackjax.nuts"


def test_an_object_handed_to_a_builtin_or_tree_utility_is_not_called():
    names = traced_names("""
        import jax

        class Model:
            def __call__(self, x):
                return x

            @jax.jit
            def step(self, x):
                assert isinstance(self, Model)
                leaves = jax.tree_util.tree_leaves(self)
                return x
    """)
    assert names == {"Model.step"}


def test_static_argnums_of_a_jitted_entry_point_count_past_its_own_arguments():
    m = model_of("""
        import haiku as hk
        import jax

        def forward(x, training):
            return x

        net = hk.transform(forward)
        apply = jax.jit(net.apply, static_argnums=3)
    """)
    fn = next(f for f in m.traced.reasons if f.display_name == "forward")
    values = staged_values(m)
    # apply(params, rng, x, training): argnum 3 is `training`.
    assert values.param_kind(fn, "training").value == "static"
    assert values.param_kind(fn, "x").value == "traced"


def test_forwarded_apply_fn_stored_on_self():
    names = traced_names("""
        import jax
        import flax.linen as nn

        class Net(nn.Module):
            def __call__(self, x):
                return x

        class Trainer:
            def __init__(self, apply_fn):
                self.apply_fn = apply_fn

            @jax.jit
            def step(self, params, x):
                return self.apply_fn(params, x)

        net = Net()
        trainer = Trainer(apply_fn=net.apply)
    """)
    assert names == {"Trainer.step", "Net.__call__"}


# -- routes into tracing (issue 25): rebinding, partials, in_axes, argnums, framework bodies --------

def _diagnostics(src: str, code: str) -> list:
    from dataclasses import replace

    from jaxfuse_lint.core.config import Settings
    from jaxfuse_lint.engine.pipeline import check_source

    result = check_source(textwrap.dedent(src), "t.py", replace(Settings(), select=(code,)))
    assert not result.errors, result.errors
    return [d for d in result.diagnostics if d.code == code]


def test_a_function_rebound_to_its_jit_is_traced_and_the_message_says_so():
    found = _diagnostics("""
        import jax
        from jax import jit

        def integrate(y, n):
            print(y)
            return y * n

        integrate = jit(integrate, static_argnums=(1,))
    """, "JF401")
    assert len(found) == 1
    assert "`integrate` is rebound to `jit(integrate, static_argnums=(1,))` on line 9" in found[0].message
    m = model_of("""
        import jax
        def f(x):
            return x
        f = jax.jit(jax.vmap(f))
        def g(x):
            return x
        g = print
    """)
    names = {fn.display_name for fn in m.traced.reasons}
    assert names == {"f"}
    # the name still resolves to the def (called from traced code, it is the same function)
    assert m.function_named("f", m.index.scope).name == "f"
    assert m.function_named("g", m.index.scope) is None


def test_partial_bound_values_keep_their_kind_under_drivers_and_transforms():
    m = model_of("""
        from functools import partial
        import jax
        from jax import lax

        def body(i, x, scale, clip):
            return x

        def run(x):
            return lax.fori_loop(0, 3, partial(body, scale=2.0, clip=True), x)

        def step(flag, carry, x):
            return carry, x

        def scan_it(xs):
            return lax.scan(partial(step, False), 0.0, xs)

        def loss(w, n):
            return w

        @jax.jit
        def traced(w, n):
            return jax.vmap(partial(loss, n=n))(w)
    """)
    v = staged_values(m)
    fns = {fn.display_name: fn for fn in m.traced.reasons}
    assert [v.param_kind(fns["body"], p).value for p in ("i", "x", "scale", "clip")] == [
        "traced", "traced", "static", "static"]
    assert [v.param_kind(fns["step"], p).value for p in ("flag", "carry", "x")] == ["static", "traced", "traced"]
    assert v.param_kind(fns["loss"], "n").value == "traced"  # bound to the jitted caller's tracer


def test_vmap_in_axes_and_grad_argnums_decide_which_parameters_are_tracers():
    m = model_of("""
        import jax

        def mapped(x, y):
            return x

        out = jax.vmap(mapped, in_axes=(0, None))(1.0, 2.0)

        def scaled(v, k):
            return v

        @jax.jit
        def apply_all(xs, n):
            return jax.vmap(scaled, in_axes=(0, None))(xs, n)

        def energy(t, i):
            return t

        def outer(t, i):
            return jax.grad(energy)(t, i - 1)

        @jax.jit
        def staged(t, i):
            return jax.grad(energy, argnums=1)(t, i)
    """)
    v = staged_values(m)
    fns = {fn.display_name: fn for fn in m.traced.reasons}
    assert v.param_kind(fns["mapped"], "x").value == "traced"
    assert v.param_kind(fns["mapped"], "y").value == "static"  # passed through: the caller's 2.0
    assert v.param_kind(fns["scaled"], "k").value == "traced"  # passed through: the jit's tracer
    # `i` is not differentiated by `grad(energy)` and `t` is not by `argnums=1`: both are the
    # caller's; under `staged`'s jit those are tracers, in the eager `outer` they are not staged.
    assert v.param_kind(fns["energy"], "t").value == "traced"


def test_framework_bodies_are_traced_by_default_staged_but_not_compiled():
    m = model_of("""
        import flax.linen as nn
        import equinox as eqx
        import haiku as hk

        class Linen(nn.Module):
            def setup(self):
                pass
            def __call__(self, x, train):
                return x
            @nn.compact
            def encode(self, z):
                return z
            def helper(self, x):
                return x

        class Eqx(eqx.Module):
            def __call__(self, x):
                return x

        class Hk(hk.Module):
            def __call__(self, x):
                return x
            def initial_state(self, n):
                return n

        def forward(batch):
            return batch

        net = hk.transform(forward)

        class Plain:
            def __call__(self, x):
                return x
    """)
    fns = {fn.display_name: fn for fn in m.traced.reasons}
    assert set(fns) == {"Linen.setup", "Linen.__call__", "Linen.encode", "Eqx.__call__", "Hk.__call__",
                        "Hk.initial_state", "forward"}
    st = staging(m)
    for fn in fns.values():
        assert st.is_staged(fn) and not st.is_compiled(fn)
    v = staged_values(m)
    assert v.param_kind(fns["Linen.__call__"], "x").value == "traced"
    assert v.param_kind(fns["Linen.__call__"], "train").value == "unknown"
    assert v.param_kind(fns["Linen.encode"], "z").value == "traced"
    assert v.param_kind(fns["Hk.initial_state"], "n").value == "unknown"
    assert v.param_kind(fns["forward"], "batch").value == "traced"
    assert m.trace_reason(fns["Linen.__call__"]).description == "flax Module method: traced when the module is applied"


def test_a_framework_only_file_is_analysed():
    from jaxfuse_lint.core.config import Settings
    from jaxfuse_lint.engine.pipeline import mentions_jax

    assert mentions_jax("import equinox as eqx\n", Settings())
    assert mentions_jax("from flax import nnx\n", Settings())
    assert not mentions_jax("import numpy as np\n", Settings())
    found = _diagnostics("""
        from flax import nnx

        class Head(nnx.Module):
            def __call__(self, x):
                print(x)
                return x.T
    """, "JF401")
    assert len(found) == 1 and "flax nnx Module `__call__`" in found[0].message


def test_jf402_suggests_static_only_for_python_scalars():
    found = _diagnostics("""
        import jax
        import jax.numpy as jnp

        @jax.jit
        def f(x, pos):
            if pos > 0:
                return x
            return x

        @jax.jit
        def g(x, n: int):
            if n > 2:
                return x
            return x

        def k(x, steps):
            if steps > 3:
                return x
            return x

        k = jax.jit(k)
        k(jnp.ones(3), 5)
    """, "JF402")
    by_row = {d.location.row: d.message for d in found}
    assert "static_argnames" not in by_row[7]  # `pos` may be an array: static would raise
    assert "static_argnames=['n']" in by_row[13]  # annotated `int`
    assert "static_argnames=['steps']" in by_row[18]  # passed a literal int


def test_jf405_advice_fits_the_computation():
    found = _diagnostics("""
        import jax
        import jax.numpy as jnp

        @jax.jit
        def a(x):
            return x.reshape(jnp.array(x.shape).prod())

        @jax.jit
        def b(x):
            half = jnp.floor_divide(x.shape[0], 2)
            return x[:half]
    """, "JF405")
    by_row = {d.location.row: d.message for d in found}
    assert "math.prod" in by_row[7]
    assert "math.prod" not in by_row[11] and "`x.shape[0]` is already one" in by_row[11]


def test_jf404_frozen_closure_local():
    found = _diagnostics("""
        import jax

        def make(x):
            scale = 1.0

            @jax.jit
            def inner(v):
                return v * scale

            y = inner(x)
            scale = 2.0
            return inner(y)
    """, "JF404")
    assert len(found) == 1
    assert "`scale` of the enclosing `make`, which is rebound on line 12" in found[0].message


def test_recall_corpus_of_routes_scores_full_precision_and_recall():
    import importlib.util

    root = Path(__file__).resolve().parent.parent / "benchmarks"
    spec = importlib.util.spec_from_file_location("recall_score", root / "recall_score.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    out = mod.score(root / "recall")
    assert len(out["tp"]) >= 18
    assert not out["fp"] and not out["fn"], (out["fp"], out["fn"])
