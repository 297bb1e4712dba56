"""JF206 fusion-blocking-barrier."""
from __future__ import annotations

from typing import Iterator

import libcst as cst

from jaxfuse_lint.model import Function, SemanticModel, keyword, positional
from jaxfuse_lint.rules.base import Rule, Violation, message, reason_parts
from jaxfuse_lint.core.targets import (
    CPU_MEASURED, GPU_MEASURED, OPTIMIZATION_BARRIER_BLOCKS_FUSION, Claim, Evidence, holds, tracing,
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
    name = "fusion-blocking-barrier"
    summary = "`lax.optimization_barrier` in traced code, or `checkpoint(prevent_cse=True)` used to force recomputation"
    fixable = "never"
    doc = """
    ## What it does
    Informational. Flags, in traced code:
    - `jax.lax.optimization_barrier(...)`;
    - `jax.checkpoint` / `jax.remat` with an explicit `prevent_cse=True`
      (called, or applied with `functools.partial` as a decorator) in a module
      that never differentiates (no `grad`, `value_and_grad`, `vjp`, `jvp`,
      `jacfwd`/`jacrev`, `custom_vjp`, ...), where it can only have been meant to
      force recomputation in the forward pass.

    ## Why is this bad?
    `optimization_barrier` orders computations by making its outputs opaque to
    XLA, and that also stops fusion across it: the values it passes are
    materialised in device memory, and producers and consumers run as separate
    kernels. The fusion notebook measures `S = optimization_barrier(sin(x) + 3);
    S + exp(S)` as 2 kernels on GPU where the same code without the barrier is
    one. Used to serialise FFTs in a Python loop it does cap the parallel
    memory, but a `lax.fori_loop` achieves that without blocking fusion (see
    JF205). On CPU, jax 0.10.2's XLA removes the barrier before fusion (measured:
    1 kernel, no temporary, and no serialising effect on the notebook's
    FFT loop), so what the barrier does depends on the backend.

    `checkpoint`'s `prevent_cse` only guards the rematerialised computation in
    the backward pass. In a forward computation it neither prevents CSE nor
    forces recomputation (the notebook's finding; measured on CPU: the
    notebook's `get_im` used twice around a reduction compiles to the same 2
    kernels and 1 MiB temporary with or without `jax.checkpoint(get_im,
    prevent_cse=True)`).

    With `target = "cpu"` barriers are not reported: XLA:CPU removes them
    before fusion, so there they block nothing (see Backends).

    ## Known problems
    Modules that import Pallas are skipped: inside a Pallas kernel the barrier
    orders instructions and XLA fusion does not apply. A module that is only
    differentiated from other modules has its `checkpoint(prevent_cse=True)`
    reported. Barriers placed on purpose (to order side effects or cap memory
    on GPU) are reported too: suppress with `# noqa: JF206`.

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
    No fix: whether the barrier's ordering is needed is the author's call.
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
                if holds(OPTIMIZATION_BARRIER_BLOCKS_FUSION, settings.target) is False:
                    continue  # this target's XLA removes the barrier before fusion: nothing is blocked
                if pallas is None:
                    pallas = uses_pallas(model)
                if pallas:
                    continue  # inside Pallas kernels the barrier orders instructions; there is no XLA fusion
                yield Violation(
                    call,
                    message(
                        f"`lax.optimization_barrier` in traced `{scope.display_name}` (",
                        *reason_parts(model.trace_reason(scope)),
                        "): it blocks fusion across it, so its operands are materialised in device memory and "
                        "the code before and after runs as separate kernels; to run loop iterations one after "
                        "another use `lax.fori_loop`, to force recomputation call the function again",
                    ),
                    data={"kind": "barrier"},
                )
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
            yield Violation(
                call,
                message(
                    "`prevent_cse=True` only affects the backward pass that `jax.checkpoint` rematerialises, and "
                    "nothing in this module differentiates: in the forward computation it neither prevents CSE "
                    "nor forces recomputation",
                ),
                data={"kind": "checkpoint"},
            )

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


RULE = FusionBlockingBarrier
