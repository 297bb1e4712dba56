"""Shared by the trace-hazard codemods (JF401, JF405): how to spell a module (`jax`, `math`)
at the place of a fix, and whether its import must be added."""
from __future__ import annotations

from jaxfuse_lint.codemods._helpers import _resolves_to
from jaxfuse_lint.model import SemanticModel
from jaxfuse_lint.model.scopes import Scope


def module_name_for(model: SemanticModel, module: str, scope: Scope, default: str) -> tuple[str, bool] | None:
    """The name under which `module` can be used from `scope`: the module's existing alias, or
    `default` with an import to add (the bool). None when `default` means something else there."""
    alias = model.resolver.module_alias(module)
    if alias is not None and _resolves_to(model, alias, scope, module):
        return alias, False
    if _resolves_to(model, default, scope, module):
        return default, False
    if model.lookup(default, scope) is None:
        return default, True
    return None
