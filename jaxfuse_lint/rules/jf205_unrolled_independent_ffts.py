"""JF205 unrolled-independent-ffts."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterator

import libcst as cst

from jaxfuse_lint.core.calibration import OneOf, decide, evidence_text, figures_text, raw
from jaxfuse_lint.model import Function, SemanticModel, capture_context, positional, walk
from jaxfuse_lint.model.accumulation import Accumulation, accumulation, small_statements
from jaxfuse_lint.model.fusion import CONTRACTIONS, FFT_MULTI_AXIS, FFT_ONE_AXIS, large_op_deep, static_int
from jaxfuse_lint.model.evidence import evidence
from jaxfuse_lint.model.premises import LineOf, SizeClaim, assumed, calibrated, proven
from jaxfuse_lint.model.premises import size as premise_size
from jaxfuse_lint.model.size_origin import axes_origin
from jaxfuse_lint.model.source_text import code_of
from jaxfuse_lint.rules.base import Rule, Violation, message, reason_parts
from jaxfuse_lint.core.targets import CPU_MEASURED, GPU_MEASURED, TPU_UNKNOWN, Claim, Evidence


@dataclass(eq=False)
class LoopFacts:
    loop: cst.For
    accumulations: list[Accumulation] = field(default_factory=list)
    carried: set[str] = field(default_factory=set)
    independent_ops: list[tuple[cst.CSTNode, str]] = field(default_factory=list)


def _assigned(stmt: cst.BaseSmallStatement) -> list[str]:
    if isinstance(stmt, cst.Assign):
        names = []
        for t in stmt.targets:
            for n in walk(t.target):
                if isinstance(n, cst.Name):
                    names.append(n.value)
        return names
    if isinstance(stmt, (cst.AugAssign, cst.AnnAssign)) and isinstance(stmt.target, cst.Name):
        return [stmt.target.value]
    return []


def _reads(node: cst.CSTNode) -> set[str]:
    out = set()
    for n in walk(node):
        if isinstance(n, cst.Name):
            out.add(n.value)
    return out


def _value_reads(stmt: cst.BaseSmallStatement) -> set[str]:
    if isinstance(stmt, cst.Assign):
        return _reads(stmt.value) | {
            n.value for t in stmt.targets for n in walk(t.target)
            if isinstance(n, cst.Name) and not _is_bare_target(t.target, n)}
    if isinstance(stmt, cst.AugAssign):
        return _reads(stmt.value) | ({stmt.target.value} if isinstance(stmt.target, cst.Name) else set())
    return _reads(stmt)


def _is_bare_target(target: cst.BaseExpression, name: cst.Name) -> bool:
    if target is name:
        return True
    if isinstance(target, (cst.Tuple, cst.List)):
        return any(_is_bare_target(el.value, name) for el in target.elements)
    return False


def loop_facts(model: SemanticModel, loop: cst.For, scope) -> LoopFacts | None:
    stmts = small_statements(loop.body)
    if stmts is None:
        return None
    facts = LoopFacts(loop)
    # Carried names: assigned in the body and read before (or by) their first assignment.
    first_assign: dict[str, int] = {}
    for i, s in enumerate(stmts):
        for n in _assigned(s):
            first_assign.setdefault(n, i)
    for i, s in enumerate(stmts):
        for n in _value_reads(s):
            if n in first_assign and first_assign[n] >= i:
                facts.carried.add(n)
    # What each in-body name depends on, in order.
    depends_on_carried: dict[str, bool] = {}

    def tainted(node: cst.CSTNode) -> bool:
        return any(n in facts.carried or depends_on_carried.get(n, False) for n in _reads(node))

    for s in stmts:
        acc = accumulation(s)
        if acc is not None:
            facts.accumulations.append(acc)
        value = s.value if isinstance(s, (cst.Assign, cst.AugAssign, cst.AnnAssign, cst.Expr)) else s
        if value is not None:
            for n in walk(value):
                op = large_op_deep(model, n, scope)
                if op is not None and not tainted(n):
                    facts.independent_ops.append((n, op))
        for name in _assigned(s):
            if name not in facts.carried:
                depends_on_carried[name] = value is not None and tainted(value)
    return facts


class UnrolledIndependentFfts(Rule):
    code = "JF205"
    premises = ("runs-traced", "size", "harm")
    name = "unrolled-independent-ffts"
    summary = "Python `for` over a range in traced code whose iterations run independent FFTs/matmuls and accumulate"
    fixable = "sometimes"
    preview = True
    preview_why = (
        "Its calibration tables show no form where the `lax.fori_loop` is better without being worse: it keeps "
        "fewer temporaries (nine 3-D FFTs of 1 MiB: 10.1 → 2.1 MiB on XLA:GPU for the H100) but runs more "
        "kernel launches (47 → 87). A trade of time for memory: reported in preview with its figures, "
        "without a fix.")
    doc = """
    ## What it does
    Flags a Python `for` loop over `range(...)` in traced code whose body
    accumulates (`res = res + term`, `res += term`) the result of an FFT,
    matmul/contraction, convolution or linear-algebra call that does not depend
    on anything carried from one iteration to the next, and says what a
    `lax.fori_loop` would trade: the calibration table's figures for the
    call, trip count and size. The diagnostic is on the loop's `range(...)`.

    ## Premises
    `runs-traced`; `size(the iterations)` from the literal `range(...)` (line
    cited); `size(the transformed operand)`: proven by the construct that
    states its shape, or assumed with the table's threshold where not shown;
    `harm(loop)` from the table.

    ## Why is this bad?
    Under tracing a Python loop is unrolled: XLA sees `n` copies of the body.
    When the expensive calls of different iterations do not depend on each
    other, XLA is free to schedule them side by side, each with its own
    buffers alive at once, so peak temporary memory grows with `n`. A
    `lax.fori_loop` runs the iterations one after another with one set of
    buffers. The tables (XLA:GPU for the H100 and A100, deviceless, and
    XLA:CPU; jax 0.10.2) show both sides of that trade for 3-D and 1-D FFTs,
    matmuls and convolutions from 3 iterations up: the loop keeps the
    temporaries flat (nine 3-D FFTs of 1 MiB: 10.1 → 2.1 MiB) and runs
    more kernel launches (47 → 87), since each iteration's kernels now run
    once per trip; at 3 iterations a matmul or a convolution loop is worse on
    every figure. Two iterations compile to one program either way.

    ## Known problems
    This rule is in preview: no calibrated form is better on one figure and
    worse on none, so a finding is a trade to weigh, not a harm to fix. Apply
    the loop where peak memory is what limits you; measured on a real H100,
    the notebook's `f_fft_multi` keeps 3.3× less in temporaries and runs 18%
    slower. Loops with a literal trip count below 2 are not flagged; a body
    whose expensive calls read the accumulator (or anything else carried across
    iterations, such as the notebook's `optimization_barrier((res, x))`
    variant) is sequential already and not flagged. Bodies with nested blocks
    (`if`, inner loops) are not analysed.

    ## Example
    ```python
    def f(x, n=5):
        res = 0
        for i in range(n):
            res = res + jnp.fft.irfftn((i + 2) * jnp.fft.rfftn(x + i, axes=(1, 2, 3)), axes=(1, 2, 3))
        return res
    ```

    ## Use instead
    ```python
    def f(x, n=5):
        res = 0
        res = jax.lax.fori_loop(
            1,
            n,
            lambda i, res: res + jnp.fft.irfftn((i + 2) * jnp.fft.rfftn(x + i, axes=(1, 2, 3)), axes=(1, 2, 3)),
            res + jnp.fft.irfftn((0 + 2) * jnp.fft.rfftn(x + 0, axes=(1, 2, 3)), axes=(1, 2, 3)),
        )
        return res
    ```

    ## Fix safety
    No fix is offered: the table shows none better on every figure (the
    codemod exists, and the calibration harness measures it). It is unsafe,
    and would apply only when the body is the single accumulation, the range is
    `range(stop)` or `range(start, stop)`, and the loop variable is used only
    in arithmetic within the term and not after the loop. The first iteration
    is peeled off as the loop's initial value (so the carry has the term's
    shape and dtype even when the accumulator starts as `0`), and the rest
    becomes `lax.fori_loop(start + 1, stop, lambda i, acc: acc + term, acc +
    term[i := start])`. Unsafe because inside `fori_loop` the index is a traced
    integer rather than a Python int: powers like `x ** (i + 2)` become
    floating-point `pow` instead of repeated multiplication (results agree to
    rounding), a range that can be empty would now run the first term, and the
    carry's dtype is fixed by the peeled term: a later term of another dtype
    (or a weakly typed accumulator promoted differently) makes `fori_loop`
    raise or cast where the Python loop promoted.
    """
    backends = (
        Claim(
            "Independent FFTs of an unrolled Python loop are scheduled side by side, so peak temporaries grow "
            "with the trip count; a `lax.fori_loop` runs them one at a time",
            gpu=Evidence(True, GPU_MEASURED + ": n = 5 on (2, 64, 64, 32), 7.13 → 2.13 MiB of temporaries "
                               "with `fori_loop`, 27 → 48 launches; on a real H100 (jax 0.11.2, "
                               "`benchmarks/proofs.py`, docs/gpu.md) 7.13 → 2.13 MiB, 17 → 38 launches and "
                               "473 → 559 µs: less memory for more time"),
            cpu=Evidence(True, CPU_MEASURED + ": n = 5 on (2, 64, 64, 32), 6.31 → 2.06 MiB of temporaries; but "
                               "20 → 43 launches and a slower wall-clock on CPU (`benchmarks/proofs.py`)"),
            tpu=TPU_UNKNOWN,
        ),
    )
    valid = (
        "import jax, jax.numpy as jnp\n@jax.jit\ndef f(x):\n    res = x\n    for i in range(5):\n"
        "        res = jnp.fft.ifft(jnp.fft.fft(res) * 2)\n    return res\n",
        "import jax, jax.numpy as jnp\n@jax.jit\ndef f(x):\n    res = 0\n    for i in range(5):\n"
        "        res = res + jnp.sin(x + i)\n    return res\n",
        "import jax.numpy as jnp\ndef host(x):\n    res = 0\n    for i in range(5):\n"
        "        res = res + jnp.fft.fft(x + i)\n    return res\n",
    )
    invalid = (
        "import jax, jax.numpy as jnp\n@jax.jit\ndef f(x):\n    res = 0\n    for i in range(5):\n"
        "        res = res + jnp.fft.irfftn(jnp.fft.rfftn(x + i))\n    return res\n",
        "import jax, jax.numpy as jnp\n@jax.jit\ndef f(x, w):\n    out = jnp.zeros_like(x)\n    for k in range(1, 4):\n"
        "        y = jnp.tanh((x * k) @ w)\n        out += y\n    return out\n",
    )

    def check(self, model: SemanticModel, settings) -> Iterator[Violation]:
        seen: set[int] = set()
        for site in model.index.calls:
            scope = site.scope
            if not isinstance(scope, Function) or not model.is_traced(scope):
                continue
            for loop in _loops_around(model, site.call, scope):
                if id(loop) in seen:
                    continue
                seen.add(id(loop))
                found = self._check_loop(model, loop, scope)
                if found is None:
                    continue
                if raw(settings):  # the calibration harness: the pattern, whatever the table says
                    yield found
                    continue
                judged = _judge(model, settings, found, loop, scope)
                if judged is None:
                    continue
                runs = evidence(model).premise(scope, loop, raises=False)
                if runs is not None:
                    yield judged.with_premises(runs)

    def _check_loop(self, model: SemanticModel, loop: cst.For, scope: Function) -> Violation | None:
        it = loop.iter
        if not isinstance(it, cst.Call) or model.qn(it.func, scope) != "builtins.range" or loop.orelse is not None:
            return None
        if any(a.keyword is not None or a.star for a in it.args) or not 1 <= len(it.args) <= 3:
            return None
        if len(it.args) <= 2:
            start = static_int(model, positional(it, 0), scope) if len(it.args) == 2 else 0
            stop = static_int(model, positional(it, len(it.args) - 1), scope)
            if start is not None and stop is not None and stop - start < 2:
                return None
        facts = loop_facts(model, loop, scope)
        if facts is None or not facts.accumulations or not facts.independent_ops:
            return None
        # The independent call must feed an accumulation.
        acc_reads = set()
        for acc in facts.accumulations:
            acc_reads |= _reads(acc.term)
        feeding = [(n, op) for n, op in facts.independent_ops
                   if any(_inside(model, n, acc.term) for acc in facts.accumulations)
                   or _assigned_name_of(model, n) in acc_reads]
        if not feeding:
            return None
        ops = sorted({op for _, op in feeding})
        accs = sorted({a.name for a in facts.accumulations})
        return Violation(
            loop,
            message(
                f"this Python loop over `{model.module.code_for_node(it)}` is unrolled in traced "
                f"`{scope.display_name}` (", *reason_parts(model.trace_reason(scope)), "): each iteration's ",
                " and ".join(f"`{o}`" for o in ops), " result", " does" if len(ops) == 1 else "s do",
                " not depend on the other iterations and", " is" if len(ops) == 1 else " are", " accumulated into ",
                ", ".join(f"`{a}`" for a in accs), ": XLA may run all iterations side by side, so peak temporary "
                "memory grows with the trip count; `lax.fori_loop` runs them one after another",
            ),
            data={"facts": facts, "scope": scope},
            range_node=it,
        )


def _inside(model: SemanticModel, node: cst.CSTNode, container: cst.CSTNode) -> bool:
    if node is container:
        return True
    return any(a is container for a in model.ancestors(node))


def _assigned_name_of(model: SemanticModel, node: cst.CSTNode) -> str | None:
    """`y` when node is (part of) the value of `y = ...`."""
    for a in model.ancestors(node):
        if isinstance(a, cst.Assign) and len(a.targets) == 1 and isinstance(a.targets[0].target, cst.Name):
            return a.targets[0].target.value
        if isinstance(a, (cst.SimpleStatementLine, cst.BaseCompoundStatement)):
            return None
    return None


def _loops_around(model: SemanticModel, node: cst.CSTNode, scope: Function) -> Iterator[cst.For]:
    for a in model.ancestors(node):
        if a is scope.node:
            return
        if isinstance(a, cst.For):
            yield a


# -- what the compiler does with the unrolled loop (the calibration table) --------------------------------

# The size classes of the table (jaxfuse_lint/calibrate/jf205.py) an operand of unknown shape may take.
_ARRAY_CLASSES = OneOf({16384, 262144, 2097152})


def _judge(model: SemanticModel, settings, v: Violation, loop: cst.For, scope: Function) -> Violation | None:
    facts: LoopFacts = v.data["facts"]
    calls = {_call_class(model, n, op, scope) for n, op in facts.independent_ops}
    call = calls.pop() if len(calls) == 1 else None
    it = loop.iter
    start = static_int(model, positional(it, 0), scope) if len(it.args) >= 2 else 0
    stop = static_int(model, positional(it, 1 if len(it.args) >= 2 else 0), scope)
    iterations = stop - start if start is not None and stop is not None and len(it.args) <= 2 else None
    sizes = set()
    largest = None
    for node, _ in facts.independent_ops:
        operand = node.left if isinstance(node, cst.BinaryOperation) else positional(node, 0) \
            if isinstance(node, cst.Call) else None
        shape = capture_context.value_shape(model, operand, scope) if operand is not None else None
        sizes.add(shape.total() if shape is not None else None)
        if shape is not None and shape.total() is not None and (largest is None or shape.total() > largest[2].total()):
            largest = (operand, scope, shape)
    size = max(sizes) if sizes and None not in sizes else _ARRAY_CLASSES  # the largest operand
    target = loop.target.value if isinstance(loop.target, cst.Name) else None
    power = any(isinstance(n, cst.BinaryOperation) and isinstance(n.operator, cst.Power)
                and target in _reads(n.right) for acc in facts.accumulations for n in walk(acc.term))
    decision = decide("JF205", settings, call=call, iterations=iterations, size=size,
                      epilogue="power" if power else "none")
    subject = f"the loop over `{model.module.code_for_node(loop.iter)}`"
    known = None
    if isinstance(size, int) and largest is not None and largest[2].rank is not None:
        origin = axes_origin(model, largest[0], largest[1], list(range(largest[2].rank)))
        if origin is not None:
            known = premise_size(model, scope, f"the transformed operand `{code_of(model, largest[0], 30)}`", size,
                                 origin=origin)
    trips = (proven("size", f"the iterations of {subject}", "literal-trip-count",
                    f"{iterations} iterations: `{model.module.code_for_node(it)}` on line ", LineOf(it)),) \
        if iterations is not None else ()
    claims = [SizeClaim("size", "the transformed operand", known)]
    if decision.fires:
        cited = evidence_text(decision, "the unrolled loop", "the `lax.fori_loop`")
        return Violation(v.node, (*v.message, f" ({cited})"), data=v.data, range_node=v.range_node,
                         premises=(*trips, *calibrated(decision, subject, claims)))
    trade = _trade(decision)
    if decision.outcome == "none" and trade is None:
        return None  # the fori_loop is no better here on any figure
    if decision.outcome == "none":  # a trade: better on one figure, worse on another
        premises = (assumed("harm", subject, "the table shows a trade of launches for temporaries, not a gain"),
                    *calibrated(decision, subject, claims)[1:])
    else:
        premises = calibrated(decision, subject, claims)
    return Violation(v.node, (*v.message, f" ({trade})" if trade else ""), data=v.data, range_node=v.range_node,
                     premises=(*trips, *premises))


def _trade(decision) -> str | None:
    """What the fori_loop wins and loses where the table shows both (a "mixed" row), in a few words."""
    mixed = [r for r in decision.rows if r.verdict == "mixed"]
    if not mixed:
        return None
    row = max(mixed, key=lambda r: r.before.temp_bytes or 0)
    where = f" at {row.args}" if row.args else ""
    return (f"on {decision.table.compiler}, the unrolled loop{where} compiles to {figures_text(row.before)}; "
            f"the `lax.fori_loop` to {figures_text(row.after)}")


def _call_class(model: SemanticModel, node: cst.CSTNode, op: str, scope: Function) -> str | None:
    """The table's name for an iteration's expensive call."""
    if isinstance(node, cst.BinaryOperation):
        return "matmul"
    qn = model.qn(node.func, scope) if isinstance(node, cst.Call) else None
    if qn is None:  # a helper of the module that runs one: `smooth (jnp.fft.rfft)`
        inner = op.split(" (", 1)[-1].rstrip(")") if " (" in op else None
        last = inner.rsplit(".", 1)[-1] if inner else None
        if last is None:
            return None
        qn = f"jax.numpy.fft.{last}" if f"jax.numpy.fft.{last}" in FFT_MULTI_AXIS | FFT_ONE_AXIS else \
            "jax.numpy.matmul" if last in ("@", "matmul", "dot", "einsum", "tensordot") else last
    if qn in FFT_MULTI_AXIS:
        return "rfftn"
    if qn in FFT_ONE_AXIS or qn == "jax.lax.fft":
        return "fft"
    if "conv" in qn.rsplit(".", 1)[-1]:
        return "conv"
    if qn in CONTRACTIONS:
        return "matmul"
    return None


RULE = UnrolledIndependentFfts
