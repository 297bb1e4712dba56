"""JF206 fusion-blocking-barrier."""
from __future__ import annotations

from typing import Iterator

import libcst as cst

from jaxfuse_lint.core.calibration import OneOf, decide, evidence_text, figures_text, raw
from jaxfuse_lint.model import Function, SemanticModel, capture_context, keyword, positional
from jaxfuse_lint.model.accumulation import accumulation, small_statements
from jaxfuse_lint.model.api import JNP_ELEMENTWISE, REDUCTION_METHODS, REDUCTIONS
from jaxfuse_lint.model.fusion import CONTRACTIONS
from jaxfuse_lint.model.evidence import evidence
from jaxfuse_lint.model.premises import SizeClaim, assumed, calibrated, harm, proven
from jaxfuse_lint.model.premises import size as premise_size
from jaxfuse_lint.model.size_origin import axes_origin
from jaxfuse_lint.model.source_text import code_of
from jaxfuse_lint.rules.base import Rule, Violation, message, reason_parts
from jaxfuse_lint.core.targets import (
    CPU_MEASURED, GPU_MEASURED, OPTIMIZATION_BARRIER_BLOCKS_FUSION, Claim, Evidence, tracing,
)

BARRIERS = frozenset({"jax.lax.optimization_barrier", "jax.optimization_barrier"})
CHECKPOINTS = frozenset({"jax.checkpoint", "jax.remat", "jax.ad_checkpoint.checkpoint", "jax.ad_checkpoint.remat"})
# Anything that differentiates: with one of these in the module, checkpoint has a backward pass to act on.
_DIFFERENTIATION = frozenset({
    "jax.grad", "jax.value_and_grad", "jax.vjp", "jax.jvp", "jax.linearize", "jax.jacfwd", "jax.jacrev",
    "jax.jacobian", "jax.hessian", "jax.custom_vjp", "jax.custom_jvp", "jax.linear_transpose",
    "jax.test_util.check_grads", "jax.experimental.jet.jet", "jax.closure_convert",
})
_DIFF_WORDS = ("grad", "vjp", "jvp", "jacfwd", "jacrev", "hessian", "linearize")


def _is_true(e: cst.BaseExpression | None) -> bool:
    return isinstance(e, cst.Name) and e.value == "True"


def module_differentiates(model: SemanticModel) -> bool:
    """Whether the module uses any differentiation API (jax's, or a library's `*grad*`)."""
    for read in model.index.reads:
        node = read.name
        parent = model.parent(node)
        expr = node
        while isinstance(parent, cst.Attribute) and parent.value is expr:
            expr, parent = parent, model.parent(parent)
        qn = model.qn(expr, read.scope)
        if qn is None:
            continue
        if qn in _DIFFERENTIATION:
            return True
        last = qn.rsplit(".", 1)[-1].lower()
        if not qn.startswith("builtins.") and any(w in last for w in _DIFF_WORDS):
            return True
    return False


def uses_pallas(model: SemanticModel) -> bool:
    """Whether the module imports Pallas (its kernels are not fused by XLA)."""
    for bindings in model.index.scope.bindings.values():
        for b in bindings:
            if b.kind == "import" and b.qualified_name and ".pallas" in f".{b.qualified_name}":
                if "jax.experimental.pallas" in model.resolver.canonical(b.qualified_name):
                    return True
    return False


class FusionBlockingBarrier(Rule):
    code = "JF206"
    premises = ("runs-traced", "harm")
    name = "fusion-blocking-barrier"
    summary = "`lax.optimization_barrier` in traced code, or `checkpoint(prevent_cse=True)` used to force recomputation"
    fixable = "never"
    doc = """
    ## What it does
    Flags, in traced code, `jax.lax.optimization_barrier(...)` where the
    calibration table of the configured target shows that the same code
    without it compiles to fewer kernels or temporaries and to no worse a
    program on any figure; the diagnostic cites the measured figures. In the
    preview tier it also flags `jax.checkpoint` / `jax.remat` with an explicit
    `prevent_cse=True` (called, or applied with `functools.partial` as a
    decorator) in a module that never differentiates (no `grad`,
    `value_and_grad`, `vjp`, `jvp`, `jacfwd`/`jacrev`, `custom_vjp`, ...).

    ## Premises
    `runs-traced`; `harm(barrier)` from the table; and, for a barrier, the
    `size` of its operand where the table reads it: proven by the construct
    that states its shape, proven irrelevant where every calibrated size
    shows the same, else assumed with the table's threshold (preview).

    ## Why is this bad?
    `optimization_barrier` orders computations by making its outputs opaque to
    XLA, and that also stops fusion across it: the values it passes are
    materialised in device memory, and producers and consumers run as separate
    kernels. On XLA:GPU (the H100 and A100 tables, deviceless, jax 0.10.2) a
    barrier between elementwise work, a reduction or an FFT and the
    elementwise work or reduction that reads it costs a kernel, and the whole
    buffer where a reduction reads it (the fusion notebook's `S =
    optimization_barrier(sin(x) + 3); S + exp(S)`: 2 kernels where the same
    code without the barrier is 1), at every calibrated size.

    `checkpoint`'s `prevent_cse` only guards the rematerialised computation in
    the backward pass. In a forward computation it neither prevents CSE nor
    forces recomputation: the tables show one compiled program with and
    without the checkpoint for every calibrated form, so there is nothing to
    gain and the finding is information, in the preview tier.

    ## When it stays silent
    Where the table shows the barrier costs nothing: when a matmul produces or
    reads the value (a library call is a kernel of its own either way); at the
    end of each iteration of a Python loop that accumulates (the notebook's
    serialising idiom: the `lax.fori_loop` the message would advise runs more
    launches for no saving); with `target = "cpu"`, whose XLA removes barriers
    before fusion. Modules that import Pallas are skipped: inside a Pallas
    kernel the barrier orders instructions and XLA fusion does not apply.

    ## Known problems
    A barrier in a module that runs collectives or shards its arrays (`psum`,
    `shard_map`, `pmap`, `NamedSharding`, `with_sharding_constraint`) may
    order communication against compute on purpose; that overlap of devices is
    not what one compiled device shows, so the table has no form for it and
    such a barrier is reported only in the preview tier, with the reason. A
    module that is only differentiated from other modules has its
    `checkpoint(prevent_cse=True)` reported (in preview). Barriers placed on
    purpose in single-device code (to order side effects) are reported where
    they block fusion: suppress with `# noqa: JF206`.

    ## Example
    ```python
    @jax.jit
    def f(x):
        s = jax.lax.optimization_barrier(jnp.sin(x) + 3)
        return s + jnp.exp(s)
    ```

    ## Use instead
    ```python
    @jax.jit
    def f(x):
        s = jnp.sin(x) + 3
        return s + jnp.exp(s)
    ```

    ## Fix safety
    No fix: whether the barrier's ordering is needed is the author's call. The
    tables compare the code with the same code without the barrier (in a
    Python loop, with the loop as a `lax.fori_loop`), and the checkpointed
    call with the plain call.
    """
    backends = (
        OPTIMIZATION_BARRIER_BLOCKS_FUSION,
        Claim(
            "`jax.checkpoint(..., prevent_cse=True)` changes nothing in a computation that is never differentiated",
            gpu=Evidence(True, GPU_MEASURED + ": the notebook's `get_im` used twice around a reduction is 2 "
                               "kernels and 512 KiB of temporaries with `checkpoint(prevent_cse=True)` or without "
                               "it"),
            cpu=Evidence(True, CPU_MEASURED + ": the notebook's `get_im` used twice around a reduction is 2 "
                               "kernels and 1 MiB of temporaries with or without it"),
            tpu=tracing("`prevent_cse` is a property of the rematerialisation JAX emits for the backward pass, "
                        "which a forward-only program does not contain, whatever the backend"),
        ),
    )
    valid = (
        "import jax, jax.numpy as jnp\n@jax.jit\ndef f(x):\n    s = jnp.sin(x) + 3\n    return s + jnp.exp(s)\n",
        "import jax, jax.numpy as jnp\n@jax.jit\ndef loss(p, x):\n"
        "    y = jax.checkpoint(jnp.sin, prevent_cse=True)(p * x)\n    return jnp.sum(y)\n"
        "g = jax.grad(loss)\n",
        "import jax\ndef f(x):\n    return jax.lax.optimization_barrier(x)\n",
    )
    invalid = (
        "import jax, jax.numpy as jnp\n@jax.jit\ndef f(x):\n"
        "    s = jax.lax.optimization_barrier(jnp.sin(x) + 3)\n    return s + jnp.exp(s)\n",
        "import jax, jax.numpy as jnp\ndef im(x):\n    return jnp.sin(x) ** 2.3\n@jax.jit\ndef f(x):\n"
        "    g = jax.checkpoint(im, prevent_cse=True)\n    return x + jnp.sum(g(x)) + g(x)\n",
    )

    def check(self, model: SemanticModel, settings) -> Iterator[Violation]:
        differentiates: bool | None = None
        pallas: bool | None = None
        for site in model.index.calls:
            scope = site.scope
            call = site.call
            qn = model.qn(call.func, scope)
            if qn in BARRIERS:
                if not isinstance(scope, Function) or not model.is_traced(scope):
                    continue
                if pallas is None:
                    pallas = uses_pallas(model)
                if pallas:
                    continue  # inside Pallas kernels the barrier orders instructions; there is no XLA fusion
                head = (f"`lax.optimization_barrier` in traced `{scope.display_name}` (",
                        *reason_parts(model.trace_reason(scope)), ")")
                if raw(settings):  # the calibration harness: the pattern, whatever the table says
                    yield Violation(call, message(
                        *head, ": it blocks fusion across it, so its operands are materialised in device memory and "
                        "the code before and after runs as separate kernels; to run loop iterations one after "
                        "another use `lax.fori_loop`, to force recomputation call the function again"),
                        data={"kind": "barrier"})
                    continue
                judged = _judge_barrier(model, settings, call, scope, head)
                if judged is None:
                    continue
                runs = evidence(model).premise(scope, call, raises=False)
                if runs is not None:
                    yield judged.with_premises(runs)
                continue
            target = None
            if qn in CHECKPOINTS and _is_true(keyword(call, "prevent_cse")):
                target = positional(call, 0)
                where = "call"
            elif qn == "functools.partial" and model.qn(positional(call, 0), scope) in CHECKPOINTS \
                    and _is_true(keyword(call, "prevent_cse")):
                target = None
                where = "partial"
            else:
                continue
            if not self._forward_use(model, site, where, target):
                continue
            if differentiates is None:
                differentiates = module_differentiates(model)
            if differentiates:
                continue
            head = ("`prevent_cse=True` only affects the backward pass that `jax.checkpoint` rematerialises, and "
                    "nothing in this module differentiates: in the forward computation it neither prevents CSE "
                    "nor forces recomputation",)
            if raw(settings):
                yield Violation(call, message(*head), data={"kind": "checkpoint"})
                continue
            judged = _judge_checkpoint(model, settings, call, scope, where, target, head)
            if judged is not None:
                # (`_forward_use`: the checkpointed function runs in traced code)
                yield judged.with_premises(proven("runs-traced", f"`{code_of(model, call, 40)}`", "forward-use",
                                                  "the checkpointed function runs in traced code, forward only"))

    @staticmethod
    def _forward_use(model: SemanticModel, site, where: str, target) -> bool:
        """The checkpointed function runs in traced code: the wrapper is made inside a traced
        function, or it decorates a function that traced code calls."""
        scope = site.scope
        if isinstance(scope, Function) and model.is_traced(scope):
            return True
        parent = model.parent(site.call)
        if where == "partial" and isinstance(parent, cst.Decorator):
            fn = model.index.function_of.get(model.parent(parent))
            reasons = model.traced.reasons.get(fn, []) if fn is not None else []
            return any(r.kind in ("called", "passed", "decorator") and r.node is not parent for r in reasons)
        return False


# -- what the compiler does with the barrier (the calibration table) --------------------------------------

# The size classes of the table (jaxfuse_lint/calibrate/jf206.py) an operand of unknown shape may take.
_ARRAY_CLASSES = OneOf({4096, 262144, 4194304})
_BEFORE = {"grid": "elementwise", "elementwise": "elementwise", "roll": "elementwise", "reduction": "reduction",
           "fft": "fft", "matmul": "matmul"}
_COLLECTIVES = frozenset({
    "jax.lax.psum", "jax.lax.pmean", "jax.lax.pmax", "jax.lax.pmin", "jax.lax.all_gather", "jax.lax.all_to_all",
    "jax.lax.ppermute", "jax.lax.psum_scatter", "jax.lax.pshuffle", "jax.lax.pswapaxes", "jax.lax.axis_index",
    "jax.lax.with_sharding_constraint", "jax.pmap", "jax.shard_map", "jax.experimental.shard_map.shard_map",
    "jax.device_put_sharded", "jax.device_put_replicated",
})
_SHARDING_PREFIXES = ("jax.sharding.", "jax.experimental.mesh_utils.", "jax.experimental.multihost_utils.",
                      "jax.experimental.pjit.", "jax.experimental.shard_map.", "jax.experimental.custom_partitioning")


def uses_collectives(model: SemanticModel) -> bool:
    """Whether the module runs collectives or shards its arrays (`psum`, `shard_map`, `pmap`,
    `NamedSharding`, `with_sharding_constraint`...): a barrier there may order communication
    against compute, which one compiled device cannot show."""
    cache = model.__dict__.setdefault("_jf206_collectives", [])
    if cache:
        return cache[0]
    found = False
    for read in model.index.reads:
        node, parent = read.name, model.parent(read.name)
        expr = node
        while isinstance(parent, cst.Attribute) and parent.value is expr:
            expr, parent = parent, model.parent(parent)
        qn = model.qn(expr, read.scope)
        if qn is not None and (qn in _COLLECTIVES or qn.startswith(_SHARDING_PREFIXES)):
            found = True
            break
    cache.append(found)
    return found


def _judge_barrier(model: SemanticModel, settings, call: cst.Call, scope: Function, head) -> Violation | None:
    operand = positional(call, 0)
    loop = _enclosing_for(model, call, scope)
    if loop is not None and isinstance(operand, (cst.Tuple, cst.List)):
        context, term = "python_loop", _accumulated_term(loop, operand)
        before = _BEFORE.get(capture_context.value_kind(model, term, scope)) if term is not None else None
        after = "elementwise"
        shape = capture_context.value_shape(model, term, scope) if term is not None else None
        valued = term
    elif loop is None and operand is not None and not isinstance(operand, (cst.Tuple, cst.List)):
        context = "plain"
        before = _BEFORE.get(capture_context.value_kind(model, operand, scope))
        after = _readers(model, call, scope)
        shape = capture_context.value_shape(model, operand, scope)
        valued = operand
    else:
        context = before = after = shape = valued = None
    total = shape.total() if shape is not None else None
    collectives = uses_collectives(model)
    decision = decide("JF206", settings, kind="barrier", before=before, after=after, context=context,
                      size=total if total is not None else _ARRAY_CLASSES, collectives=collectives)
    if decision.outcome == "none":
        return None  # this compiler fuses the same with or without it (XLA:CPU removes it), or the advice is worse
    subject = f"`{code_of(model, call, 40)}`"
    known = None
    if total is not None and valued is not None and shape is not None and shape.rank is not None:
        origin = axes_origin(model, valued, scope, list(range(shape.rank)))
        if origin is not None:
            known = premise_size(model, scope, f"`{code_of(model, valued, 30)}`", total, origin=origin)
    # The size the decision reads, where the table's answer depends on it or the code shows it.
    premises = calibrated(decision, subject, [SizeClaim("size", f"`{code_of(model, valued, 30)}`" if valued is not None
                                                        else "the barrier's operand", known, required=False)])
    if not decision.fires:
        if collectives and decision.outcome == "unknown" and decision.table is not None:
            premises = (assumed("harm", subject,
                                "this module runs collectives or shards its arrays: the barrier may order "
                                "communication against compute on purpose, an overlap of devices one compiled "
                                "device cannot show (not calibrated)"), *premises[1:])
        return Violation(call, message(
            *head, ": it may block fusion across it, so its operands are materialised in device memory and "
            "the code before and after runs as separate kernels"), data={"kind": "barrier"}, premises=premises)
    loop = context == "python_loop"
    cited = evidence_text(decision, "this form", "the loop as a `lax.fori_loop`" if loop
                             else "the same code without the barrier")
    advice = "run the iterations in a `lax.fori_loop` instead" if loop else \
        "drop it (to force recomputation, call the function again)"
    return Violation(call, message(*head, f": it blocks fusion across it: {cited}; {advice}"),
                     data={"kind": "barrier"}, premises=premises)


def _judge_checkpoint(model: SemanticModel, settings, call: cst.Call, scope, where: str, target, head):
    before = None
    fn = model.function_named(target.value, scope) if isinstance(target, cst.Name) else None
    if where == "partial":
        deco = model.parent(call)
        fn = model.index.function_of.get(model.parent(deco)) if isinstance(deco, cst.Decorator) else None
    if fn is not None and fn.returns and not fn.is_lambda:
        kinds = {_BEFORE.get(capture_context.value_kind(model, r, fn)) for r in fn.returns}
        before = kinds.pop() if len(kinds) == 1 else None
    decision = decide("JF206", settings, kind="prevent_cse", before=before)
    subject = f"`{code_of(model, call, 40)}`"
    if decision.outcome == "none":
        # The table confirms the claim: one compiled program with and without it. Nothing costs, so this is
        # information for the preview tier, not a default finding.
        row = max(decision.rows, key=lambda r: (r.before.temp_bytes or 0, r.before.kernels or 0))
        at = f" at {row.args}" if row.args else ""
        same = (f"on {decision.table.compiler}, the checkpointed function{at} compiles to "
                f"{figures_text(row.before)} with it and {figures_text(row.after)} without the checkpoint")
        note = "the compiled program is the same with and without it: nothing to gain, reported as information"
        return Violation(call, message(*head, f" ({same})"), data={"kind": "checkpoint"},
                         premises=(assumed("harm", subject, note),))
    if decision.fires:
        cited = evidence_text(decision, "the checkpointed form", "the plain call")
        return Violation(call, message(*head, f"; here it costs: {cited}"), data={"kind": "checkpoint"},
                         premises=(harm(decision, subject),))
    return Violation(call, message(*head), data={"kind": "checkpoint"}, premises=(harm(decision, subject),))


def _enclosing_for(model: SemanticModel, node: cst.CSTNode, scope: Function) -> cst.For | None:
    for a in model.ancestors(node):
        if a is scope.node:
            return None
        if isinstance(a, cst.For):
            return a
    return None


def _accumulated_term(loop: cst.For, operand: cst.Tuple | cst.List) -> cst.BaseExpression | None:
    """The term the loop accumulates into one of the barrier's names (`res = res + term`)."""
    names = {el.value.value for el in operand.elements if isinstance(el.value, cst.Name)}
    stmts = small_statements(loop.body) or []
    terms = [acc.term for acc in (accumulation(st) for st in stmts) if acc is not None and acc.name in names]
    return terms[0] if len(terms) == 1 else None


def _readers(model: SemanticModel, call: cst.Call, scope: Function) -> str | None:
    """What reads the barrier's result: "matmul", "reduction" or "elementwise" (the first that any read is)."""
    assign = model.parent(call)
    if not isinstance(assign, cst.Assign) or len(assign.targets) != 1 or \
            not isinstance(assign.targets[0].target, cst.Name):
        return None
    name = assign.targets[0].target.value
    kinds = set()
    for read in scope.reads:
        if read.name.value != name:
            continue
        kind = _reader_kind(model, read.name, scope)
        if kind is None:
            return None
        kinds.add(kind)
    for kind in ("matmul", "reduction", "elementwise"):
        if kind in kinds:
            return kind
    return None


def _reader_kind(model: SemanticModel, node: cst.CSTNode, scope: Function) -> str | None:
    for _ in range(8):
        parent = model.parent(node)
        if isinstance(parent, cst.BinaryOperation):
            if isinstance(parent.operator, cst.MatrixMultiply):
                return "matmul"
            node = parent
            continue
        if isinstance(parent, cst.UnaryOperation):
            node = parent
            continue
        if isinstance(parent, cst.Arg):
            outer = model.parent(parent)
            if not isinstance(outer, cst.Call):
                return None
            qn = model.qn(outer.func, scope)
            if qn in REDUCTIONS:
                return "reduction"
            if qn in CONTRACTIONS:
                return "matmul"
            if qn in JNP_ELEMENTWISE:
                node = outer
                continue
            return None
        if isinstance(parent, cst.Attribute) and parent.value is node:
            outer = model.parent(parent)
            if isinstance(outer, cst.Call) and outer.func is parent and parent.attr.value in REDUCTION_METHODS:
                return "reduction"
            return None
        if isinstance(parent, (cst.Return, cst.Assign, cst.Element)):
            return "elementwise"
        return None
    return None


RULE = FusionBlockingBarrier
