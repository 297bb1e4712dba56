"""Fix generation never takes analysis down: a fix that cannot be built (a codemod bug, a plan
libcst refuses to render) is dropped, the finding is reported without it, and the error is kept.

The real case: the JF302 fix of `jax.jit(partial(f, lambda v: ...))` listed the lambda among
the names the callable reads as `cst.Name("<scope>")`, which libcst refuses to build
(`CSTValidationError: Name '<scope>' is not a valid identifier`)."""
from __future__ import annotations

from dataclasses import replace

import libcst as cst

from jaxfuse_lint.core.config import Settings
from jaxfuse_lint.engine import pipeline
from jaxfuse_lint.engine.pipeline import check_source, fix_source

NESTED_SCOPE_IN_PARTIAL = """\
import jax
from functools import partial


def scale(fn, x):
    return fn(x) * 2


def apply(x):
    return jax.jit(partial(scale, lambda v: v + 1))(x)
"""

JITTED = """\
import jax
import jax.numpy as jnp


@jax.jit
def f(x):
    return x.reshape(jnp.array(x.shape).prod())
"""


def test_jf302_fix_of_a_partial_holding_a_lambda_keeps_the_finding():
    settings = replace(Settings(), select=("JF302",))
    result = check_source(NESTED_SCOPE_IN_PARTIAL, "m.py", settings)
    assert [d.code for d in result.diagnostics] == ["JF302"]
    assert result.errors == []
    outcome = fix_source(NESTED_SCOPE_IN_PARTIAL, "m.py", settings, unsafe=True)
    assert outcome.errors == [] and [d.code for d in outcome.remaining] == ["JF302"]


def _broken_fixer(monkeypatch):
    """A codemod whose plan replaces a node with something libcst cannot render."""
    from jaxfuse_lint import codemods
    from jaxfuse_lint.codemods.plan import plan

    class Unprintable(cst.Name):
        def _validate(self) -> None:
            pass

        def _codegen_impl(self, state) -> None:
            raise cst.CSTValidationError("Name '<scope>' is not a valid identifier.")

    def build(violation, model, settings):
        return plan(True, "broken", {violation.node: Unprintable("<scope>")})

    real = codemods.fixer_for
    monkeypatch.setattr(codemods, "fixer_for", lambda code: build if code == "JF405" else real(code))


def test_a_plan_that_cannot_be_rendered_is_dropped_with_the_finding_kept(monkeypatch):
    _broken_fixer(monkeypatch)
    settings = replace(Settings(), select=("JF405",))
    result = check_source(JITTED, "m.py", settings)
    assert [d.code for d in result.diagnostics] == ["JF405"]
    assert result.diagnostics[0].fix is None


def test_plan_to_fix_raising_keeps_every_finding(monkeypatch):
    from jaxfuse_lint.codemods import plan as plan_module

    def boom(*args, **kwargs):
        raise cst.CSTValidationError("Name '<scope>' is not a valid identifier.")

    monkeypatch.setattr(plan_module, "plan_to_fix", boom)
    settings = replace(Settings(), select=("JF405", "JF402"))
    source = JITTED + "\n\n@jax.jit\ndef g(x):\n    if x > 0:\n        return x\n    return -x\n"
    result = check_source(source, "m.py", settings)
    assert sorted(d.code for d in result.diagnostics) == ["JF402", "JF405"]
    assert all(d.fix is None for d in result.diagnostics)
    assert len(result.errors) == 1 and "fix dropped, finding kept" in result.errors[0]
    assert "CSTValidationError" in result.errors[0]


def test_fix_source_survives_a_plan_that_cannot_be_applied(monkeypatch):
    _broken_fixer(monkeypatch)
    settings = replace(Settings(), select=("JF405",))
    outcome = fix_source(JITTED, "m.py", settings)
    assert outcome.source == JITTED
    assert [d.code for d in outcome.remaining] == ["JF405"]
    assert pipeline.MAX_FIX_PASSES >= 1
