"""What JF202 (NumPy) and JF207 (jax) report alike about captured arrays: a name that is an
array on every path (NumPy on one, jax on another), and `self.attr` arrays read where `self` is
a constant of the trace. One implementation, the array kind as a parameter."""
from __future__ import annotations

from typing import Iterator

import libcst as cst

from jaxfuse_lint.model import SemanticModel
from jaxfuse_lint.model.captures import captured_attributes, captured_mixed_arrays, captured_object_attributes
from jaxfuse_lint.model.instances import instances
from jaxfuse_lint.model.source_text import code_of
from jaxfuse_lint.model.scopes import Function
from jaxfuse_lint.rules.base import LineOf, Violation, message, reason_parts
from jaxfuse_lint.rules.folded_constants import judged_capture

_LABEL = {"numpy": "a NumPy array", "jax": "a jax array"}


def path_and_attribute_violations(model: SemanticModel, kind: str, settings, code: str) -> Iterator[Violation]:
    """`kind`: "numpy" or "jax", the arrays the calling rule reports (`code`), each as the rule's
    calibration table decides it."""
    label, other = _LABEL[kind], _LABEL["jax" if kind == "numpy" else "numpy"]
    for c, bindings, both in captured_mixed_arrays(model, kind):
        where = "at module level" if not isinstance(c.owner, Function) else f"in `{c.owner.display_name}`"
        paths = (f"to an array on every path: {label} on the path through line ", LineOf(bindings[0].node),
                 f", {other} on another") if both else (
            f"to {label} (line ", LineOf(bindings[0].node), f", which replaces {other} bound earlier)")
        v = Violation(
            c.name,
            message(
                f"`{c.name.value}` is bound {where} ", *paths, f"; read in traced `{c.fn.display_name}` (",
                *reason_parts(model.trace_reason(c.fn)),
                "), it is baked into the compiled program as a constant; pass it as an argument",
            ),
            data={"owner": c.owner},
        )
        judged = judged_capture(code, model, settings, v, c.name, c.fn,
                                [(b.value, c.owner) for b in bindings if b.value is not None])
        if judged is not None:
            yield judged
    for a in (*captured_attributes(model, kind), *captured_object_attributes(model, kind)):
        holder = model.parent(a.values[0])
        element = isinstance(holder, cst.Element) and isinstance(model.parent(holder), (cst.Tuple, cst.List))
        read = code_of(model, model.parent(a.node) if element else a.node, 40)
        v = Violation(
            a.node,
            message(
                f"`{read}` is {label}" + (" held in a tuple" if element else ""), " (set on line ",
                LineOf(a.values[0]),
                f") read in traced `{a.fn.display_name}` (", *reason_parts(model.trace_reason(a.fn)),
                f"), where {a.route}: it is baked into the compiled program as a constant; "
                "pass it as an argument (or make the class a pytree whose fields are arrays)",
            ),
            data={"owner": a.cls},
        )
        judged = judged_capture(code, model, settings, v, a.node, a.fn,
                                [(value, model.scope_of(value)) for value in a.values], _constructed_with(model, a))
        if judged is not None:
            yield judged


def _constructed_with(model: SemanticModel, a) -> dict | None:
    """The arguments of the call that made the instance, for `__init__`'s parameters."""
    if a.constructor is None:
        return None
    init = instances(model).method(a.cls, "__init__")
    if init is None:
        return None
    out = {}
    for name in init.params[1:]:
        arg = model.argument_for(a.constructor, init, name)
        if arg is not None:
            out[name] = (arg, a.owner if a.owner is not None else model.scope_of(a.constructor))
    return out
