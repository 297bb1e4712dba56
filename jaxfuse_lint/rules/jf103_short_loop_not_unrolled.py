"""JF103 short-loop-not-unrolled."""
from __future__ import annotations

from typing import Iterator

import libcst as cst

from jaxfuse_lint.model import Function, Kind, SemanticModel, keyword, positional, walk
from jaxfuse_lint.model.fusion import cheap_function, expression_names, static_int
from jaxfuse_lint.rules.base import Rule, Violation, message
from jaxfuse_lint.core.targets import CPU_MEASURED, GPU_MEASURED, TPU_UNKNOWN, Claim, Evidence

_SHORT = {"jax.lax.fori_loop": "lax.fori_loop", "jax.lax.scan": "lax.scan"}


def trip_count(model: SemanticModel, call: cst.Call, qn: str, scope) -> tuple[int, str] | None:
    """The loop's trip count when it is known before tracing, and where it comes from."""
    if qn == "jax.lax.fori_loop":
        lower = positional(call, 0) or keyword(call, "lower")
        upper = positional(call, 1) or keyword(call, "upper")
        lo, hi = static_int(model, lower, scope), static_int(model, upper, scope)
        if lo is None or hi is None:
            return None
        return hi - lo, f"bounds {lo}..{hi}"
    length = keyword(call, "length") or positional(call, 3)
    if length is not None:
        n = static_int(model, length, scope)
        return (n, f"length={n}") if n is not None else None
    xs = keyword(call, "xs") or positional(call, 2)
    if xs is None or (isinstance(xs, cst.Name) and xs.value == "None"):
        return None
    shape = model.shape(xs, scope)
    if shape is None or shape.rank is None or shape.rank < 1:
        return None
    n = shape.size(0)
    return (n, f"`xs` has {n} rows") if n is not None else None


def has_unroll(call: cst.Call, qn: str) -> bool:
    if keyword(call, "unroll") is not None:
        return True
    if any(a.star for a in call.args):
        return True  # `*args` / `**kwargs` may carry it
    return qn == "jax.lax.scan" and positional(call, 5) is not None


def loop_invariant_work(model: SemanticModel, body: Function) -> cst.CSTNode | None:
    """An array the body gets from outside the loop: a read of an array computed in an enclosing
    function (JF203's capture), or a call whose every input comes from outside the body
    (`get_im(x)` recomputed each iteration). Unrolled, such work joins the enclosing scope,
    where XLA's CSE merges it with its copies and may keep it as a temporary instead."""
    inner = {id(body)}
    stack = [body]
    while stack:
        fn = stack.pop()
        inner.add(id(fn))
        stack.extend(fn.nested)

    def enclosing_owner(name: cst.Name):
        """The scope outside the body that binds `name`; the module scope for builtins."""
        found = model.lookup(name.value, model.scope_of(name))
        if found is None:
            return model.index.scope
        return None if id(found[0]) in inner else found[0]

    for node in walk(body.node.body):
        if isinstance(node, cst.Name):
            parent = model.parent(node)
            if isinstance(parent, cst.Attribute) and parent.attr is node:
                continue
            if isinstance(parent, cst.Arg) and parent.keyword is node:
                continue
            found = model.lookup(node.value, model.scope_of(node))
            if found is None:
                continue
            owner, bindings = found
            if id(owner) in inner or not isinstance(owner, Function) or not model.is_traced(owner):
                continue
            if any(b.kind in ("param", "def", "class", "import", "for") for b in bindings):
                continue
            if all(model.values.binding_kind(b, owner) is Kind.TRACED for b in bindings):
                return node
        elif isinstance(node, cst.Call):
            names = expression_names(node)
            if not names:
                continue
            owners = [enclosing_owner(n) for n in names]
            if any(o is None for o in owners):
                continue  # depends on the carry, the index or values computed in the body
            if all(o is model.index.scope for o in owners):
                continue  # module-level constants and functions only
            if model.kind(node, model.scope_of(node)) is Kind.STATIC:
                continue  # a Python value (`len(x)`, `x.shape[0] // 2`)
            return node
    return None


def _computes(body: Function) -> bool:
    return any(isinstance(n, (cst.BinaryOperation, cst.UnaryOperation, cst.Call)) for n in walk(body.node.body))


class ShortLoopNotUnrolled(Rule):
    code = "JF103"
    name = "short-loop-not-unrolled"
    summary = "`lax.fori_loop`/`lax.scan` with a small literal trip count and a cheap body, not unrolled"
    fixable = "always"
    doc = """
    ## What it does
    Flags a `lax.fori_loop` or `lax.scan` whose trip count is known before
    tracing and at most `unroll-max` (default 8), whose body is cheap
    (elementwise arithmetic, array creation from shapes, indexing and layout
    changes only), and which has no `unroll=` argument. The trip count of
    `fori_loop` is `upper - lower` with literal bounds (or names bound once to
    literals); that of `scan` is a literal `length=` or the known leading size
    of `xs`. lax traces the loop wherever it is, so it applies in and out of
    `jit`.

    ## Why is this bad?
    A lax loop is an XLA `while`: every iteration runs the body as its own
    kernels, and the carry is written to and read back from a temporary buffer
    between iterations. When the body is a few elementwise operations, launch
    overhead and that round trip dominate. Fully unrolled, the iterations are
    one straight-line computation that XLA fuses into a single kernel with no
    carried temporary. The fusion notebook's `f_for` (4 steps of `x*x + 1` on
    a 1 MiB array): 5 kernels → 1; measured on CPU with jax 0.10.2: one copy
    plus 4 launches of the body fusion → 1 fusion, temporaries 129 B → 0
    (`unroll=2` only halves the launches: 3, and keeps the temporary). The same
    holds for a 4-step `lax.scan`.

    ## Known problems
    Bodies with FFTs, contractions, reductions, nested loops, random numbers,
    writes to refs or objects, or calls the linter cannot see into are not
    flagged: there the launch overhead is small next to the work, and unrolling
    iterations that do not depend on each other lets XLA run them in parallel,
    which can raise peak memory (see JF205). Neither are bodies that recompute
    something from outside the loop (`a + get_im(x)`, the notebook's
    `f_cse_loop_impl`) or read an array computed outside it (JF203): those
    loops are where the loop scope is used to control XLA's CSE, and unrolled,
    the copies join the enclosing scope where CSE may merge them into a
    temporary. Compile time grows with the unrolled length.

    ## Example
    ```python
    @jax.jit
    def f(x):
        return jax.lax.fori_loop(0, 4, lambda i, y: y * y + 1, x)
    ```

    ## Use instead
    ```python
    @jax.jit
    def f(x):
        return jax.lax.fori_loop(0, 4, lambda i, y: y * y + 1, x, unroll=True)
    ```

    ## Fix safety
    Safe: `unroll=True` changes how XLA schedules the loop, never what it
    computes (the same operations run in the same order). The fix adds
    `unroll=True` as the last argument. Dtypes: no condition — with literal
    bounds `fori_loop` runs as a `scan` unrolled or not, the carry keeps the
    init's dtype in both, and a weakly typed init is promoted to the body's
    dtype the same way.
    """
    backends = (
        Claim(
            "A short `lax` loop launches its body's kernels every iteration and keeps its carry in a temporary; "
            "unrolled, the iterations fuse",
            gpu=Evidence(True, GPU_MEASURED + ": the notebook's 4-step `f_for` 5 → 1 kernels, 15 → 1 launches, "
                               "513 B → 0 B temporaries"),
            cpu=Evidence(True, CPU_MEASURED + ": the notebook's 4-step `f_for` 5 → 1 kernels, 15 → 1 launches"),
            tpu=TPU_UNKNOWN,
        ),
    )
    valid = (
        "import jax\n@jax.jit\ndef f(x):\n    return jax.lax.fori_loop(0, 100, lambda i, y: y * 2, x)\n",
        "import jax\n@jax.jit\ndef f(x):\n    return jax.lax.fori_loop(0, 4, lambda i, y: y * 2, x, unroll=True)\n",
        "import jax, jax.numpy as jnp\n@jax.jit\ndef f(x):\n"
        "    return jax.lax.fori_loop(0, 4, lambda i, y: jnp.fft.ifft(jnp.fft.fft(y)), x)\n",
        "import jax\n@jax.jit\ndef f(x, n):\n    return jax.lax.fori_loop(0, n, lambda i, y: y * 2, x)\n",
    )
    invalid = (
        "import jax\n@jax.jit\ndef f(x):\n    return jax.lax.fori_loop(0, 4, lambda i, y: y * y + 1, x)\n",
        "from jax import lax\ndef f(x):\n    return lax.scan(lambda c, _: (c * 2, None), x, None, length=3)[0]\n",
        "import jax, jax.numpy as jnp\nSTEPS = 5\ndef body(i, c):\n    return jnp.sin(c) + i\n"
        "def f(x):\n    return jax.lax.fori_loop(1, STEPS, body, x)\n",
    )

    def check(self, model: SemanticModel, settings) -> Iterator[Violation]:
        limit = settings.unroll_max
        for site in model.loop_sites:
            qn = site.qualified_name
            if qn not in _SHORT:
                continue
            call = site.call
            if has_unroll(call, qn):
                continue
            found = trip_count(model, call, qn, site.scope)
            if found is None:
                continue
            n, source = found
            if not 1 <= n <= limit:
                continue
            if not site.bodies or not all(cheap_function(model, body) for body in site.bodies):
                continue
            if any(loop_invariant_work(model, body) is not None for body in site.bodies):
                continue
            if not any(_computes(body) for body in site.bodies):
                continue  # the body passes its carry through: nothing to fuse
            body = site.bodies[0]
            body_name = "its lambda body" if body.is_lambda else f"its body `{body.name}`"
            yield Violation(
                call,
                message(
                    f"`{_SHORT[qn]}` runs {n} iteration{'s' if n != 1 else ''} ({source}) of {body_name}, "
                    f"which is only elementwise work: each iteration is a separate kernel launch and the carry "
                    f"a temporary buffer; with `unroll=True` the {n} steps fuse into one kernel",
                ),
                data={"trip_count": n, "qualified_name": qn},
            )


RULE = ShortLoopNotUnrolled
