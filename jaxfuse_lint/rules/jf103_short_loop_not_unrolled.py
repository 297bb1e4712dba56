"""JF103 short-loop-not-unrolled."""
from __future__ import annotations

from typing import Iterator

import libcst as cst

from jaxfuse_lint.core.calibration import decide, evidence_text, raw
from jaxfuse_lint.model import Function, Kind, SemanticModel, fusion_context, keyword, loop_context, positional, walk
from jaxfuse_lint.model.fusion import expression_names, static_int
from jaxfuse_lint.model.evidence import evidence
from jaxfuse_lint.model.premises import LineOf, SizeClaim, calibrated, proven
from jaxfuse_lint.model.premises import size as premise_size
from jaxfuse_lint.model.size_origin import SizeOrigin, axes_origin
from jaxfuse_lint.model.source_text import code_of
from jaxfuse_lint.rules.base import Rule, Violation, message
from jaxfuse_lint.core.targets import TPU_UNKNOWN, Claim, Evidence

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
    premises = ('runs-traced', 'size', 'harm')
    name = "short-loop-not-unrolled"
    summary = "`lax.fori_loop`/`lax.scan` with a small literal trip count, not unrolled"
    fixable = "sometimes"
    doc = """
    ## What it does
    Flags a `lax.fori_loop` or `lax.scan` whose trip count is known before
    tracing and at most `unroll-max` (default 8), with no `unroll=` argument,
    whose body is elementwise work, possibly with a reduction, a matmul, a
    gather or a scatter — where JF103's calibration table shows that the
    unrolled loop compiles better for the form found (the Calibration section
    below). The trip count of `fori_loop` is `upper - lower` with literal
    bounds (or names bound once to literals); that of `scan` is a literal
    `length=` or the known leading size of `xs`. lax traces the loop wherever
    it is, so it applies in and out of `jit`.

    The table's features, read from the code: the loop (`fori_loop`, `scan`);
    the trip count (2, 4, 8: other counts take the nearest on a log scale); the
    heaviest work of the body (a matmul, then a scatter `x.at[i].add(...)`, a
    reduction, a gather — indexing with a traced index such as `c[perm]` or
    `xs[i]` —, else elementwise); the carry's size (classes of 1,024, 65,536
    and 4,194,304 elements) and dtype; and the code around the loop ("alone":
    an argument in and the result returned, or the loop outside `jit`, where lax
    compiles it by itself; "around": elementwise work makes the carry or reads
    the result). A feature the rule cannot read (a carry of undeclared shape, a
    tuple carry) matches every calibrated value: the finding is reported when
    all of them show the harm, and is in the preview tier, without its fix,
    when only some do.

    ## Premises
    `runs-traced` (the body is traced by the loop); `size(the trip count)`:
    proven from the literal bounds or `length=` (the line cited);
    `size(the carry)`: the carry's elements, proven by the construct that
    states its shape (a scalar literal, an annotation, a stack...) or, not
    shown, proven irrelevant where every calibrated carry size shows the harm,
    else assumed with the table's threshold (preview); `harm(loop)` from the
    table. A carry more than one size class below the calibrated ones — a
    Python float or a 0-d array, whose loop launches kernels of a few
    instructions — is not calibrated: such a loop is at most in the preview
    tier (jax-ml/jax#23637's one-line `scan`/`fori_loop` repro reported it by
    default, as a 1,024-element carry; not worth a finding).

    ## Why is this bad?
    A lax loop is an XLA `while`: every iteration launches the body's kernels
    again, and the carry goes through a buffer between iterations. Unrolled,
    the steps are one straight-line program that XLA fuses. On XLA:GPU for the
    H100 (jax 0.10.2, deviceless), 4 steps of elementwise work on a
    (512, 128) float32 carry: 5 kernels and 15 launches → 1 kernel, 1 launch;
    with a reduction in the body: 6 kernels, 19 launches and 256 KiB of
    temporaries → 1 kernel, 1 launch, none. Elementwise and reduction bodies
    show this in all 72 calibrated forms each, on the H100 and on the A100.
    A gather of the carry's rows does in 68 of 72 forms on the H100 (54 on the
    A100), a matmul or a scatter over 2 steps in every form.

    ## Known problems
    Where unrolling gives more distinct kernels (one per step) for fewer
    launches, the table calls the fix mixed and the rule is silent: a matmul
    body over 4 or 8 steps (H100, (512, 128) carry: 6 kernels and 19 launches
    → 8 kernels and 8 launches), a scatter into a carry of 65,536 elements or
    more over 4 or 8 steps (the same 6 → 8 kernels; the scatters stay
    kernels of their own). A gather body over 8 steps on a 4M-element carry
    keeps twice the temporaries unrolled (16 → 32 MiB on the H100): silent
    too. On XLA:CPU the table is timed as well, and unrolling is slower in
    part of the forms (harm in 166 of 360; 50 of 72 elementwise ones); the
    CPU timings were taken on a loaded shared machine, so read the CPU
    decisions as provisional.

    Bodies with FFTs, nested loops, random numbers, writes to refs or
    objects, or calls the linter cannot see into are not flagged (not
    calibrated). A body that moves data between elements — `jnp.roll`,
    shifted or strided slices (`v[1:] - v[:-1]`), concatenation, stacking,
    padding, flips, transposes, an `.at[...]` update of a static window — is
    none of the calibrated bodies either (a stencil is not elementwise work:
    a 4-step Jacobi sweep written with `jnp.roll` at f32[1024,1024] unrolls
    from 6 kernels to 4 but from 4.0 to 8.0 MiB of temporaries on the H100):
    it is reported only in the preview tier, never with a fix. Neither are bodies that recompute something from outside the
    loop (`a + get_im(x)`, the notebook's `f_cse_loop_impl`) or read an array
    computed outside it (JF203): there the loop scope controls XLA's CSE.
    Compile time grows with the unrolled length.

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
    Safe, and offered only where the table shows the harm for every form the
    loop may take: `unroll=True` changes how XLA schedules the loop, never
    what it computes (the same operations run in the same order). The fix
    adds `unroll=True` as the last argument. Dtypes: no condition — with
    literal bounds `fori_loop` runs as a `scan` unrolled or not, the carry
    keeps the init's dtype in both, and a weakly typed init is promoted to the
    body's dtype the same way.
    """
    backends = (
        Claim(
            "A short `lax` loop launches its body's kernels every iteration and keeps its carry in a buffer; "
            "unrolled, the iterations fuse",
            gpu=Evidence(True, "calibrated (jaxfuse_lint/core/calibration_tables/JF103.h100.json, .a100.json: XLA:GPU "
                               "of jax 0.10.2, deviceless): harm in 276 and 262 of 360 forms; every elementwise and "
                               "reduction body; matmul bodies over 2 steps only"),
            cpu=Evidence(True, "calibrated (JF103.cpu.json: XLA:CPU of jax 0.10.2, timed): harm in 166 of 360 forms"),
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
            if not 1 <= n <= limit or not site.bodies:
                continue
            kind = loop_context.body_kind(model, site.bodies)
            if kind is None:
                continue
            if any(loop_invariant_work(model, body) is not None for body in site.bodies):
                continue
            if not any(_computes(body) for body in site.bodies):
                continue  # the body passes its carry through: nothing to fuse
            body = site.bodies[0]
            body_name = "its lambda body" if body.is_lambda else f"its body `{body.name}`"
            head = f"`{_SHORT[qn]}` runs {n} iteration{'s' if n != 1 else ''} ({source}) of {body_name} ({_KINDS[kind]})"
            data = {"trip_count": n, "qualified_name": qn, "body": kind, "source": source}
            if raw(settings):  # the calibration harness: the pattern, whatever the table says
                yield Violation(call, message(f"{head}: each iteration launches the body's kernels again; "
                                              "unroll it (`unroll=True`)"), data=data)
                continue
            judged = self._judge(model, site, n, kind, head, data, settings)
            if judged is None:
                continue
            # The loop compiles where it runs: in its traced function, or by itself (lax traces the body).
            if isinstance(site.scope, Function) and model.is_traced(site.scope):
                runs = evidence(model).premise(site.scope, call, raises=False)
            else:
                runs = evidence(model).premise(body, body.node, raises=False)
            if runs is not None:
                yield judged.with_premises(runs)

    # -- what the compiler does with this loop (the calibration table) ---------------------------
    def _judge(self, model, site, n, kind, head, data, settings) -> Violation | None:
        call, qn, scope = site.call, site.qualified_name, site.scope
        init = loop_context.carry(call, qn)
        elements = loop_context.size(model, init, scope)
        decision = decide(self.code, settings, loop=_SHORT[qn].split(".")[1], steps=n, body=kind,
                          size=elements,
                          dtype=fusion_context.dtype_name(model, init, scope) if init is not None else None,
                          context=loop_context.context(model, call, qn, scope))
        if decision.outcome == "none":
            return None  # unrolled, the compiler does no better: nothing to win
        subject = f"`{code_of(model, call, 40)}`"
        carry_known = None
        if elements is not None and init is not None:
            shape = model.shape(init, scope)
            origin = (SizeOrigin("scalar", (f"the scalar `{code_of(model, init, 30)}` on line ", LineOf(init)))
                      if shape is not None and shape.rank == 0 else
                      axes_origin(model, init, scope, list(range(shape.rank))) if shape is not None else None)
            if origin is not None:
                carry_known = premise_size(model, scope, f"the carry `{code_of(model, init, 30)}`", elements,
                                           origin=origin)
        trips = proven("size", f"the trip count of {subject}", "literal-trip-count",
                       f"{n} iteration{'s' if n != 1 else ''}: {data['source']} on line ", LineOf(call))
        premises = (trips, *calibrated(decision, subject, [SizeClaim("size", f"the carry of {subject}", carry_known)]))
        if not decision.fires:
            return Violation(call, message(f"{head}: unrolled (`unroll=True`), the iterations may fuse"),
                             data=data, premises=premises)
        steps = decision.evidence.features.get("steps") if decision.evidence is not None else n
        evidence = evidence_text(decision, f"the calibrated {steps}-step loop", "unrolled")
        return Violation(call, message(f"{head}: {evidence}; add `unroll=True`"), data=data, premises=premises)


# How a message names the heaviest work of the body (model/loop_context.py).
_KINDS = {"elementwise": "elementwise work only", "reduction": "with a reduction", "matmul": "with a matmul",
          "gather": "with a gather", "scatter": "with a scatter",
          "shift": "with shifted copies: roll, slices, concatenation or padding"}


RULE = ShortLoopNotUnrolled
