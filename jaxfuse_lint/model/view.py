"""What every analysis reads of the semantic model: the module's structure and its names.

`SemanticModel` (model/semantic.py) builds the analyses and hands itself to each of them; an
analysis needs only the queries declared here, so it names this protocol instead of the
facade (which imports every analysis). An analysis that also reads another analysis through
the model (`model.traced`, `model.numpy_arrays`, `model.shape(...)`) declares a protocol of its
own, extending this one, next to its code. `SemanticModel` implements them all.
"""
from __future__ import annotations

from typing import Iterator, Protocol

import libcst as cst

from jaxfuse_lint.model.names import NameResolver
from jaxfuse_lint.model.scopes import Binding, Function, ModuleIndex, Scope


class ModelView(Protocol):
    """The structural and name queries of one module's model."""

    module: cst.Module
    index: ModuleIndex
    resolver: NameResolver

    # -- structure ------------------------------------------------------------------------------
    def parent(self, node: cst.CSTNode) -> cst.CSTNode | None: ...

    def ancestors(self, node: cst.CSTNode) -> Iterator[cst.CSTNode]: ...

    def scope_of(self, node: cst.CSTNode) -> Scope: ...

    def function_of(self, node: cst.CSTNode) -> Function | None:
        """The innermost def/lambda whose body contains node."""

    def statement_of(self, node: cst.CSTNode) -> cst.CSTNode | None:
        """The innermost statement (simple or compound) that contains node."""

    # -- names ----------------------------------------------------------------------------------
    def qn(self, expr: cst.CSTNode | None, scope: Scope) -> str | None: ...

    def lookup(self, name: str, scope: Scope) -> tuple[Scope, list[Binding]] | None: ...

    def bindings_at(self, name: cst.Name, scope: Scope) -> tuple[Scope, list[Binding]] | None:
        """Like `lookup`, but for a read in a function's own body only the bindings that may
        reach it (model/flow.py); all of them where the flow is unknown."""

    def narrowed(self, name: cst.Name, scope: Scope) -> str | None:
        """`flow.PYTHON` / `flow.CONTAINER` where an isinstance / `is None` test narrows this read."""

    def function_named(self, name: str, scope: Scope) -> Function | None:
        """The def (or lambda assigned to a name) that `name` refers to from `scope`, if unique."""

    def functions_at(self, name: cst.Name, scope: Scope) -> list[Function] | None:
        """The defs this read of `name` may run, flow-sensitively (None: the flow is unknown)."""

    def rewraps(self, b: Binding, owner: Scope) -> bool:
        """Whether binding `b` rebinds its name to a transform of itself: `f = jax.jit(f)`."""

    def method_of(self, scope: Scope, name: str) -> Function | None: ...

    def argument_for(self, call: cst.Call, fn: Function, name: str) -> cst.BaseExpression | None:
        """The argument expression a call passes for fn's parameter `name`."""
