"""What JF201, JF202 and JF207 ask their calibration tables about a folded constant, and how they
cite the answer (core/calibration.py, model/constant_context.py).

The features: `builder` (what makes the array), `size` (its elements, in 4-byte units), `known`
(JF201 only: whether the code says the size or it is a traced input's), `use` (how the program
reads it) and `loop` (whether that is inside a lax loop body). A feature the model cannot
establish is None and matches every calibrated value.
"""
from __future__ import annotations

from typing import Any, Iterable

import libcst as cst

from jaxfuse_lint.core.calibration import Decision, Row, decide, evidence_text
from jaxfuse_lint.model import constant_context, fusion_context
from jaxfuse_lint.model.evidence import evidence as model_evidence
from jaxfuse_lint.model.premises import LineOf, SizeClaim, calibrated
from jaxfuse_lint.model.premises import size as premise_size
from jaxfuse_lint.model.size_origin import SizeOrigin
from jaxfuse_lint.model.source_text import code_of


def features(model, node: cst.CSTNode, scope, values: Iterable[tuple[cst.BaseExpression, Any]] | None = None,
             *, known: bool = False, bound: dict | None = None) -> dict[str, Any]:
    """The table's features for the constant read (or built) at `node` in `scope`. `values`:
    the expressions (and their scopes) the value comes from where it is not `node` itself (the
    bindings of a captured name, the assignments of an attribute); `bound`: the arguments the
    values' function was called with (`Mesh(4096)` for `self.k = np.fft.fftfreq(n)` in `__init__`)."""
    sources = list(values) if values is not None else [(node, scope)]
    builders = {constant_context.builder(model, v, s) for v, s in sources}
    sizes = [constant_context.size(model, v, s, bound) for v, s in sources]
    if isinstance(node, cst.Name) and values is not None:
        declared = constant_context.size(model, node, scope)  # the name's annotation, if it declares one
        if declared[1] is not None:
            sizes = [declared]
    elements = {n for _, n in sizes}
    used = constant_context.use(model, node, scope)
    out = {
        "builder": builders.pop() if len(builders) == 1 else None,
        "use": used,
        "size": elements.pop() if len(elements) == 1 else None,
        "loop": fusion_context.loop(model, scope),
    }
    if known:
        kinds = {k for k, _ in sizes}
        out["known"] = kinds.pop() if len(kinds) == 1 else None
    if used is None:
        out["op"] = constant_context.program_op(model, node, scope)  # not a table feature: for the message
    return out


def size_claim(model, node: cst.CSTNode, scope, found: dict[str, Any],
               values: Iterable[tuple[cst.BaseExpression, Any]] | None = None,
               bound: dict | None = None) -> SizeClaim:
    """The `size` the table reads for the constant at `node`: proven from the expression that builds
    it (its literal arguments, a declared shape; `bound`: the call that made the instance passes the
    count), or not shown."""
    subject = f"`{code_of(model, node, 40)}`"
    n = found.get("size")
    if n is None:
        return SizeClaim("size", subject)
    sources = list(values) if values is not None else [(node, scope)]
    parts: list = []
    for value, _ in sources[:2]:
        parts += [", " if parts else "", f"`{code_of(model, value, 40)}` on line ", LineOf(value)]
    inference = "constant-arguments"
    if bound:
        inference = "call-site"
        for name, (arg, _) in list(bound.items())[:2]:
            call = _enclosing_call(model, arg)
            parts += [f", with `{name}` = `{code_of(model, arg, 20)}` from ",
                      *((f"`{code_of(model, call, 40)}` on line ", LineOf(call)) if call is not None else ("a call",))]
    return SizeClaim("size", subject, premise_size(model, scope, subject, n, " elements (4-byte units)",
                                                   origin=SizeOrigin(inference, tuple(parts))))


def _enclosing_call(model, node: cst.CSTNode) -> cst.Call | None:
    p = model.parent(node)
    while p is not None and not isinstance(p, cst.Call):
        if isinstance(p, (cst.BaseStatement, cst.BaseSmallStatement)):
            return None
        p = model.parent(p)
    return p


def judge(code: str, settings, found: dict[str, Any]) -> Decision:
    op = found.get("op")
    decision = decide(code, settings, **{k: v for k, v in found.items() if k != "op"})
    if op is not None and decision.outcome in ("harm", "some"):
        # It reaches the program, through an operation the tables do not calibrate.
        uses = ", ".join(decision.table.features.get("use", ())) if decision.table is not None else ""
        return Decision("unknown", decision.table, decision.rows,
                        f"the program reads it through `{op}`, a use the table does not calibrate ({uses})",
                        decision.features)
    if decision.fires and found.get("use") is None:
        # How the program reads the array is not shown (a comparison, a host-side NumPy index, a call this
        # module cannot see into): it may never reach the program at all (`np.arange(n) != i` as a NumPy
        # mask), so the table's harm for every use is no evidence for this one.
        return Decision("some", decision.table, decision.rows,
                        "how the compiled program reads this array is not shown here (it may be host-side "
                        "NumPy work that never reaches the program)", decision.features)
    return decision


def evidence(decision: Decision, form: str, fixed: str, size: int | None = None) -> str:
    """The measured figures to cite: where the matching variants are of one size, the largest
    constant among them; where the size is not established (an input's size), the smallest harmful
    one, so that the message claims no more than every calibrated size shows. `size`: the form's
    own size, where known (a size between the classes is cited as the nearest class's form)."""
    harmful = [r for r in decision.rows if r.verdict == "harm" and r.before is not None]
    if not harmful:
        return ""
    sizes = {r.features.get("size") for r in harmful}

    def constant(r: Row) -> int:
        return r.before.constant_bytes or 0  # type: ignore[union-attr]

    row = max(harmful, key=constant) if len(sizes) == 1 else min(harmful, key=constant)
    if size is not None and row.features.get("size") != size:
        form = f"the calibrated form nearest {form}"
    return evidence_text(Decision(decision.outcome, decision.table, (row,), decision.why), form, fixed)


# Builders whose array is data, not a function of shapes: the advice is an argument (calibrate/jf202.py).
DATA = frozenset({"random", "int_list", "load"})


def judged_capture(code: str, model, settings, v, node: cst.CSTNode, scope,
                   values: Iterable[tuple[cst.BaseExpression, Any]] | None, bound: dict | None = None):
    """A captured array's finding (JF202, JF207) as its table decides it: None where the compiler
    shows no harm; the finding with the measured figures where every calibrated form this code may
    take shows it; in the preview tier, without a fix, where only some do or none is calibrated."""
    from dataclasses import replace

    from jaxfuse_lint.core.calibration import raw
    from jaxfuse_lint.rules.base import message

    if raw(settings):
        return v  # the calibration harness: the pattern, whatever the table says
    runs = model_evidence(model).premise(scope, node, raises=False)
    if runs is None:
        return None  # not traced on a route that runs
    found = features(model, node, scope, values, bound=bound)
    decision = judge(code, settings, found)
    if decision.outcome == "none":
        return None  # a few bytes, or a constant XLA rebuilds in place
    v = replace(v, premises=(*v.premises, runs,
                             *calibrated(decision, f"`{code_of(model, node, 40)}`",
                                         [size_claim(model, node, scope, found, values, bound)])))
    if not decision.fires:
        return v
    data = found["builder"] in DATA
    fixed = "passed as an argument" if data else "built inside with `jax.numpy`"
    cited = evidence(decision, "this read", fixed, found["size"])
    out = replace(v, message=v.message + (message(f" ({cited})") if cited else ()))
    if data and found["builder"] == "int_list":
        out = replace(out, no_fix="rebuilt with `jax.numpy` inside, a list of Python ints is the same constant: "
                                  "pass it as an argument")
    return out
