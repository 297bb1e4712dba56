"""Trace-time hazards (JF401-JF405): the fixes run in JAX and do what they claim; the staging model."""
from __future__ import annotations

import re
import subprocess
import sys
import textwrap
from dataclasses import replace
from pathlib import Path

import jax
import jax.numpy as jnp
import libcst as cst
import numpy as np
import pytest

from jaxfuse_lint.core.config import Settings
from jaxfuse_lint.engine.pipeline import check_source, fix_source
from jaxfuse_lint.model import Kind, SemanticModel
from jaxfuse_lint.model.staged_values import staged_values
from jaxfuse_lint.model.staging import staging
from jaxfuse_lint.model.scopes import walk

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared"


def settings(code: str) -> Settings:
    return replace(Settings(), select=(code,))


def load(source: str, name: str) -> dict:
    namespace: dict = {"__name__": name}
    exec(compile(source, f"<{name}>", "exec"), namespace)
    return namespace


def codes(source: str, code: str) -> list[int]:
    result = check_source(textwrap.dedent(source), "t.py", settings(code))
    assert not result.errors, result.errors
    return [d.location.row for d in result.diagnostics if d.code == code]


# -- JF405: the fix turns a trace-time failure into the eager result ---------------------------------
JF405_SOURCE = textwrap.dedent('''
    import jax
    import jax.numpy as jnp


    @jax.jit
    def flatten(x):
        return x.reshape(jnp.array(x.shape).prod())


    @jax.jit
    def flatten_trailing(x):
        n = jnp.prod(jnp.array(x.shape[1:]))
        return x.reshape(x.shape[0], n) / n


    @jax.jit
    def ramp(x):
        return x + jnp.arange(jnp.prod(jnp.asarray(x.shape))).reshape(x.shape)


    @jax.jit
    def loop(x):
        total = x.sum()
        for i in range(jnp.prod(jnp.array(x.shape[:1]))):
            total = total + i
        return total
''')


def test_jf405_fix_runs_under_jit_and_matches_the_eager_result():
    outcome = fix_source(JF405_SOURCE, "shapes.py", settings("JF405"))
    assert outcome.changed and not outcome.remaining, outcome.remaining
    assert "import math" in outcome.source and "jnp.prod" not in outcome.source
    before = load(JF405_SOURCE, "before")
    after = load(outcome.source, "after")
    x = jnp.arange(24.0).reshape(2, 3, 4)
    for name in ("flatten", "flatten_trailing", "ramp", "loop"):
        with pytest.raises(Exception) as info:  # noqa: PT011 - JAX raises TypeError or a ConcretizationTypeError
            before[name](x)
        assert "concrete" in str(info.value).lower() or "tracer" in str(info.value).lower(), info.value
        with jax.disable_jit():
            expected = before[name](x)  # the original code is right eagerly
        np.testing.assert_allclose(np.asarray(after[name](x)), np.asarray(expected))


def test_jf405_leaves_array_uses_alone():
    source = '''
    import jax, jax.numpy as jnp
    @jax.jit
    def f(x):
        n = jnp.prod(jnp.array(x.shape))
        return x.reshape(n).astype(n.dtype), x.sum() / jnp.prod(jnp.array(x.shape))
    '''
    assert codes(source, "JF405") == [5]
    outcome = fix_source(textwrap.dedent(source), "t.py", settings("JF405"))
    assert not outcome.changed  # n is also used as an array: no fix


# -- JF401: the fix prints the runtime values on every call -----------------------------------------
JF401_SOURCE = textwrap.dedent('''
    import jax.numpy as jnp
    from jax import jit


    @jit
    def log2_with_print(x):
        print("printed x:", x)
        return jnp.log(x) / jnp.log(2.0)


    @jit
    def formatted(x):
        print(f"x={x:.1f} {{braces}}", "shape", x.shape, end=";\\n")
        print(f"shape {x.shape}: {x}")
        return x
''')


def test_jf401_fix_prints_values_under_jit_on_every_call(capfd):
    outcome = fix_source(JF401_SOURCE, "p.py", settings("JF401"))
    assert outcome.changed
    assert not re.search(r"(?<![.\w])print\(", outcome.source)
    assert "import jax\n" in outcome.source

    before = load(JF401_SOURCE, "before")
    capfd.readouterr()
    before["log2_with_print"](jnp.float32(2.0))
    before["log2_with_print"](jnp.float32(8.0))
    out = capfd.readouterr().out
    assert out.count("printed x:") == 1 and "Tracer" in out  # the original prints a tracer, once

    after = load(outcome.source, "after")
    results = [after["log2_with_print"](jnp.float32(v)) for v in (2.0, 8.0)]
    after["formatted"](jnp.float32(8.0))
    jax.block_until_ready(results)
    jax.effects_barrier()
    out = capfd.readouterr().out
    assert "Tracer" not in out
    assert out.count("printed x: 2.0") == 1 and out.count("printed x: 8.0") == 1
    assert "x=8.0 {braces} shape ();\n" in out
    assert "shape (): 8.0" in out
    np.testing.assert_allclose([float(r) for r in results], [1.0, 3.0])


def test_jf401_without_a_faithful_rewrite_has_no_fix():
    source = '''
    import jax, sys
    @jax.jit
    def f(x):
        name = "x"
        print(name, x)
        print(x, file=sys.stderr)
        print(x, end="")
        print(f"{x=}")
        return x
    '''
    assert codes(source, "JF401") == [6, 7, 8, 9]
    assert not fix_source(textwrap.dedent(source), "t.py", settings("JF401")).changed


# -- JF402 on the tutorial's examples ----------------------------------------------------------------
def test_jf402_tutorial_f_and_g_and_their_static_versions():
    source = '''
    import jax
    from functools import partial

    def f(x):
        if x > 0:
            return x
        return 2 * x

    def g(x, n):
        i = 0
        while i < n:
            i += 1
        return x + i

    f_jit = jax.jit(f)
    g_jit = jax.jit(g)

    def f2(x):
        if x > 0:
            return x
        return 2 * x

    def g2(x, n):
        i = 0
        while i < n:
            i += 1
        return x + i

    f_jit_correct = jax.jit(f2, static_argnums=0)
    g_jit_correct = jax.jit(g2, static_argnames=['n'])

    @partial(jax.jit, static_argnames=['n'])
    def g_jit_decorated(x, n):
        i = 0
        while i < n:
            i += 1
        return x + i
    '''
    assert codes(source, "JF402") == [6, 12]


def test_jf402_flagged_code_really_fails_and_unflagged_code_runs():
    source = textwrap.dedent('''
        import jax, jax.numpy as jnp
        from functools import partial

        @jax.jit
        def bad_if(x):
            if x.sum() > 0:
                return x
            return -x

        @jax.jit
        def bad_int(x):
            return x * int(jnp.max(x))

        @partial(jax.jit, static_argnames=["n"])
        def good_loop(x, n):
            i = 0
            while i < n:
                i += 1
            return x + i

        @jax.jit
        def good_shapes(x, y=None):
            if y is None and x.ndim == 1 and x.shape[0] > 2:
                return x * 2
            return x
    ''')
    flagged = {d.location.row for d in check_source(source, "t.py", settings("JF402")).diagnostics}
    assert flagged == {7, 13}
    ns = load(source, "m")
    x = jnp.arange(3.0)
    for name in ("bad_if", "bad_int"):
        with pytest.raises(jax.errors.ConcretizationTypeError):
            ns[name](x)
    np.testing.assert_allclose(ns["good_loop"](x, 4), x + 4)
    np.testing.assert_allclose(ns["good_shapes"](x), x * 2)


# -- JF403 / JF404: what the hazard looks like at run time ---------------------------------------------
def test_jf403_and_jf404_flag_what_happens_only_at_trace_time():
    source = textwrap.dedent('''
        import jax
        log = []
        g = 0.0

        @jax.jit
        def f(x):
            log.append(x)
            return x + g

        def set_g(v):
            global g
            g = v
    ''')
    assert [d.location.row for d in check_source(source, "t.py", settings("JF403")).diagnostics] == [8]
    assert [d.location.row for d in check_source(source, "t.py", settings("JF404")).diagnostics] == [9]
    ns = load(source, "m")
    assert float(ns["f"](1.0)) == 1.0
    ns["set_g"](10.0)
    assert float(ns["f"](2.0)) == 2.0  # the global is frozen: 12.0 would be the "fresh" value
    assert len(ns["log"]) == 1  # appended once, at trace time, and it holds a tracer
    assert isinstance(ns["log"][0], jax.core.Tracer)


# -- the staging model ---------------------------------------------------------------------------------
def _model(source: str) -> SemanticModel:
    return SemanticModel(cst.parse_module(textwrap.dedent(source)))


def _fn(model: SemanticModel, name: str):
    return next(f for f in model.index.functions if f.name == name)


def test_staging_distinguishes_eager_transforms():
    m = _model('''
        import jax
        from functools import partial

        @jax.jit
        def jitted(x): return x

        @jax.grad
        def eager(x): return x

        def loss(p): return p

        @jax.jit
        def step(p):
            return jax.grad(loss)(p)

        @jax.vmap
        def batched(x): return x

        def body(i, c, extra=1, *, flag=False): return c

        def run(x):
            return jax.lax.fori_loop(0, 3, body, x)

        def kernel(x, block): return x
        kernel_jit = jax.jit(partial(kernel, block=4))
    ''')
    st = staging(m)
    assert st.is_staged(_fn(m, "jitted"))
    assert not st.is_staged(_fn(m, "eager"))
    assert st.is_staged(_fn(m, "loss"))  # grad inside jit is staged by the jit
    assert not st.is_staged(_fn(m, "batched")) and st.is_staged(_fn(m, "batched"), batching=True)
    v = staged_values(m)
    assert v.param_kind(_fn(m, "eager"), "x") is Kind.UNKNOWN
    assert m.values.param_kind(_fn(m, "eager"), "x") is Kind.TRACED  # the general analysis: a tracer
    assert v.param_kind(_fn(m, "loss"), "p") is Kind.TRACED
    body = _fn(m, "body")
    assert [v.param_kind(body, p) for p in ("i", "c", "extra", "flag")] == [
        Kind.TRACED, Kind.TRACED, Kind.UNKNOWN, Kind.UNKNOWN]
    kernel = _fn(m, "kernel")
    # `partial(kernel, block=4)`: the bound Python int stays a Python value under the jit
    assert v.param_kind(kernel, "x") is Kind.TRACED and v.param_kind(kernel, "block") is Kind.STATIC


def test_identity_tests_and_pytree_membership_are_not_traced():
    m = _model('''
        import jax
        @jax.jit
        def f(x, params):
            a = x is None
            b = x is not None and x.shape[0] > 2
            c = "w" in params
            d = params.use_bias
            e = x > 0
            return a, b, c, d, e
    ''')
    fn = _fn(m, "f")
    st = staged_values(m)
    assigns = {t.target.value: a.value for a in walk(m.module) if isinstance(a, cst.Assign) for t in a.targets}
    assert m.kind(assigns["a"], fn) is Kind.STATIC and m.kind(assigns["b"], fn) is Kind.STATIC
    assert st.kind(assigns["c"], fn) is Kind.UNKNOWN and st.kind(assigns["d"], fn) is Kind.UNKNOWN
    assert st.kind(assigns["e"], fn) is Kind.TRACED


# -- the libcst commands -------------------------------------------------------------------------------
@pytest.mark.parametrize("command,code,case", [
    ("JaxDebugPrintCommand", "JF401", "positives"),
    ("MathProdShapeCommand", "JF405", "positives"),
])
def test_libcst_command_applies_the_same_fix(tmp_path, command, code, case):
    src = ROOT / "fixtures" / code / f"{case}.py"
    target = tmp_path / "module.py"
    target.write_text(src.read_text())
    env = {"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin", "JAX_PLATFORMS": "cpu"}
    proc = subprocess.run(
        [sys.executable, "-m", "libcst.tool", "codemod", "-x", "--no-format", f"jaxfuse_lint.engine.libcst_commands.{command}",
         str(target)], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert target.read_text() == (ROOT / "fixtures" / code / f"{case}.fixed.py").read_text()


# -- acceptance --------------------------------------------------------------------------------------
@pytest.mark.skipif(not (SHARED / "acceptance" / "score.py").exists(), reason="no shared acceptance corpus")
def test_acceptance_jf4_precision_and_recall():
    tool = Path(sys.executable).with_name("jaxfuse-lint")
    cmd = str(tool) if tool.exists() else f"{sys.executable} -m jaxfuse_lint"
    proc = subprocess.run(
        [sys.executable, str(SHARED / "acceptance" / "score.py"), "--cmd", cmd, "--codes", "JF4",
         "--min-precision", "1", "--min-recall", "1"], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "precision 1.00 recall 1.00" in proc.stdout
