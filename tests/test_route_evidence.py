"""The shared evidence of "traced on a route that runs" (model/evidence.py): the mechanism the
trace-hazard rules share, beside the fixtures that show it per rule (fixtures/JF402/
host_code_guards, stale_routes, resolution_order, none_branches, partial_bound_values,
demonstrations; fixtures/JF403/method_names, host_code_and_routes; fixtures/JF405/
route_evidence; fixtures/cross_module/stale_scripts)."""
from __future__ import annotations

import json
import textwrap
from dataclasses import replace

import libcst as cst

from jaxfuse_lint.core.config import Settings
from jaxfuse_lint.engine.pipeline import check_source
from jaxfuse_lint.model import SemanticModel
from jaxfuse_lint.model.evidence import ASSUMED, CAUGHT, DEAD, SHOWN, evidence


def _model(src: str) -> SemanticModel:
    return SemanticModel(cst.parse_module(textwrap.dedent(src)))


def _fn(model: SemanticModel, name: str):
    [fn] = [f for f in model.index.functions if f.display_name == name]
    return fn


def test_each_route_is_judged_once_for_every_rule():
    m = _model("""
        import jax

        def stale(a, b, c):
            return a

        def shown(a, b):
            return a

        def demo(a):
            return a

        fast = jax.jit(stale)
        fast(1.0)
        jax.jit(shown)(1.0, 2.0)
        try:
            jax.jit(demo)(1.0)
        except TypeError:
            pass

        @jax.jit
        def entry(x):
            return helper(x, 1)

        def helper(x):
            return x
    """)
    ev = evidence(m)
    assert ev.route(_fn(m, "stale")).status == ASSUMED
    assert "fast(1.0)" in ev.route(_fn(m, "stale")).preview
    assert ev.route(_fn(m, "shown")).status == SHOWN and ev.route(_fn(m, "shown")).preview is None
    assert ev.route(_fn(m, "demo"), raises=True).status == CAUGHT
    assert ev.route(_fn(m, "demo"), raises=False).status == SHOWN  # a side effect is no error
    assert ev.route(_fn(m, "entry")).status == SHOWN  # never called here: an entry point
    assert ev.route(_fn(m, "helper")).status == ASSUMED  # `helper(x, 1)` does not bind `helper(x)`


def test_a_call_in_host_code_is_no_route():
    m = _model("""
        import jax

        def setup(x):
            if isinstance(x, jax.core.Tracer):
                return x
            return build(x)

        def build(x):
            return x

        @jax.jit
        def step(x):
            return setup(x)
    """)
    ev = evidence(m)
    assert m.is_traced(_fn(m, "build"))  # traced by some route ...
    assert ev.route(_fn(m, "build")).status == DEAD  # ... but not by one that runs
    assert ev.route(_fn(m, "setup")).status == SHOWN


def test_none_on_route_follows_the_arguments():
    m = _model("""
        import jax
        import jax.numpy as jnp

        def inner(x, nbrs=None):
            return x

        def middle(x, nbrs):
            return inner(x, nbrs)

        @jax.jit
        def a(x):
            return middle(x, jnp.arange(3))

        @jax.jit
        def b(x):
            return inner(x, x + 1)
    """)
    ev = evidence(m)
    assert not ev.none_on_route(_fn(m, "inner"), "nbrs")
    m2 = _model("""
        import jax

        def inner(x, nbrs=None):
            return x

        @jax.jit
        def a(x):
            return inner(x)
    """)
    assert evidence(m2).none_on_route(_fn(m2, "inner"), "nbrs")


def _notebook(*sources: str) -> str:
    cells = [{"cell_type": "code", "metadata": {}, "execution_count": None, "outputs": [], "source": s}
             for s in sources]
    return json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5})


def test_a_notebook_cell_order_decides_which_def_a_jit_reaches():
    nb = _notebook(
        "import jax\nimport jax.numpy as jnp\n",
        "def f(x):\n    if x > 0:\n        return x\n    return -x\n",
        "f_jit = jax.jit(f)\n",
        "def f(x):\n    return jnp.where(x > 0, x, -x)\n",
        "def g(x):\n    return jnp.where(x > 0, x, -x)\n",
        "g_jit = jax.jit(g)\n",
        "def g(x, n):\n    if n > 0:\n        return x\n    return -x\n",
    )
    result = check_source(nb, "t.ipynb", replace(Settings(), select=("JF402",)))
    # The jit in cell 3 traces cell 2's `f`; cell 7's Python `g` is defined after `g_jit`.
    assert [(d.cell, d.location.row) for d in result.diagnostics] == [(2, 2)]


def test_preview_findings_say_what_is_assumed():
    src = textwrap.dedent("""
        import jax

        def pair(x, y):
            if x > y:
                return x
            return y

        fast = jax.jit(pair)
        fast(1.0)
    """)
    settings = replace(Settings(), select=("JF402",))
    assert check_source(src, "m.py", settings).diagnostics == []
    [d] = check_source(src, "m.py", replace(settings, preview=True)).diagnostics
    assert d.message.endswith("(preview: assumes `pair` is traced, though its calls here (`fast(1.0)`) do not "
                              "match its signature)")


def test_module_level_tests_resolve_names_in_the_module():
    """The module's own statements are walked for the flow of its names (which def a read
    reaches): a test there (`if isinstance(...)`) resolves its names in the module scope."""
    src = textwrap.dedent("""
        import jax
        import numpy as np

        def f(x):
            if x > 0:
                return x
            return -x

        if isinstance(np.float32, type):
            g = jax.jit(f)
    """)
    result = check_source(src, "m.py", replace(Settings(), select=("JF402",)))
    assert result.errors == []
    assert [d.location.row for d in result.diagnostics] == [6]


def test_a_function_reads_the_def_its_cell_order_gives_it_when_it_runs():
    nb = _notebook(
        "import jax\nimport jax.numpy as jnp\n",
        "def f(x):\n    if x > 0:\n        return x\n    return -x\n",
        "@jax.jit\ndef g(x):\n    return f(x) + 1\n",
        "g(1.0)\n",
        "def f(x):\n    if x.sum() > 0:\n        return x\n    return -x\n",
        "def h(x):\n    if x.max() > 0:\n        return x\n    return -x\n",
        "@jax.jit\ndef k(x):\n    return h(x)\n",
        "def h(x):\n    return jnp.abs(x)\n",
        "k(1.0)\n",
    )
    result = check_source(nb, "t.ipynb", replace(Settings(), select=("JF402",)))
    # `g(1.0)` in cell 4 runs cell 2's `f` (cell 5's comes later); `k(1.0)` in cell 9 runs cell 8's `h`.
    assert [(d.cell, d.location.row) for d in result.diagnostics] == [(2, 2)]


def test_a_branch_its_default_skips_runs_traced_only_for_callers_that_pass_another_value(tmp_path):
    """`if check:` with `check=False`: under the trace only where a call passes `check=True`; in
    another module's calls (their argument patterns) as in this module's."""
    from jaxfuse_lint.run.runner import check_files

    helper = textwrap.dedent("""
        import jax.numpy as jnp

        def project(x, w, c, check=False):
            if check:
                if jnp.dot(w, w) > c:
                    raise ValueError("infeasible")
            return x * w
    """)
    user = "import jax\nfrom pkg.helper import project\nfast = jax.jit(project, static_argnames='check')\n"
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "helper.py").write_text(helper)
    settings = Settings(select=("JF402",))

    (pkg / "user.py").write_text(user)
    assert check_files(sorted(pkg.glob("*.py")), settings, jobs=1).diagnostics == []
    [d] = check_files(sorted(pkg.glob("*.py")), replace(settings, preview=True), jobs=1).diagnostics
    assert "assumes a caller passes `check` a value that takes this branch" in d.message

    (pkg / "user.py").write_text(user + "checked = fast(1.0, 2.0, 3.0, check=True)\n")
    [d] = check_files(sorted(pkg.glob("*.py")), settings, jobs=1).diagnostics
    assert d.location.row == 6 and "preview" not in d.message
