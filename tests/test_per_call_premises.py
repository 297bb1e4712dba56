"""The per-call premises of the trace-time state rules (issue 40, item 5).

JF403 (a write lost after tracing) states `read-per-call`: the state written is read as data of
each call. JF404 (a value frozen at the first trace) states `rebound-after-trace`,
`no-retrace-between` and `program-reads-it`. Each is proven, assumed or disproved by a named
inference (model/state_reads.py: who reads the state and how; model/frozen_values.py: the timeline
of host code); these tests pin the inference each case gets, and show with JAX what the disproved
cases do at run time.
"""
from __future__ import annotations

import textwrap
from dataclasses import replace

import jax.numpy as jnp
import libcst as cst
import pytest

from jaxfuse_lint.core.config import Settings
from jaxfuse_lint.engine.pipeline import check_source
from jaxfuse_lint.model import SemanticModel
from jaxfuse_lint.rules import all_rules

RULES = {r.code: r for r in all_rules()}


def premises(source: str, code: str) -> dict[int, dict[str, tuple[str, str]]]:
    """{row: {claim: (status, inference)}} of every finding the rule makes, before any tier is
    decided (disproved ones included)."""
    text = textwrap.dedent(source)
    module = cst.parse_module(text)
    model = SemanticModel(module)
    wrapper = cst.metadata.MetadataWrapper(module, unsafe_skip_copy=True)
    positions = wrapper.resolve(cst.metadata.PositionProvider)
    out: dict[int, dict[str, tuple[str, str]]] = {}
    for v in RULES[code].check(model, Settings()):
        out[positions[v.node].start.line] = {p.claim: (p.status, p.inference) for p in v.premises}
    return out


def rows(source: str, code: str, preview: bool = False) -> list[int]:
    settings = replace(Settings(), select=(code,), preview=preview)
    result = check_source(textwrap.dedent(source), "t.py", settings)
    assert not result.errors
    return [d.location.row for d in result.diagnostics if d.code == code]


# -- JF403 `read-per-call` -------------------------------------------------------------------------------
SUMMARY_NAMES = '''
    import jax
    import jax.numpy as jnp

    _summary_index = 0


    def unique_name(name):
        """`name` made unique with a counter. For use inside jax functions."""
        global _summary_index
        _summary_index += 1
        return f"{name}_{_summary_index}"


    def summary_scope():
        return f"summaries/{_summary_index}"


    @jax.jit
    def train_step(params, x):
        loss = jnp.mean((params * x) ** 2)
        return params - loss, {unique_name("loss"): loss, summary_scope(): loss}
'''


def test_a_counter_that_makes_names_unique_is_trace_time_bookkeeping_for_both_rules():
    """Kind 6 of the product owner's sweep: reported both as a side effect lost after tracing and as
    a frozen global. Only traced code reads the counter, into names; its writer runs only while
    tracing."""
    assert premises(SUMMARY_NAMES, "JF403")[11]["read-per-call"] == ("disproved", "trace-time-reads")
    assert premises(SUMMARY_NAMES, "JF404")[16]["rebound-after-trace"] == ("disproved", "rebound-while-tracing")
    assert rows(SUMMARY_NAMES, "JF403", preview=True) == rows(SUMMARY_NAMES, "JF404", preview=True) == []


def test_a_count_of_compilations_read_on_the_host_is_named_so():
    """optax #197's benchmark counts compilations on purpose: the host prints the count, and its
    name says what it counts."""
    source = '''
        import jax
        import jax.numpy as jnp

        compiled_times = 0


        def inference(scale, x):
            global compiled_times
            compiled_times += 1
            return x * scale


        for k in range(3):
            jax.jit(inference, static_argnums=0)(float(k), jnp.ones(3))
        print(compiled_times)
    '''
    assert premises(source, "JF403")[10]["read-per-call"] == ("disproved", "named-per-trace")
    renamed = source.replace("compiled_times", "counter")
    assert premises(renamed, "JF403")[10]["read-per-call"] == ("proven", "host-reads")
    assert rows(renamed, "JF403") == [10]


@pytest.mark.parametrize("how, expected", [
    ("print(count)", ("proven", "host-reads")),
    ("", ("assumed", "")),
    ("def test_once():\n    step(1.0)\n    assert count == 1", ("disproved", "read-by-tests")),
])
def test_a_count_is_decided_by_its_readers(how, expected):
    source = "import jax\ncount = 0\n@jax.jit\ndef step(x):\n    global count\n    count += 1\n    return x\n" + how
    assert premises(source, "JF403")[6]["read-per-call"] == expected


def test_a_count_the_program_adds_is_read_per_call():
    source = '''
        import jax

        def make():
            n = 0

            @jax.jit
            def stamp(x):
                nonlocal n
                n += 1
                return x + n

            return stamp
    '''
    assert premises(source, "JF403")[10]["read-per-call"] == ("proven", "program-reads")


def test_a_tracer_stored_in_a_factory_parameter_or_from_a_derivative_is_lost_per_call():
    """jax issues 12773 (`tot[0] += x`, `tot` a parameter of the factory) and 15136 (`self.param = ...`
    from `grad(...)` in a jitted method with `self` static)."""
    source = '''
        from functools import partial
        import jax
        import jax.numpy as jnp

        def foo(tot):
            @jax.jit
            def increment(x):
                tot[0] += x
                return tot[0]
            return increment

        incrementer = foo([0.0])

        class Trainer:
            def __init__(self, p):
                self.p = p

            def loss(self, p):
                return jnp.sum(p ** 2)

            @partial(jax.jit, static_argnums=0)
            def opt(self):
                grads = jax.grad(self.loss)(self.p)
                self.p = [w - 0.1 * g for w, g in zip([self.p], [grads])]
    '''
    found = premises(source, "JF403")
    assert found[9]["read-per-call"] == ("proven", "leaked-tracer")
    assert found[25]["read-per-call"] == ("proven", "leaked-tracer")
    assert rows(source, "JF403") == [9, 25]


def test_a_python_value_recorded_per_trace_loses_only_a_count():
    source = '''
        import jax
        shapes = set()
        names = []

        @jax.jit
        def f(x):
            shapes.add(x.shape)
            names.append(f"layer{x.ndim}")
            return x

        print(shapes, names)
    '''
    found = premises(source, "JF403")
    assert found[8]["read-per-call"] == found[9]["read-per-call"] == ("disproved", "trace-facts")


# -- JF404 -------------------------------------------------------------------------------------------------
def test_a_public_setter_proves_the_rebinding_and_an_entry_point_does_not():
    """The JIT documentation's `update_global` does nothing but rebind the global: the module offers
    it to be called at any time. A function that does more (an entry point) or a private one
    nothing calls is only assumed to run after the first trace."""
    source = '''
        import jax

        g = 0.0

        @jax.jit
        def f(x):
            return x + g

        def update_global():
            global g
            g = 10.0
    '''
    found = premises(source, "JF404")[8]
    assert found["rebound-after-trace"] == ("proven", "public-setter")
    assert found["no-retrace-between"] == ("proven", "setter-only")
    assert found["program-reads-it"] == ("proven", "constant")
    entry = source.replace("            g = 10.0", "            g = 10.0\n            print(f(1.0))")
    assert premises(entry, "JF404")[8]["rebound-after-trace"][0] == "assumed"
    private = source.replace("update_global", "_update_global")
    assert premises(private, "JF404")[8]["rebound-after-trace"][0] == "assumed"
    assert rows(source, "JF404") == [8] and rows(entry, "JF404") == rows(private, "JF404") == []


RETRACED = '''
    import jax
    import jax.numpy as jnp

    def fit(x):
        extra = 0.0

        @jax.jit
        def step(state):
            return state["w"] * 2 + extra

        first = step({"w": x})
        extra = 1.0
        state = {"w": x, "bias": jnp.asarray(extra)}
        return first, step(state)
'''


def test_a_rebinding_whose_new_value_rebuilds_the_arguments_may_retrace():
    """Kind 5: the closure is rebound and the next call's argument is rebuilt from the new value with
    another pytree structure: jit traces again and reads the new value. The lint cannot show the
    structure is kept: the premise is assumed (preview, no default finding)."""
    assert premises(RETRACED, "JF404")[10]["no-retrace-between"][0] == "assumed"
    assert rows(RETRACED, "JF404") == []
    assert rows(RETRACED, "JF404", preview=True) == [10]
    ns: dict = {}
    exec(compile(textwrap.dedent(RETRACED), "<retraced>", "exec"), ns)
    first, second = ns["fit"](jnp.ones(2))
    assert float(first[0]) == 2.0 and float(second[0]) == 3.0  # the retrace read extra = 1.0


def test_arguments_rebound_together_with_the_value_may_retrace():
    source = RETRACED.replace(
        '        extra = 1.0\n        state = {"w": x, "bias": jnp.asarray(extra)}',
        '        extra, state = 1.0, {"w": x, "bias": jnp.ones(())}')
    assert source != RETRACED
    assert premises(source, "JF404")[10]["no-retrace-between"][0] == "assumed"


def test_a_static_argument_computed_from_the_new_value_compiles_a_new_program():
    source = '''
        from functools import partial
        import jax

        def run(x):
            scale = 1.0

            @partial(jax.jit, static_argnames="n")
            def f(x, n):
                return x * scale * n

            f(x, n=1)
            scale = 2.0
            n = int(scale)
            return f(x, n=n)
    '''
    assert premises(source, "JF404")[10]["no-retrace-between"] == ("disproved", "static-argument")
    ns: dict = {}
    exec(compile(textwrap.dedent(source), "<static>", "exec"), ns)
    assert float(ns["run"](jnp.ones(()))) == 4.0  # scale = 2.0 read by the new program


def test_a_value_read_only_into_text_is_not_read_by_the_program():
    source = '''
        import jax

        run_name = "a"

        @jax.jit
        def f(x):
            print(f"tracing {run_name}")
            return x

        f(1.0)
        run_name = "b"
        f(1.0)
    '''
    assert premises(source, "JF404")[8]["program-reads-it"] == ("disproved", "text-only")


def test_a_value_used_as_a_shape_or_branch_is_frozen_and_said_so():
    source = '''
        import jax
        import jax.numpy as jnp

        n = 4

        @jax.jit
        def f(x):
            return jnp.zeros(n) + x

        f(1.0)
        n = 8
        f(1.0)
    '''
    assert premises(source, "JF404")[9]["program-reads-it"] == ("proven", "static-use")
    [d] = check_source(textwrap.dedent(source), "t.py", replace(Settings(), select=("JF404",))).diagnostics
    assert "its value fixes the program's structure (a shape, a branch taken) when `f` is traced" in d.message
