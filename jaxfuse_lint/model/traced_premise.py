"""The premise `traced(value)`: is this value an abstract tracer while its function is traced?

The staged value analysis (model/staged_values.py) answers it twice: as rules have always read it,
where a framework's convention makes a Module body's input a tracer, and strictly, where only what
the code shows counts (jax's own rules: the positions a transform traces and not its static
arguments, the values partials bind, lax loops' carries, arrays a call passes, a parameter the body
uses as an array). Traced in the strict analysis is PROVEN, by the value's flow from a traced
parameter (its route named) or from a jax operation staged out under the trace; traced only in the
other is ASSUMED, naming the parameter and the convention; not traced in either is no premise
(rules do not report such values).
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

from jaxfuse_lint.model.api import STATIC_ATTRIBUTES
from jaxfuse_lint.model.omnistaging import omnistaged_function
from jaxfuse_lint.model.premises import LineOf, Premise, assumed, proven
from jaxfuse_lint.model.runtime_facts import traced_from_run
from jaxfuse_lint.model.scopes import Function, iter_children
from jaxfuse_lint.model.source_text import code_of
from jaxfuse_lint.model.staged_values import StagedValues, staged_values
from jaxfuse_lint.model.staging_transforms import DIFFERENTIATING
from jaxfuse_lint.model.traced import reason_parts
from jaxfuse_lint.model.values import Kind

if TYPE_CHECKING:
    from jaxfuse_lint.model.scopes import Scope
    from jaxfuse_lint.model.staging import StagingView

MAX_ROOT_DEPTH = 6


class TracedPremise:
    """Built once per model: `traced_premise(model)`."""

    def __init__(self, model: "StagingView") -> None:
        self.model = model
        self.values = staged_values(model)
        self.strict = staged_values(model, strict=True)
        self.read_names = {r.name for r in model.index.reads}

    def premise(self, expr: cst.CSTNode, scope: "Scope") -> Premise | None:
        """PROVEN or ASSUMED `traced(expr)`; None where expr is not traced at all. With a recorded
        run (`check --profile`), what it saw of the parameters decides: DISPROVED or RECORDED
        (model/runtime_facts.py `traced_from_run`)."""
        found = self._premise_from_code(expr, scope)
        if found is None or getattr(self.model, "runtime", None) is None:
            return found
        return traced_from_run(self.model, found, self.roots(expr, scope),
                               staged=self.staged_origin(expr, scope) is not None)

    def _premise_from_code(self, expr: cst.CSTNode, scope: "Scope") -> Premise | None:
        m = self.model
        subject = f"`{code_of(m, expr, 40)}`"
        if self.strict.kind(expr, scope) is Kind.TRACED:
            roots = self.roots(expr, scope, self.strict)
            if roots:
                owner, name = roots[0]
                via = f"`{name}` is" if isinstance(expr, cst.Name) and expr.value == name else f"computed from `{name}`,"
                return proven("traced", subject, "value-flow",
                              f"{via} a traced argument of `{owner.display_name}` (",
                              *reason_parts(m.trace_reason(owner)), ")")
            origin = self.staged_origin(expr, scope, self.strict)
            if origin is not None:
                return proven("traced", subject, "omnistaging", f"`{code_of(m, origin, 40)}` on line ", LineOf(origin),
                              " is staged out under the trace")
            return proven("traced", subject, "value-flow")
        if self.values.kind(expr, scope) is not Kind.TRACED:
            return None
        for owner, name in self.roots(expr, scope, self.values):
            why = self.strict.assumptions.get((id(owner), name))
            if why is not None and self.strict.param_kind(owner, name) is not Kind.TRACED:
                return assumed("traced", subject, f"assumes `{name}` is a tracer: {why}")
        return assumed("traced", subject, "assumes a value the code does not show to be traced is a tracer")

    # -- where a traced value comes from ----------------------------------------------------------------
    def staged_origin(self, expr: cst.CSTNode, scope: "Scope", values: StagedValues | None = None) -> cst.Call | None:
        """A jax array operation a traced expression is computed from that no traced argument
        feeds (`jnp.arange(3)`, `K[0]` of a captured jax array: tracers by omnistaging), through
        local names."""
        values = values or self.values
        seen: set = set()
        stack = [(expr, scope, 0)]
        while stack:
            node, sc, depth = stack.pop()
            if isinstance(node, cst.BaseExpression) and values.kind(node, sc) is not Kind.TRACED:
                continue
            if isinstance(node, cst.Call) and (omnistaged_function(self.model.qn(node.func, sc)) or (
                    isinstance(node.func, cst.Call) and self.model.qn(node.func.func, sc) in DIFFERENTIATING)):
                return node  # (`jax.grad(loss)(params)` in staged code: a derivative is staged out too)
            if values._operates_on_captured_array(node, sc):
                return node  # `K[0]` of a jax array bound outside: staged out too
            if isinstance(node, cst.Name) and node in self.read_names:
                found = self.model.bindings_at(node, sc)
                if found is None or not isinstance(found[0], Function):
                    continue
                owner, bindings = found
                for b in bindings:
                    if id(b.node) not in seen and b.value is not None and depth < MAX_ROOT_DEPTH:
                        seen.add(id(b.node))
                        stack.append((b.value, owner, depth + 1))
                continue
            if isinstance(node, (cst.Lambda, cst.FunctionDef)):
                continue
            stack.extend((c, sc, depth) for _, c in reversed(list(iter_children(node))))
        return None

    def roots(self, expr: cst.CSTNode, scope: "Scope", values: StagedValues | None = None) -> list[tuple[Function, str]]:
        """The traced parameters a traced expression is computed from (through local names)."""
        values = values or self.values
        out: list[tuple[Function, str]] = []
        seen: set = set()
        stack = [(expr, scope, 0)]
        while stack:
            node, sc, depth = stack.pop()
            if (isinstance(node, cst.BaseExpression) and not isinstance(node, cst.Attribute)
                    and values.kind(node, sc) is not Kind.TRACED):
                continue  # (attributes are looked through: `x.mean` in `x.mean()`)
            if isinstance(node, cst.Attribute) and node.attr.value in STATIC_ATTRIBUTES:
                continue  # `jnp.ones(x.shape)` is not computed from x's values
            if isinstance(node, cst.Name) and node in self.read_names:
                found = self.model.bindings_at(node, sc)
                if found is None or not isinstance(found[0], Function):
                    continue
                owner, bindings = found
                for b in bindings:
                    key = (id(owner), b.name, id(b.node))
                    if key in seen:
                        continue
                    seen.add(key)
                    if b.kind == "param":
                        if values.param_kind(owner, b.name) is Kind.TRACED and (owner, b.name) not in out:
                            out.append((owner, b.name))
                    elif b.value is not None and depth < MAX_ROOT_DEPTH:
                        stack.append((b.value, owner, depth + 1))
                continue
            if isinstance(node, (cst.Lambda, cst.FunctionDef)):
                continue
            stack.extend((c, sc, depth) for _, c in reversed(list(iter_children(node))))
        return out


def traced_premise(model: "StagingView") -> TracedPremise:
    """The model's TracedPremise (built once per model, kept with it)."""
    t = model.__dict__.get("_traced_premise")
    if t is None:
        t = model.__dict__["_traced_premise"] = TracedPremise(model)
    return t


__all__ = ["TracedPremise", "traced_premise"]
