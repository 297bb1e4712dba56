"""The fixes as libcst codemod commands: each runs one rule's analysis on the tree and applies its
fixes, as `jaxfuse-lint --fix --select CODE` does (`python -m libcst.tool codemod`).

    python -m libcst.tool codemod -x --no-format jaxfuse_lint.engine.libcst_commands.<Command> PATH [--unsafe-fixes]

A command needs the whole pipeline (the model, the rule, `noqa`, the rule's codemod), so the
commands live here, above the codemods, not in the codemods' own modules.
"""
from __future__ import annotations

import argparse
from dataclasses import replace
from typing import TYPE_CHECKING

import libcst as cst
from libcst.codemod import CodemodCommand, CodemodContext

from jaxfuse_lint.codemods import jf101_unroll_reduction
from jaxfuse_lint.codemods import jf102_grid_from_meshgrid
from jaxfuse_lint.codemods import jf103_short_loop_not_unrolled
from jaxfuse_lint.codemods import jf201_numpy_to_jnp
from jaxfuse_lint.codemods import jf202_rebuild_with_jnp
from jaxfuse_lint.codemods import jf203_recompute_in_loop
from jaxfuse_lint.codemods import jf205_unrolled_independent_ffts
from jaxfuse_lint.codemods import jf301_hoist_jit
from jaxfuse_lint.codemods import jf302_hoist_jit_to_module
from jaxfuse_lint.codemods import jf401_print_in_traced_code
from jaxfuse_lint.codemods import jf405_traced_op_on_static_shape
from jaxfuse_lint.codemods import jf406_numpy_to_jnp_on_tracer
from jaxfuse_lint.codemods.plan import apply_plans, is_valid_python, non_overlapping
from jaxfuse_lint.core.diagnostics import Applicability
from jaxfuse_lint.engine.pipeline import Analysis

if TYPE_CHECKING:
    from jaxfuse_lint.core.config import Settings


class RuleCodemodCommand(CodemodCommand):
    """Run one rule's analysis on the tree and apply its fixes, as `jaxfuse-lint --fix --select CODE` does.

    Usable from libcst's own tooling (`--no-format` unless a formatter is configured in
    `.libcst.codemod.yaml`; libcst defaults to black):
        python -m libcst.tool codemod -x --no-format jaxfuse_lint.engine.libcst_commands.<Command> PATH [--unsafe-fixes]
    """

    DESCRIPTION = "Base class of the jaxfuse-lint codemods (not a codemod itself)."
    CODE: str = ""
    MAX_PASSES = 10

    def __init__(self, context: CodemodContext, unsafe_fixes: bool = False) -> None:
        super().__init__(context)
        self.unsafe_fixes = unsafe_fixes

    @staticmethod
    def add_args(arg_parser: argparse.ArgumentParser) -> None:
        arg_parser.add_argument("--unsafe-fixes", action="store_true", default=False,
                                help="Also apply the rule's unsafe fixes (review them).")

    def _settings(self) -> "Settings":
        from jaxfuse_lint.core.config import ConfigError, Settings, load_settings

        filename = self.context.filename
        try:
            settings = load_settings(None, start=filename or ".")
        except (ConfigError, OSError):
            settings = Settings()
        return replace(settings, select=(self.CODE,), extend_select=(), ignore=(), per_file_ignores=())

    def transform_module_impl(self, tree: cst.Module) -> cst.Module:
        if not self.CODE:
            raise NotImplementedError("RuleCodemodCommand is a base class: run one of its subclasses")

        settings = self._settings()
        filename = self.context.filename or "<codemod>"
        allowed = {Applicability.SAFE} | ({Applicability.UNSAFE} if self.unsafe_fixes else set())
        for _ in range(self.MAX_PASSES):
            analysis = Analysis(tree, filename, settings)
            for err in analysis.errors:
                self.warn(err)
            plans = []
            for rule, v in analysis.violations:
                if rule.code != self.CODE:
                    continue
                p = analysis.plan(rule, v)
                if p is not None and p.applicability in allowed:
                    plans.append(p)
            chosen = non_overlapping(plans, analysis.model.index.parents)
            if not chosen:
                break
            new = apply_plans(tree, chosen)
            if new.code == tree.code or is_valid_python(new.code, filename) is not None:
                break
            tree = cst.parse_module(new.code)  # fresh nodes for the next analysis
        return tree


class UnrollSmallReductionCommand(RuleCodemodCommand):
    DESCRIPTION = "JF101: unroll reductions over small, statically known axes into explicit arithmetic."
    CODE = jf101_unroll_reduction.CODE


class GridFromIndicesCommand(RuleCodemodCommand):
    DESCRIPTION = "JF102: rewrite meshgrids of fftfreq/rfftfreq vectors as jnp.indices with index arithmetic."
    CODE = jf102_grid_from_meshgrid.CODE


class UnrollShortLoopCommand(RuleCodemodCommand):
    DESCRIPTION = "JF103: add unroll=True to lax.fori_loop/lax.scan calls with a short literal trip count."
    CODE = jf103_short_loop_not_unrolled.CODE


class NumpyToJnpCommand(RuleCodemodCommand):
    DESCRIPTION = "JF201: build arrays in traced code with jax.numpy instead of NumPy."
    CODE = jf201_numpy_to_jnp.CODE


class RebuildWithJnpCommand(RuleCodemodCommand):
    DESCRIPTION = "JF202 (unsafe): rebuild captured NumPy arrays with jax.numpy inside traced functions."
    CODE = jf202_rebuild_with_jnp.CODE


class RecomputeInLoopCommand(RuleCodemodCommand):
    DESCRIPTION = "JF203: recompute cheap loop-invariant arrays inside lax loop bodies instead of capturing them."
    CODE = jf203_recompute_in_loop.CODE


class FoldIntoForiLoopCommand(RuleCodemodCommand):
    DESCRIPTION = "JF205: turn Python accumulation loops over independent FFTs into lax.fori_loop (unsafe)."
    CODE = jf205_unrolled_independent_ffts.CODE


class HoistJitCommand(RuleCodemodCommand):
    DESCRIPTION = "JF301: hoist jax.jit out of Python loops (jit once, call many times)."
    CODE = jf301_hoist_jit.CODE


class HoistJitToModuleCommand(RuleCodemodCommand):
    DESCRIPTION = "JF302 (unsafe): jit fresh callables once at module level instead of on every call."
    CODE = jf302_hoist_jit_to_module.CODE


class JaxDebugPrintCommand(RuleCodemodCommand):
    DESCRIPTION = "JF401: replace print() of traced values in traced code with jax.debug.print."
    CODE = jf401_print_in_traced_code.CODE


class MathProdShapeCommand(RuleCodemodCommand):
    DESCRIPTION = "JF405: replace jnp products of static shapes with math.prod in traced code."
    CODE = jf405_traced_op_on_static_shape.CODE


class NumpyToJnpOnTracerCommand(RuleCodemodCommand):
    DESCRIPTION = "JF406: replace NumPy functions applied to traced values with their jax.numpy namesakes."
    CODE = jf406_numpy_to_jnp_on_tracer.CODE
