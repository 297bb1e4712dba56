"""The names a fix writes: how a module (`jax.numpy`, `jax`, `math`) is spelled where the fix
goes and whether its import must be added, and fresh names that never clash with one the module
uses and that Python never mangles."""
from __future__ import annotations

import builtins
import keyword
import re
import weakref
from dataclasses import dataclass
from typing import TYPE_CHECKING, Iterable

import libcst as cst

from jaxfuse_lint.codemods._expressions import dotted_expr
from jaxfuse_lint.codemods.plan import ImportSpec
from jaxfuse_lint.model.scopes import Scope, walk

if TYPE_CHECKING:
    from jaxfuse_lint.model import SemanticModel


@dataclass(frozen=True)
class JnpName:
    """How to spell `jax.numpy` in this module, and the import that spelling needs (if any)."""

    name: str
    imports: tuple[ImportSpec, ...] = ()

    def attr(self, dotted: str) -> cst.BaseExpression:
        """`jnp.fft.fftfreq` as a node."""
        return dotted_expr(f"{self.name}.{dotted}")


def jnp_name(model: "SemanticModel", scopes: Iterable[Scope] = ()) -> JnpName | None:
    """The module's alias for `jax.numpy`, or `jnp` with an import to add.

    None when `jnp` is taken by something else (a local, another module) in the
    module or in any of `scopes`: adding the import would change what it means.
    """
    alias = model.resolver.module_alias("jax.numpy")
    scopes = list(scopes)
    if alias is not None and all(_resolves_to(model, alias, s, "jax.numpy") for s in scopes):
        return JnpName(alias)
    for candidate in ("jnp",):
        if _name_bound_anywhere(model, candidate):
            if all(_resolves_to(model, candidate, s, "jax.numpy") for s in scopes or [model.index.scope]):
                return JnpName(candidate)
            continue
        if model.index.reads_named(candidate):
            continue  # read but bound nowhere: a builtin-like name we must not shadow
        return JnpName(candidate, (ImportSpec("jax.numpy", None, candidate),))
    return None


def _resolves_to(model: "SemanticModel", name: str, scope: Scope, qualified: str) -> bool:
    found = model.lookup(name, scope)
    if found is None:
        return False
    _, bindings = found
    return all(b.kind == "import" and model.resolver.canonical(b.qualified_name or "") == qualified for b in bindings)


_BOUND_ANYWHERE: "weakref.WeakKeyDictionary[SemanticModel, frozenset[str]]" = weakref.WeakKeyDictionary()


def _name_bound_anywhere(model: "SemanticModel", name: str) -> bool:
    """Whether the module or any function binds `name` (the names are gathered once per model)."""
    bound = _BOUND_ANYWHERE.get(model)
    if bound is None:
        names = set(model.index.scope.bindings)
        for fn in model.index.functions:
            names.update(fn.bindings)
        bound = _BOUND_ANYWHERE[model] = frozenset(names)
    return name in bound


_NAMES_IN_MODULE: "weakref.WeakKeyDictionary[SemanticModel, frozenset[str]]" = weakref.WeakKeyDictionary()


def names_in_module(model: "SemanticModel") -> frozenset[str]:
    """Every identifier the module reads or binds, in any scope (module, class bodies,
    functions), every attribute name, and every builtin (for fresh names). Computed once per
    model (a walk of the whole module per fresh name made fixes quadratic in a file's findings)."""
    names = _NAMES_IN_MODULE.get(model)
    if names is None:
        names = _NAMES_IN_MODULE[model] = frozenset(_names_in_module(model))
    return names


def _names_in_module(model: "SemanticModel") -> set[str]:
    names = {r.name.value for r in model.index.reads}
    names |= set(model.index.scope.bindings)
    for fn in model.index.functions:
        names |= set(fn.bindings)
    for scope in set(model.index.scope_of_node.values()):
        names |= set(scope.bindings)
    for n in walk(model.module):
        if isinstance(n, cst.Attribute):
            names.add(n.attr.value)
        elif isinstance(n, cst.Name):
            names.add(n.value)  # keyword names, parameters, import aliases: never reuse one
    names |= set(dir(builtins))
    return names


def identifier_base(base: str) -> str:
    """`base` made a name a codemod may bind anywhere: a valid identifier, not a keyword, and
    never one Python mangles — `__x` (no trailing `__`) written inside a class body becomes
    `_Class__x`, so leading underscores collapse to one (`_` + `_apply` + `_jit` -> `_apply_jit`);
    dunder names are Python's, so they lose their leading underscores the same way."""
    base = re.sub(r"\W", "_", base) or "_name"
    if base[0].isdigit():
        base = "_" + base
    if base.startswith("__"):
        base = "_" + base.lstrip("_") if base.strip("_") else "_name"
    if keyword.iskeyword(base) or keyword.issoftkeyword(base):
        base += "_"
    return base


def fresh_name(model: "SemanticModel", base: str, taken: set[str] | None = None) -> str:
    """A name bound nowhere in the module (no scope, no attribute, no builtin, nothing in
    `taken`) and never mangled inside a class body (see `identifier_base`)."""
    base = identifier_base(base)
    used = names_in_module(model) | (taken or set())
    if base not in used:
        return base
    i = 2
    while f"{base}_{i}" in used:
        i += 1
    return f"{base}_{i}"


def module_name_for(model: "SemanticModel", module: str, scope: Scope, default: str) -> tuple[str, bool] | None:
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
