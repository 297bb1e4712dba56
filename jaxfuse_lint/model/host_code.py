"""Which traced-looking code runs on the host, on concrete values: the body of a host callback
(`jax.pure_callback` / `io_callback` / `jax.debug.callback`, passed by name, as a lambda or
through `functools.partial`), code under `with jax.ensure_compile_time_eval():`, and a function
only such code (or a `functools.cache`d function) calls.

`runs_on_host(fn)` says whether a traced-looking function only ever runs there;
`at_compile_time(node, scope)` whether a node is inside an `ensure_compile_time_eval` block.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

from jaxfuse_lint.model.compile_cache import memoised_function
from jaxfuse_lint.model.scopes import Function
from jaxfuse_lint.model.staging import StagingView, staging

if TYPE_CHECKING:
    from jaxfuse_lint.model.scopes import Scope


class HostCode:
    """`runs_on_host(fn)`, memoised; `at_compile_time(node, scope)`."""

    def __init__(self, model: "StagingView") -> None:
        self.model = model
        self._host: dict[int, bool] = {}

    def at_compile_time(self, node: cst.CSTNode, scope: "Scope") -> bool:
        """node is inside `with jax.ensure_compile_time_eval():`: the author asks for concrete
        trace-time values there (NumPy constants on purpose)."""
        for a in self.model.ancestors(node):
            if isinstance(a, (cst.FunctionDef, cst.Lambda, cst.ClassDef)):
                return False
            if isinstance(a, cst.With):
                for item in a.items:
                    e = item.item
                    func = e.func if isinstance(e, cst.Call) else e
                    qn = self.model.qn(func, scope) or ""
                    if qn.endswith("ensure_compile_time_eval"):
                        return True
        return False

    def runs_on_host(self, fn: "Function | None") -> bool:
        """fn is traced only as (or from) the host function of a host callback, only from
        `with jax.ensure_compile_time_eval():` blocks, or only from `functools.cache`d functions:
        it runs on concrete values."""
        if fn is None:
            return False
        key = id(fn)
        if key in self._host:
            return self._host[key]
        self._host[key] = False  # cycles: not proven
        reasons = self.model.traced.reasons.get(fn, ())
        result = bool(reasons) and all(self._host_reason(r) for r in reasons)
        self._host[key] = result
        return result

    def _host_reason(self, r) -> bool:
        if r.kind == "passed" and staging(self.model)._handed_to_callback(r.node, r.caller):
            return True
        if r.kind in ("called", "passed") and r.caller is not None and r.node is not None and \
                self.at_compile_time(r.node, r.caller):
            return True
        if r.kind in ("called", "passed") and isinstance(r.caller, Function):
            # A `functools.cache`d caller runs once per (hashable, static) key: what it calls builds
            # host values on purpose.
            return memoised_function(self.model, r.caller) or self.runs_on_host(r.caller)
        return False


def host_code(model: "StagingView") -> HostCode:
    """The model's HostCode (built once per model, kept with it)."""
    h = model.__dict__.get("_host_code")
    if h is None:
        h = model.__dict__["_host_code"] = HostCode(model)
    return h


__all__ = ["HostCode", "host_code"]
