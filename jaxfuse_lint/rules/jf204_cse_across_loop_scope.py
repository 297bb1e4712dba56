"""JF204 cse-across-loop-scope."""
from __future__ import annotations

from typing import Iterator

import libcst as cst

from jaxfuse_lint.core.calibration import OneOf, decide, evidence_text, raw
from jaxfuse_lint.model import Function, SemanticModel, capture_context, walk
from jaxfuse_lint.model.fusion import document_order, expression_names, own_nodes, same_meaning
from jaxfuse_lint.model.shape_only import ShapeOnly
from jaxfuse_lint.model.source_text import code_of
from jaxfuse_lint.model.evidence import evidence
from jaxfuse_lint.model.premises import SizeClaim, calibrated
from jaxfuse_lint.model.premises import size as premise_size
from jaxfuse_lint.model.size_origin import axes_origin
from jaxfuse_lint.rules.base import LineOf, Rule, Violation, message
from jaxfuse_lint.core.targets import CPU_MEASURED, GPU_MEASURED, TPU_UNKNOWN, Claim, Evidence

class CseAcrossLoopScope(Rule):
    code = "JF204"
    premises = ("runs-traced", "size", "harm")
    name = "cse-across-loop-scope"
    summary = "The same shape-only expression is recomputed in a lax loop body and used before and after the loop"
    fixable = "never"
    doc = """
    ## What it does
    Flags an expression that a `lax.fori_loop`/`while_loop`/`scan`/`map` body
    recomputes (on purpose, to avoid a temporary) and that the enclosing traced
    function also computes both before the loop (or in its initial value) and
    after it, where the calibration table of the configured target shows XLA
    merging the copies outside the loop and keeping the value alive across it.
    The diagnostic is on the occurrence after the loop and cites the measured
    figures. Expressions are compared with libcst's `deep_equals`, and every
    name in them must resolve to the same binding in both places. Only
    shape-only expressions (built from `arange`/`indices`/constants and the
    *shapes* of arrays, like the notebook's `get_im(x)` or a k-mesh) that
    contain an operation XLA may find costly to repeat (a transcendental
    function, `where`, `%`, a non-integer power) are considered.

    ## Premises
    `runs-traced`; `size(the expression)`: its elements, proven by the
    construct that states its shape, or assumed with the table's threshold
    where not shown (preview); `harm(copy)` from the table.

    ## Why is this bad?
    XLA's common-subexpression elimination works within one computation: the
    copy inside the loop body is recomputed in the loop's fused kernel, as
    intended, but the copies before and after the loop are the same
    expression in the same scope, so CSE may merge them into one value,
    computed before the loop and kept alive across it as a temporary instead
    of being recomputed after it. Whether it does is a cost heuristic, and the
    tables pin it down. On XLA:GPU (H100 and A100, deviceless, jax 0.10.2) it
    keeps a transcendental expression (`sin`/`cos`/`exp` of a grid) of a
    million elements: 4.0 MiB of temporaries, against 513 B with the copy
    after the loop made different; at 16,384 elements and below, and for
    non-integer powers, `where` grids and remainders at every calibrated size,
    it recomputes the copy after the loop and nothing is reported. On XLA:CPU
    it keeps transcendental expressions at every calibrated size (at a million
    elements the advice is sometimes slower there, a trade), and `where` grids
    read additively after the loop (`out + k2`); not non-integer powers or
    remainders. The loop kind and where the copy before the loop sits
    (the initial value, or a statement of its own) change nothing.

    ## Known problems
    The size of the expression decides on XLA:GPU, and the threshold lies
    between the calibrated 16,384 and 1,048,576 elements (the notebook's
    262,144 is kept); where the shape is not known here, a transcendental
    expression is reported only in the preview tier. Expressions that differ
    only in spacing or parentheses compare unequal.

    ## Example
    ```python
    @jax.jit
    def f(x):
        def step(i, a):
            return a + get_im(x)
        return jax.lax.fori_loop(0, 5, step, x + get_im(x)) + get_im(x)
    ```

    ## Use instead
    ```python
    @jax.jit
    def f(x):
        def step(i, a):
            return a + get_im(x)
        # a different expression after the loop: CSE cannot merge it with the one before
        return jax.lax.fori_loop(0, 5, step, x + get_im(x)) + get_im(x, eps=1e-10)
    ```

    ## Fix safety
    No automatic fix: making the copies differ changes the program's text
    in a way only its author can judge (the notebook's `eps` trick, or moving
    the use after the loop into the loop's carry). The table compares the
    pattern with the `eps` trick.
    """
    backends = (
        Claim(
            "Copies of one expression before and after a `lax` loop are merged by CSE and kept alive across "
            "the loop as a temporary",
            gpu=Evidence(True, GPU_MEASURED + ": on f32[131072,2], `f_cse_loop_after` is 19 launches and 1.0 MiB "
                               "of temporaries, the copy computed once inside (`f_cse_loop_impl`) 18 launches and "
                               "513 B; the calibration tables (H100, A100): kept for a transcendental grid of "
                               "1,048,576 elements, recomputed at 16,384 and below and for non-integer powers, "
                               "`where` grids and remainders at every size"),
            cpu=Evidence(True, CPU_MEASURED + ": 6 → 8 kernel launches, 129 B → 1.05 MB; the calibration table: kept "
                               "for transcendental grids at every size and `where` grids read additively"),
            tpu=TPU_UNKNOWN,
        ),
    )
    valid = (
        "import jax, jax.numpy as jnp\ndef im(x):\n    return jnp.sin(jnp.arange(x.size).reshape(x.shape) ** 2.3)\n"
        "@jax.jit\ndef f(x):\n    def step(i, a):\n        return a + im(x)\n"
        "    return jax.lax.fori_loop(0, 5, step, x + im(x))\n",
        "import jax, jax.numpy as jnp\n@jax.jit\ndef f(x):\n    def step(i, a):\n        return a + jnp.sin(x)\n"
        "    return jax.lax.fori_loop(0, 5, step, x + jnp.sin(x)) + jnp.sin(x)\n",
        "import jax, jax.numpy as jnp\ndef im(x):\n    return jnp.arange(x.size).reshape(x.shape) * 0.5\n"
        "@jax.jit\ndef f(x):\n    def step(i, a):\n        return a + im(x)\n"
        "    return jax.lax.fori_loop(0, 5, step, x + im(x)) + im(x)\n",
    )
    invalid = (
        "import jax, jax.numpy as jnp\ndef im(x):\n    return jnp.sin(jnp.arange(x.size).reshape(x.shape) ** 2.3)\n"
        "@jax.jit\ndef f(x):\n    def step(i, a):\n        return a + im(x)\n"
        "    return jax.lax.fori_loop(0, 5, step, x + im(x)) + im(x)\n",
        "import jax, jax.numpy as jnp\n@jax.jit\ndef f(x):\n    w = x * jnp.exp(-jnp.arange(x.shape[0]) ** 2.0)\n"
        "    y = jax.lax.scan(lambda c, _: (c + jnp.exp(-jnp.arange(x.shape[0]) ** 2.0), None), w, None, length=9)[0]\n"
        "    return y * jnp.exp(-jnp.arange(x.shape[0]) ** 2.0)\n",
    )

    def check(self, model: SemanticModel, settings) -> Iterator[Violation]:
        analysis = ShapeOnly(model)
        flagged: set[int] = set()
        for site in model.loop_sites:
            outer = site.scope
            if not isinstance(outer, Function) or not model.is_traced(outer) or not site.bodies:
                continue
            order = document_order(model)
            outer_calls = [n for n in own_nodes(outer) if isinstance(n, cst.Call)]
            loop = site.call
            short = site.qualified_name.replace("jax.lax.", "lax.")
            for body in site.bodies:
                inner = set()
                stack = [body]
                while stack:
                    fn = stack.pop()
                    inner.add(id(fn))
                    stack.extend(fn.nested)
                matched: list[cst.CSTNode] = []
                for node in walk(body.node.body):
                    if not isinstance(node, cst.Call):
                        continue
                    if any(order.inside(node, mnode) for mnode in matched):
                        continue
                    found = self._outer_copies(model, analysis, node, inner, outer, outer_calls, order, loop)
                    if found is None:
                        continue
                    before, after, cost = found
                    matched.append(node)
                    target = after[0]
                    if id(target) in flagged:
                        continue
                    flagged.add(id(target))
                    body_name = "the lambda" if body.is_lambda else f"`{body.name}`"
                    head = (f"`{code_of(model, target, 40)}` is recomputed inside the `{short}` body {body_name} "
                            "(line ", LineOf(node), ") and computed here and before the loop (line ",
                            LineOf(before[0]), ")")
                    advice = "make the copy after the loop differ (the notebook's `eps` trick) or carry what you " \
                             "need through the loop"
                    data = {"inner": node, "before": before, "after": after}
                    if raw(settings):  # the calibration harness: the pattern, whatever the table says
                        yield Violation(target, message(
                            *head, ": outside the loop both copies are one expression in one scope, so XLA's CSE "
                            f"merges them (it contains `{cost}`, too costly to repeat) and keeps the value alive "
                            f"across the loop as a temporary; {advice}"), data=data)
                        continue
                    judged = _judge(model, settings, site, node, before, after, cost, head, advice, data)
                    if judged is None:
                        continue
                    runs = evidence(model).premise(body, node, raises=False)
                    if runs is not None:
                        yield judged.with_premises(runs)

    @staticmethod
    def _outer_copies(model, analysis: ShapeOnly, node: cst.Call, inner: set[int], outer: Function,
                      outer_calls: list[cst.Call], order, loop: cst.Call):
        names = expression_names(node)
        if not names:
            return None
        from_function = False
        for n in names:
            found = model.lookup(n.value, model.scope_of(n))
            if found is None:
                continue
            if id(found[0]) in inner:
                return None  # depends on the carry, the index, or values computed in the body
            if isinstance(found[0], Function):
                from_function = True
        if not from_function:
            return None  # module-level constants only: XLA folds or recomputes those freely
        scope = model.scope_of(node)
        if not analysis.shape_only(node, scope, {}):
            return None
        cost = analysis.costly(node, scope)
        if cost is None:
            return None
        copies = [c for c in outer_calls if same_meaning(model, node, scope, c, outer)]
        before = [c for c in copies if order.start[c] < order.start[loop] or order.inside(c, loop)]
        after = [c for c in copies if order.start[c] > order.end[loop]]
        if not before or not after:
            return None
        return before, after, cost


# -- what the compiler does with the copies (the calibration table) ---------------------------------------

# The size classes of the table (jaxfuse_lint/calibrate/jf204.py) an expression of unknown shape may take.
_ARRAY_CLASSES = OneOf({16384, 1048576})
_LOOPS = {"jax.lax.fori_loop": "fori_loop", "jax.lax.scan": "scan", "jax.lax.while_loop": "while_loop"}


def _judge(model: SemanticModel, settings, site, inner: cst.Call, before, after, cost: str, head, advice, data):
    order = document_order(model)
    placed = "init" if all(order.inside(c, site.call) for c in before) else \
        "statement" if not any(order.inside(c, site.call) for c in before) else None
    shape = capture_context.value_shape(model, inner, model.scope_of(inner))
    total = shape.total() if shape is not None else None
    decision = decide("JF204", settings, cost=_cost_class(cost), size=total if total is not None else _ARRAY_CLASSES,
                      before=placed, after=_combined(model, after[0]), loop=_LOOPS.get(site.qualified_name))
    if decision.outcome == "none":
        return None  # the compiler recomputes it, or keeps it no longer than the advice does
    target = after[0]
    known = None
    if total is not None and shape is not None and shape.rank is not None:
        origin = axes_origin(model, inner, model.scope_of(inner), list(range(shape.rank)))
        if origin is not None:
            known = premise_size(model, model.scope_of(inner), f"`{code_of(model, inner, 40)}`", total, origin=origin)
    premises = calibrated(decision, f"`{code_of(model, target, 40)}`",
                          [SizeClaim("size", f"`{code_of(model, inner, 40)}`", known)])
    if not decision.fires:
        return Violation(target, message(
            *head, f": XLA's CSE may merge the copies outside the loop (it contains `{cost}`) and keep the value "
            f"alive across the loop as a temporary; {advice}"), data=data, premises=premises)
    cited = evidence_text(decision, "this form", "the copy after the loop made different")
    return Violation(target, message(
        *head, f": outside the loop both copies are one expression in one scope, and XLA's CSE merges them (it "
        f"contains `{cost}`): {cited}; {advice}"), data=data, premises=premises)


def _cost_class(cost: str) -> str:
    """The table's name for the operation that makes the expression worth merging."""
    if cost == "%" or cost.endswith(("mod", "remainder", "fmod")):
        return "remainder"
    if cost == "**" or cost.endswith(("power", "float_power")):
        return "power"
    if cost.endswith(("where", "select", "clip", "piecewise", "sign")):
        return "select"
    return "transcendental"


def _combined(model: SemanticModel, copy: cst.CSTNode) -> str | None:
    """How the copy after the loop meets the loop's result: through `+`/`-` ("additive") or `*`/`/`
    ("multiplicative"); arithmetic with a number on the way (`1.0 + E`) does not count."""
    node = copy
    for _ in range(8):
        parent = model.parent(node)
        if not isinstance(parent, cst.BinaryOperation):
            return None
        other = parent.right if parent.left is node else parent.left
        if not isinstance(other, (cst.Integer, cst.Float)):
            if isinstance(parent.operator, (cst.Add, cst.Subtract)):
                return "additive"
            if isinstance(parent.operator, (cst.Multiply, cst.Divide)):
                return "multiplicative"
            return None
        node = parent
    return None


RULE = CseAcrossLoopScope
