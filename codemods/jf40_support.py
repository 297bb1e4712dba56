"""Shared by the trace-hazard codemods (JF401, JF405): the libcst command that applies one
rule's fixes, and the import helpers their fix plans use.

`python -m libcst.tool codemod -x codemods.jf401_print_in_traced_code.JaxDebugPrintCommand PATH`
runs the same analysis and fixes as `jaxfuse-lint --fix --select JF401 PATH`.
"""
from __future__ import annotations

from dataclasses import replace
from typing import ClassVar

import libcst as cst
from libcst.codemod import CodemodCommand, SkipFile

from jaxfuse_lint.model import SemanticModel
from jaxfuse_lint.model.scopes import Scope


class RuleFixCommand(CodemodCommand):
    """Apply the safe fixes of rule RULE_CODE (to a fixed point, dropping any that break the code)."""

    RULE_CODE: ClassVar[str] = ""
    UNSAFE: ClassVar[bool] = False

    def transform_module_impl(self, tree: cst.Module) -> cst.Module:
        from jaxfuse_lint.config import Settings
        from jaxfuse_lint.engine import fix_source

        settings = replace(Settings(), select=(self.RULE_CODE,))
        outcome = fix_source(tree.code, self.context.filename or "<codemod>", settings, unsafe=self.UNSAFE)
        if not outcome.changed:
            raise SkipFile(f"nothing to fix for {self.RULE_CODE}")
        return cst.parse_module(outcome.source)


def refers_to(model: SemanticModel, name: str, scope: Scope, module: str) -> bool:
    """Whether `name`, seen from `scope`, is bound only by imports of `module`."""
    found = model.lookup(name, scope)
    if found is None:
        return False
    _, bindings = found
    return all(b.kind == "import" and model.resolver.canonical(b.qualified_name or "") == module for b in bindings)


def module_name_for(model: SemanticModel, module: str, scope: Scope, default: str) -> tuple[str, bool] | None:
    """The name under which `module` can be used from `scope`: the module's existing alias, or
    `default` with an import to add (the bool). None when `default` means something else there."""
    alias = model.resolver.module_alias(module)
    if alias is not None and refers_to(model, alias, scope, module):
        return alias, False
    if refers_to(model, default, scope, module):
        return default, False
    if model.lookup(default, scope) is None:
        return default, True
    return None
