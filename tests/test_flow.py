"""Flow-sensitive facts (model/flow.py): reaching bindings and isinstance / `is None` narrowing."""
from __future__ import annotations

import textwrap

import libcst as cst
import pytest

from jaxfuse_lint.model import Kind, SemanticModel
from jaxfuse_lint.model.flow import CONTAINER, PYTHON


def model_of(src: str) -> SemanticModel:
    return SemanticModel(cst.parse_module(textwrap.dedent(src)))


def reads(model, fn_name, var):
    """(reaching binding kinds, narrowing, kind) for each read of `var` in `fn_name`, in order."""
    fn = next(f for f in model.index.functions if f.name == fn_name)
    out = []
    for r in fn.reads:
        if r.name.value != var:
            continue
        found = model.bindings_at(r.name, fn)
        out.append((sorted(b.kind for b in found[1]), model.narrowed(r.name, fn), model.kind(r.name, fn)))
    return out


def test_branch_rebinding_does_not_reach_the_other_branch():
    m = model_of("""
        import jax, jax.numpy as jnp
        from functools import partial
        @partial(jax.jit, static_argnames="bins")
        def f(x, bins):
            if isinstance(bins, tuple):
                y = bins[0]
            else:
                bins = jnp.asarray(bins)
            return bins
    """)
    first, second, after_else, returned = reads(m, "f", "bins")
    assert first == (["param"], None, Kind.STATIC)  # the isinstance test itself
    assert second == (["param"], CONTAINER, Kind.STATIC)
    assert after_else == (["param"], None, Kind.STATIC)  # jnp.asarray(bins) reads the parameter
    assert returned[0] == ["assign", "param"] and returned[2] is Kind.TRACED


@pytest.mark.parametrize("test,body_fact", [
    ("isinstance(n, int)", PYTHON),
    ("isinstance(n, (int, float))", PYTHON),
    ("isinstance(n, int | None)", PYTHON),
    ("n is None", PYTHON),
    ("type(n) is float", PYTHON),
    ("isinstance(n, (list, tuple))", CONTAINER),
    ("isinstance(n, (int, tuple))", CONTAINER),
    ("isinstance(n, int) and n > 0", PYTHON),
    ("isinstance(n, jax.Array)", None),
    ("n is not None", None),
    ("isinstance(n, int) or n > 0", None),
])
def test_narrowing_in_the_true_branch(test, body_fact):
    m = model_of(f"""
        import jax
        @jax.jit
        def f(x, n):
            if {test}:
                x = x * n
            return x * n
    """)
    rows = reads(m, "f", "n")
    in_body, after = rows[-2], rows[-1]
    assert in_body[1] == body_fact
    assert after[1] is None
    if body_fact == PYTHON:
        assert in_body[2] is Kind.STATIC


def test_early_exit_narrows_what_follows_and_rebinding_ends_it():
    m = model_of("""
        import jax, jax.numpy as jnp
        @jax.jit
        def f(x, n):
            if not isinstance(n, int):
                raise TypeError(n)
            y = x * n
            n = jnp.sum(x)
            return y + n
    """)
    rows = reads(m, "f", "n")
    assert rows[-2][1] == PYTHON and rows[-2][2] is Kind.STATIC
    assert rows[-1] == (["assign"], None, Kind.TRACED)


def test_loop_back_edge_reaches_the_top_of_the_body():
    m = model_of("""
        import jax, jax.numpy as jnp
        from functools import partial
        @partial(jax.jit, static_argnames="k")
        def f(x, k):
            y = k
            while x.size > 0:
                z = k
                k = jnp.max(x)
            return k
    """)
    rows = reads(m, "f", "k")
    assert rows[0] == (["param"], None, Kind.STATIC)
    assert rows[1][0] == ["assign", "param"] and rows[1][2] is Kind.TRACED
    assert rows[2][0] == ["assign", "param"]  # the loop may not run


def test_try_handlers_see_bindings_from_anywhere_in_the_body():
    m = model_of("""
        import jax.numpy as jnp
        def f(x):
            a = 1
            try:
                a = jnp.zeros(3)
                x = x / a
            except ZeroDivisionError:
                return a
            return a
    """)
    rows = reads(m, "f", "a")
    assert rows[1][0] == ["assign", "assign"]
    assert rows[2][0] == ["assign"]


def test_nested_function_reads_fall_back_to_every_binding():
    m = model_of("""
        def f(x):
            a = 1
            def g():
                return a
            a = 2
            return g
    """)
    g = next(f for f in m.index.functions if f.name == "g")
    read = next(r for r in g.reads if r.name.value == "a")
    assert len(m.bindings_at(read.name, g)[1]) == 2


def test_deeply_nested_loops_fall_back_to_every_binding_instead_of_taking_seconds():
    def nest(depth, indent):
        pad = "    " * indent
        if depth == 0:
            return "".join(f"{pad}a{i} = a{(i + 1) % 20} + x\n" for i in range(20))
        return f"{pad}for i{depth} in range(3):\n{pad}    if n:\n" + nest(depth - 1, indent + 2) + \
            f"{pad}    else:\n{pad}        n = x\n"

    src = "def f(x, n):\n" + "".join(f"    a{i} = x\n" for i in range(20)) + nest(12, 1) + "    return a0\n"
    m = SemanticModel(cst.parse_module(src))
    f = m.index.functions[0]
    read = f.reads[-1].name
    assert read.value == "a0"
    assert len(m.bindings_at(read, f)[1]) == 2  # all of them: the flow gave up
