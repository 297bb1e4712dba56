"""JF103 codemod: add `unroll=True` to a short `lax.fori_loop` / `lax.scan`.

    python -m libcst.tool codemod -x --no-format jaxfuse_lint.engine.libcst_commands.UnrollShortLoopCommand PATH

Dtype condition: none. With literal bounds `fori_loop` runs as a `scan` whether unrolled or not;
the carry keeps the init's dtype in both, and lax promotes a weakly typed init to the body's
dtype the same way. Unrolling changes scheduling, not the operations.
"""
from __future__ import annotations

import libcst as cst

from jaxfuse_lint.core.diagnostics import Applicability
from jaxfuse_lint.codemods.plan import FixPlan

CODE = "JF103"


def with_keyword(call: cst.Call, name: str, value: cst.BaseExpression) -> cst.Call:
    """`call` with `name=value` appended as its last argument, in the call's own comma style."""
    args = list(call.args)
    new = cst.Arg(value=value, keyword=cst.Name(name),
                  equal=cst.AssignEqual(cst.SimpleWhitespace(""), cst.SimpleWhitespace("")))
    if not args:
        return call.with_changes(args=[new])
    last = args[-1]
    if isinstance(last.comma, cst.Comma):
        # A trailing comma (often a multi-line call): the old last argument takes the comma that
        # separates the others, the new one keeps the trailing comma and its line break.
        sep = args[-2].comma if len(args) > 1 and isinstance(args[-2].comma, cst.Comma) else \
            cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
        args[-1] = last.with_changes(comma=sep)
        new = new.with_changes(comma=last.comma)
    else:
        args[-1] = last.with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")))
    args.append(new)
    return call.with_changes(args=args)


def build_fix(violation, model, settings) -> FixPlan | None:
    call = violation.node
    if not isinstance(call, cst.Call):
        return None
    n = violation.data.get("trip_count")
    return FixPlan(
        applicability=Applicability.SAFE,
        message=f"Unroll the {n}-step loop (`unroll=True`)",
        replacements={call: with_keyword(call, "unroll", cst.Name("True"))},
    )
