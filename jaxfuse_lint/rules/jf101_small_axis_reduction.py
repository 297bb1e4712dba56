"""JF101 small-axis-reduction."""
from __future__ import annotations

from typing import Iterator

import libcst as cst

from jaxfuse_lint.core.calibration import decide, evidence_text, raw
from jaxfuse_lint.model import fusion_context
from jaxfuse_lint.model.names import as_written
from jaxfuse_lint.model import SemanticModel, keyword, positional
from jaxfuse_lint.model.api import REDUCTION_METHODS, REDUCTIONS
from jaxfuse_lint.model.evidence import evidence
from jaxfuse_lint.model.premises import SizeClaim, assumed, calibrated
from jaxfuse_lint.model.premises import size as premise_size
from jaxfuse_lint.model.size_origin import axes_origin, axis_origin
from jaxfuse_lint.model.scopes import Function
from jaxfuse_lint.model.shapes import Shape
from jaxfuse_lint.model.source_text import code_of
from jaxfuse_lint.rules.base import Rule, Violation, message
from jaxfuse_lint.core.targets import CPU_MEASURED, GPU_MEASURED, TPU_UNKNOWN, Claim, Evidence


def _int(e: cst.BaseExpression | None) -> int | None:
    if isinstance(e, cst.Integer):
        return int(e.value, 0)
    if isinstance(e, cst.UnaryOperation) and isinstance(e.operator, cst.Minus) and isinstance(e.expression, cst.Integer):
        return -int(e.expression.value, 0)
    return None


class SmallAxisReduction(Rule):
    code = "JF101"
    premises = ("runs-traced", "size", "harm")
    name = "small-axis-reduction"
    summary = "Reduction (sum/mean/prod/max/min/norm/dot/einsum) over a small, statically known axis in traced code"
    fixable = "sometimes"
    doc = """
    ## What it does
    Flags, in traced code, a reduction — `sum`, `mean`, `prod`, `max`, `min`,
    `linalg.norm`, as functions or methods — over an axis whose size is statically
    known and at most `small-axis-max` (default 4), **where the compiler shows that
    writing it as explicit terms saves memory or kernel launches and costs nothing**.

    The decision is not the rule's: it is the calibration table of the configured
    target (`target`, and `gpu` for the GPU model), made by compiling 3,600 forms
    of the pattern before and after this rule's fix with XLA:GPU (H100 and A100,
    deviceless) and XLA:CPU (timed). The rule reads the form from the code around
    the reduction — where the small axis comes from (an input, elementwise work on
    it, a `jnp.stack` or `jnp.concatenate` built in the function, a broadcast of a
    vector), what reads the result (returned, a scalar epilogue, broadcast back
    against an array, a further reduction, a matmul), the axis size, the rows, the
    dtype, and whether it runs in a `lax` loop body — and asks the table:

    - every form the code may take shows the harm: reported, with the measured
      figures of one of them in the message;
    - only some do (the rows, the dtype or the producer are not known and decide
      it), or the form is not calibrated (a matmul result, a gather, `dot`,
      `einsum`, `float64`): preview only, and no fix;
    - none does: silent.

    Sizes come from `jnp.stack([...], axis=k)`, `jnp.array([...])`,
    `jnp.column_stack`, literal shapes (`zeros((n, 3))`, `reshape(-1, 2)`, module
    constants), `arange` of numbers, slices (`x[..., :3]`), `assert x.shape[-1] ==
    3` and jaxtyping annotations (`Float[Array, "n 3"]`), carried through names,
    arithmetic, new axes, integer indexing and gathers, transposes, `concatenate`,
    FFTs, the module's own functions and functions imported from other checked
    modules, and the arguments every call of a nested function passes. Unknown
    sizes are never flagged.

    ## Premises
    Each finding states what it rests on (`--output-format full`, and the JSON
    and SARIF `premises`):

    - `runs-traced`: the reduction runs under a trace, by the route it cites;
    - `size(axis k of x)`: the small axis's size, proven by the construct that
      states it — "a `jnp.stack` of 3 arrays on line 17", "`assert
      x.shape[-1] == 3` on line 4", a jaxtyping annotation, an unpacking, a
      slice, a literal shape, what a helper returns, every call of a nested
      function — or recorded from a run (`check --profile`);
    - `size(the rows of x)` where the table's answer depends on the rows: proven
      where the code shows them, else **assumed**, saying from which size on the
      table shows the harm (`harm from 4,194,304 rows`): the finding is then in
      the preview tier, without a fix, until the rows are declared;
    - `harm(form)`: every calibrated form the code may take shows the harm (for
      the sizes the size premise names), citing the table — and the GPU where a
      real one timed the form.

    ## Why is this bad?
    On XLA:GPU, what fuses around a small reduction depends on the code around it
    (see Calibration below; H100, jax 0.10.2). When the small axis is **built in the
    function** — `v = jnp.stack([...], axis=-1)` of computed columns, or a
    `jnp.concatenate` — and the reduced result is broadcast back against an array
    (`v * jnp.sum(v * v, -1, keepdims=True)`, the fusion notebook's `f_sum_jax`),
    the stacked array is materialised: 2 kernels and a 48 MiB temporary at
    4,194,304 rows × 3, against 1 kernel and none for the explicit terms (timed
    on an NVIDIA H200 too, jax 0.11.2: 0.80× the time). Inside a `lax.fori_loop`
    body, a reduction over 2 or 4 elements keeps a temporary across the
    iterations (16 MiB at 4,194,304 rows). Elsewhere XLA fuses it: an axis of 3
    is almost never worse, a reduction feeding a matmul never.

    A kernel launch saved and nothing else (a scalar epilogue after a sum over 2
    or 4 columns: 2 kernels → 1) is what a compiler cannot decide; a real GPU
    did (see "Measured on a GPU" below): on an NVIDIA H200 the 7 such rewrites at
    4,194,304 rows all ran faster (0.70–0.94× the time), which is signal; at
    262,144 rows the ratios (0.88–1.09) are within the noise of a single timing
    (±20%). So those forms are reported from 4,194,304 rows (float32, the dtype
    timed), not below; where the rows are unknown the finding is in the preview
    tier saying so, and where a form was not timed (bfloat16, `max`, a stack
    under an epilogue) the launch alone stays in the preview tier.

    ## Known problems
    The tables were made with jax 0.10.2's XLA; a newer XLA may fuse more
    (regenerate them: `python -m jaxfuse_lint.calibrate --rule JF101`). The H200
    timings (`JF101.h200.json`, from `python -m jaxfuse_lint.calibrate.measured`)
    stand for the `h100` target (the same chip, more memory); the A100's table
    has no timings. Each pair was timed once. The number of rows is rarely known
    statically, so a form whose harm depends on it is preview only (its message
    says from which number of rows the table shows the harm); `check --confirm`
    compiles the function where its argument shapes are known and decides with
    its own figures. `vdot` and `einsum` are not
    calibrated (preview only, no fix).

    ## Example
    ```python
    @jax.jit
    def f(x):
        v = jnp.stack([x[:, 0] * 2.0, x[:, 1] + 1.0], axis=-1)
        return v * jnp.sum(v * v, axis=-1, keepdims=True)
    ```

    ## Use instead
    ```python
    @jax.jit
    def f(x):
        v = jnp.stack([x[:, 0] * 2.0, x[:, 1] + 1.0], axis=-1)
        return v * (v[..., 0] * v[..., 0] + v[..., 1] * v[..., 1])[..., None]
    ```

    ## Fix safety
    A fix is offered only where the table shows the fixed form is not worse on any
    figure (kernels, launches, temporaries, folded constants; wall-clock on CPU):
    never for a preview finding. It is safe when the size is known: the reduction
    is unrolled along the same axis (positive axis k indexes `[:, ..k.., i]`,
    negative axis -m `[..., i, :, ..(m-1)..]`, no axis on a rank-1 array `[i]`),
    `keepdims` becomes a `None` index at the reduced position, `mean` divides by
    the size, `max`/`min` become nested `jnp.maximum`/`jnp.minimum`, `norm` becomes
    the square root of the sum of `abs(x)**2`. An elementwise operand (`v * w`) is
    split into its factors when every array factor is known to have the full size
    along the axis; a factor of unknown size is broadcast first
    (`_, x_full = jnp.broadcast_arrays(kvm, x)`), or, where no statement can be
    inserted, the operand is indexed as a whole. The operand is repeated once per
    term, so it must be pure (names, attributes, subscripts, arithmetic, jnp calls,
    the module's own pure functions); other calls get no fix, nor do `dtype=`,
    `where=`, `initial=`, `out=`, `ord=`, a non-literal `keepdims` or a tuple of
    axes.

    Dtypes decide whether the fix is safe; the operand's dtype must be proved for
    both x64 settings (unknown: any dtype, weak ones included). Safe when: `max`/
    `min` of a strongly typed operand; `sum`/`prod` where the dtype is its own
    accumulator (float32/64, complex, default-width ints), float16/bfloat16 with two
    terms, or with more terms cast to float32 and back as `jnp.sum` computes, bool
    and signed ints cast with `.astype(int)`; `mean` of float32/64 or complex (ints
    and narrow floats averaged in float32); `norm` of float32/64 or complex; `dot`
    of ints. Unsafe otherwise, with the reason and what to declare: unknown or
    weakly typed operands, unsigned ints in `sum`/`prod`, an operand that may be
    float16 or bfloat16 with three or more terms, narrow-float or int `norm`, float
    `dot`. Within float dtypes, results can differ by rounding (the order of the
    additions).
    """
    backends = (
        Claim(
            "A reduction over a small axis is a kernel of its own and a fusion barrier, so that explicit terms "
            "save a kernel and a temporary — only in some forms: which ones, the calibration tables say",
            gpu=Evidence(True, GPU_MEASURED + ": in 1,374 of 3,600 forms (the `jnp.stack`/`concatenate` "
                               "producer broadcast back: all 288; an axis of 3: 167 of 1,200; a matmul "
                               "consumer: none) — the rule fires only on those; and timed on an NVIDIA H200 "
                               "(jax 0.11.2): one launch saved is faster at 4,194,304 rows (4 more forms), "
                               "within the noise at 262,144"),
            cpu=Evidence(True, CPU_MEASURED + " and timed: see the `cpu` table"),
            tpu=TPU_UNKNOWN,
        ),
    )
    valid = (
        "import jax, jax.numpy as jnp\n@jax.jit\ndef f(x):\n    return jnp.sum(x, axis=0)\n",
        "import jax.numpy as jnp\ndef host(x):\n    v = jnp.stack([x, x], axis=-1)\n    return jnp.sum(v, axis=-1)\n",
        "import jax, jax.numpy as jnp\n@jax.jit\ndef f(x):\n    v = jnp.zeros((x.shape[0], 16))\n    return v.sum(axis=1)\n",
    )
    invalid = (
        "import jax, jax.numpy as jnp\n@jax.jit\ndef f(x):\n    v = jnp.stack([x, x], axis=-1)\n    return jnp.sum(v, axis=-1)\n",
        "import jax, jax.numpy as jnp\n@jax.jit\ndef f(x):\n    return x[..., :3].max(axis=-1)\n",
        "import jax\nfrom jax.numpy.linalg import norm\n@jax.jit\ndef f(x):\n    assert x.shape[-1] == 3\n    return norm(x, axis=-1)\n",
    )

    def check(self, model: SemanticModel, settings) -> Iterator[Violation]:
        limit = settings.small_axis_max
        for site in model.index.calls:
            scope = site.scope
            if not isinstance(scope, Function) or not model.is_xla_traced(scope):
                continue
            call = site.call
            qn = model.qn(call.func, scope)
            found = None
            if qn in REDUCTIONS:
                found = self._function_form(model, call, scope, REDUCTIONS[qn], qn, limit)
            elif qn in ("jax.numpy.dot", "jax.numpy.vdot", "jax.numpy.einsum"):
                found = self._contraction(model, call, scope, qn, limit)
            elif qn is None and isinstance(call.func, cst.Attribute):
                attr = call.func.attr.value
                if attr in REDUCTION_METHODS:
                    found = self._method_form(model, call, scope, REDUCTION_METHODS[attr], limit)
                elif attr == "dot" and call.args:
                    found = self._dot(model, call, scope, call.func.value, positional(call, 0), "method", limit)
            if found is None:
                continue
            if raw(settings):  # the calibration harness: the pattern, whatever the table says
                yield found
                continue
            judged = self._judge(model, found, scope, settings)
            if judged is None:
                continue
            runs = evidence(model).premise(scope, call, raises=False)
            if runs is not None:
                yield judged.with_premises(runs)

    # -- what the compiler does with this form (the calibration table) ---------------------------
    def _judge(self, model, v: Violation, scope, settings) -> Violation | None:
        data = v.data
        kind = data.get("kind")
        subject = f"`{code_of(model, v.node, 40)}`"
        if kind not in _CALIBRATED:
            return v.with_premises(premise_size(model, scope, f"the contracted axis of {subject}", data["size"],
                                                origin=self._contracted_origin(model, data, scope)), assumed(
                "harm", subject, f"`{kind}` contractions are not calibrated: what XLA fuses around them is not measured"))
        call, operand, size = v.node, data["operand"], data["size"]
        keepdims = keyword(call, "keepdims")
        producer = fusion_context.producer(model, operand, scope)
        consumer = fusion_context.consumer(model, call, scope, isinstance(keepdims, cst.Name) and keepdims.value == "True")
        decision = decide(self.code, settings, reduction=kind, producer=producer, consumer=consumer, size=size,
                          rows=fusion_context.rows(data["shape"], data["axis"]),
                          dtype=fusion_context.dtype_name(model, operand, scope), loop=fusion_context.loop(model, scope))
        where = "the only axis" if data["axis"] is None else f"axis {data['axis']}"
        form = _FORMS.get(producer, "")
        shape, axis = data["shape"], data["axis"]
        operand_text = f"`{code_of(model, operand, 40)}`"
        origin = axis_origin(model, operand, scope, 0 if axis is None else axis)
        premises = (premise_size(model, scope, f"{where} of {operand_text}", size, "" if origin else form,
                                 origin=origin),
                    *calibrated(decision, subject, [SizeClaim("rows", f"the rows of {operand_text}",
                                                              self._rows(model, operand, scope, shape, axis),
                                                              required=False)]))
        head = f"`{data['short']}` reduces {where} of `{code_of(model, operand, 40)}` (size {size}{form})"
        if not decision.fires:
            return Violation(call, message(f"{head}: write it as {size} explicit terms"), data=data, premises=premises)
        cited = evidence_text(decision, "this form", f"{size} explicit terms")
        return Violation(call, message(f"{head}: {cited}; write it as {size} explicit terms"), data=data,
                         premises=premises)

    @staticmethod
    def _rows(model, operand, scope, shape, axis):
        """The `size` premise of the operand's rows (every element outside the reduced axis), where
        the code shows them."""
        rows = fusion_context.rows(shape, axis)
        if rows is None:
            return None
        others = [i for i in range(shape.rank) if axis is None or i != axis % shape.rank]
        origin = axes_origin(model, operand, scope, others) if others else None
        if origin is None:
            return None
        return premise_size(model, scope, f"the rows of `{code_of(model, operand, 40)}`", rows, " rows",
                            origin=origin)

    @staticmethod
    def _contracted_origin(model, data, scope):
        a, shape_a = data.get("a"), data.get("shape_a")
        if a is not None and shape_a is not None and shape_a.size(-1) == data.get("size"):
            return axis_origin(model, a, scope, -1)
        b = data.get("b")
        return axis_origin(model, b, scope, 0) if b is not None else None

    # -- sum / mean / prod / max / min / norm ----------------------------------------------------
    def _function_form(self, model, call, scope, kind, qn, limit):
        operand = positional(call, 0) or keyword(call, "a") or keyword(call, "x")
        if operand is None:
            return None
        axis_expr = keyword(call, "axis") or positional(call, 2 if kind == "norm" else 1)
        short = as_written(call, qn)
        return self._reduction(model, call, scope, kind, operand, axis_expr, short, limit, "function")

    def _method_form(self, model, call, scope, kind, limit):
        operand = call.func.value
        axis_expr = keyword(call, "axis") or positional(call, 0)
        return self._reduction(model, call, scope, kind, operand, axis_expr, f".{call.func.attr.value}()", limit, "method")

    def _reduction(self, model, call, scope, kind, operand, axis_expr, short, limit, form):
        shape = model.shape(operand, scope)
        if shape is None:
            return None
        if axis_expr is None or (isinstance(axis_expr, cst.Name) and axis_expr.value == "None"):
            if shape.rank != 1:
                return None
            axis = None
            size = shape.size(0)
        else:
            axis = _int(axis_expr)
            if axis is None:
                return None
            if shape.normalize_axis(axis) is None:
                return None
            size = shape.size(axis)
        if size is None or not 1 <= size <= limit:
            return None
        where = "the only axis" if axis is None else f"axis {axis}"
        return Violation(
            call,
            message(
                f"`{short}` reduces {where} of `{code_of(model, operand, 40)}`, which has size {size}: "
                f"a separate kernel and a fusion barrier; write it as {size} explicit terms",
            ),
            data={"kind": kind, "operand": operand, "axis": axis, "size": size, "form": form, "shape": shape,
                  "short": short},
        )

    # -- dot / vdot / einsum ---------------------------------------------------------------------
    def _contraction(self, model, call, scope, qn, limit):
        if qn == "jax.numpy.dot":
            return self._dot(model, call, scope, positional(call, 0) or keyword(call, "a"),
                             positional(call, 1) or keyword(call, "b"), "function", limit)
        if qn == "jax.numpy.vdot":
            a, b = positional(call, 0), positional(call, 1)
            for operand in (a, b):
                if operand is None:
                    continue
                s = model.shape(operand, scope)
                total = _total(s)
                if total is not None and 1 <= total <= limit:
                    return Violation(call, message(
                        f"`jnp.vdot` contracts {total} elements: a separate kernel and a fusion barrier; "
                        f"write the {total} products out explicitly"), data={"kind": "vdot", "size": total})
            return None
        subscripts = positional(call, 0)
        if not isinstance(subscripts, cst.SimpleString) or not isinstance(subscripts.evaluated_value, str):
            return None
        spec = subscripts.evaluated_value.replace(" ", "")
        operands = [a.value for a in call.args[1:] if a.keyword is None and not a.star]
        sizes = _einsum_contracted_sizes(spec, [model.shape(o, scope) for o in operands])
        small = {letter: n for letter, n in sizes.items() if n is not None and 1 <= n <= limit}
        if not small:
            return None
        letters = ", ".join(f"`{k}` (size {v})" for k, v in sorted(small.items()))
        return Violation(call, message(
            f"`jnp.einsum('{spec}')` contracts {letters}: a separate kernel and a fusion barrier; "
            f"write the few products out explicitly"), data={"kind": "einsum", "size": max(small.values())})

    def _dot(self, model, call, scope, a, b, form, limit):
        if a is None or b is None:
            return None
        sa, sb = model.shape(a, scope), model.shape(b, scope)
        if (sa is not None and sa.rank == 0) or (sb is not None and sb.rank == 0):
            return None  # a scalar operand: a multiplication, no contraction
        size = sa.size(-1) if sa is not None else None
        if size is None and sb is not None and sb.rank is not None:
            size = sb.size(0) if sb.rank == 1 else sb.size(-2)
        if size is None or not 1 <= size <= limit:
            return None
        name = "`jnp.dot`" if form == "function" else "`.dot()`"
        return Violation(call, message(
            f"{name} contracts an axis of size {size} (`{code_of(model, a, 30)}` · `{code_of(model, b, 30)}`): "
            f"a separate kernel and a fusion barrier; write it as {size} explicit products"),
            data={"kind": "dot", "a": a, "b": b, "size": size, "form": form, "shape_a": sa, "shape_b": sb})


_CALIBRATED = frozenset({"sum", "mean", "max", "min", "prod", "norm"})
# How a message names the producer of the reduced axis (model/fusion_context.py).
_FORMS = {"stack": ", built by `jnp.stack` here", "concatenate": ", built by `jnp.concatenate` here",
          "broadcast": ", from a new axis", "elementwise": ", elementwise work on an input", "arg": ", an input"}


def _total(s: Shape | None) -> int | None:
    return s.total() if s is not None else None


def _einsum_contracted_sizes(spec: str, shapes: list[Shape | None]) -> dict[str, int | None]:
    if "->" in spec:
        inputs, output = spec.split("->", 1)
    else:
        inputs = spec
        letters = [c for c in inputs if c.isalpha()]
        output = "".join(sorted(c for c in set(letters) if letters.count(c) == 1))
    terms = inputs.split(",")
    if len(terms) != len(shapes):
        return {}
    contracted = {c for c in inputs if c.isalpha() and c not in output}
    sizes: dict[str, int | None] = {c: None for c in contracted}
    for term, shape in zip(terms, shapes):
        if shape is None:
            continue
        if "..." in term:
            before, after = term.split("...", 1)
            for i, c in enumerate(before):
                if c in contracted and sizes[c] is None:
                    sizes[c] = shape.size(i)
            for i, c in enumerate(after):
                if c in contracted and sizes[c] is None:
                    sizes[c] = shape.size(i - len(after))
        else:
            if shape.rank is not None and shape.rank != len(term):
                continue
            for i, c in enumerate(term):
                if c in contracted and sizes[c] is None:
                    sizes[c] = shape.size(i) if shape.rank is not None else shape.size(i - len(term))
    return sizes


RULE = SmallAxisReduction
