"""JF104 fft-component-axis-last."""
from __future__ import annotations

from typing import Iterator

import libcst as cst

from jaxfuse_lint.core.calibration import decide, evidence_text, raw
from jaxfuse_lint.model.names import as_written
from jaxfuse_lint.model import Function, SemanticModel, Shape, fft_context, keyword, positional
from jaxfuse_lint.model.fusion import FFT_MULTI_AXIS, FFT_ONE_AXIS, reaching_value
from jaxfuse_lint.model.source_text import code_of
from jaxfuse_lint.model.evidence import evidence
from jaxfuse_lint.model.premises import SizeClaim, calibrated
from jaxfuse_lint.model.premises import size as premise_size
from jaxfuse_lint.model.size_origin import axes_origin, axis_origin
from jaxfuse_lint.rules.base import Rule, Violation, message
from jaxfuse_lint.core.targets import TPU_UNKNOWN, Claim, Evidence


def _int(e: cst.BaseExpression | None) -> int | None:
    if isinstance(e, cst.Integer):
        return int(e.value, 0)
    if isinstance(e, cst.UnaryOperation) and isinstance(e.operator, cst.Minus) \
            and isinstance(e.expression, cst.Integer):
        return -int(e.expression.value, 0)
    return None


def fft_axes(call: cst.Call, qn: str) -> tuple[int, ...] | None:
    """The literal axes an FFT call transforms; None when they are not literal (or the default
    of the n-dimensional transforms: all axes)."""
    if qn in FFT_ONE_AXIS:
        e = keyword(call, "axis") or positional(call, 2)
        if e is None:
            return (-1,)
        v = _int(e)
        return (v,) if v is not None else None
    e = keyword(call, "axes") or positional(call, 2)
    if e is None:
        return (-2, -1) if qn.endswith("2") else None
    if not isinstance(e, (cst.Tuple, cst.List)) or not e.elements:
        return None
    out = []
    for el in e.elements:
        if isinstance(el, cst.StarredElement):
            return None
        v = _int(el.value)
        if v is None:
            return None
        out.append(v)
    return tuple(out)


def transforms_last_axis(axes: tuple[int, ...], rank: int | None) -> bool | None:
    """Whether the axes include the trailing one; None when that depends on an unknown rank."""
    if any(a == -1 for a in axes):
        return True
    if all(a < 0 for a in axes):
        return False
    if rank is None:
        # Explicit leading axes 0..k-1 of an array whose trailing size is known: read as "the
        # leading axes" (had the rank been k, `axes` would name every axis, small one included).
        if all(a >= 0 for a in axes) and sorted(axes) == list(range(len(axes))):
            return False
        return None
    return any(a % rank == rank - 1 for a in axes if -rank <= a < rank)


class FftComponentAxisLast(Rule):
    code = "JF104"
    premises = ('runs-traced', 'size', 'harm')
    name = "fft-component-axis-last"
    summary = "FFT over the leading axes of an array whose trailing axis is a small component axis"
    fixable = "never"
    doc = """
    ## What it does
    Flags, in traced code, a `jnp.fft` transform (`fftn`, `rfftn`, `irfftn`,
    `fft2`, ..., or `fft`/`rfft` with `axis=`) over axes that leave out the
    trailing axis, when that trailing axis has a small known size (2 to
    `small-axis-max`, default 4) — a vector field stored as `(N, N, N, 3)` and
    transformed over `axes=(0, 1, 2)` — where JF104's calibration table shows
    that the components-first layout compiles better for the form found (the
    Calibration section below). Sizes come from the shape model
    (`jnp.stack(..., axis=-1)`, literal shapes, asserts, jaxtyping) and flow
    through earlier FFTs (an `fftn` keeps the shape; `rfftn` changes only its
    last transformed axis), arithmetic on their outputs, new axes, gathers,
    transposes, `concatenate` and the module's own functions.

    The table's features, read from the code: the transform (a complex
    `fftn`/`ifftn`/`fft2`; an `rfftn` alone; the round trip of an `rfftn`
    whose result reaches an `irfftn` through names and elementwise
    arithmetic, for both calls); the number of transformed axes (2, 3) and the
    points they span (classes of 32,768, 262,144 and 1,048,576); the number of
    components (2 to 4); where the array comes from (an argument, or a
    `jnp.stack` of components built here); and what reads the result (it is
    returned; elementwise work, then returned; a reduction over the
    components, `jnp.sum(..., axis=-1)`). Sizes the rule cannot read match
    every calibrated class: the finding is reported when all of them show the
    harm, and is in the preview tier when only some do. A form the table does
    not have (`fft` over one axis, an `irfftn` of another array, an array made
    by other work or read by other code) is in the preview tier.

    ## Premises
    `runs-traced`; `size(the trailing axis)`: the component axis, proven by
    the construct that states it (a stack of 3 arrays, an assert, a jaxtyping
    annotation, line cited); `size(the transformed points)` where the table's
    answer depends on them: proven where declared, else assumed with the
    table's threshold (preview); `harm(fft)` from the table.

    ## Why is this bad?
    XLA's FFT works on the trailing dimensions. To transform leading axes, JAX
    moves the untransformed component axis to the front, runs the FFT, and
    moves it back: transposes, each a copy of the array unless XLA fuses it
    into the code before or after. On XLA:GPU for the H100 (jax 0.10.2,
    deviceless), an `rfftn` of a `(64, 64, 64, 3)` argument is 3 kernels and
    3.1 MiB of temporaries, stored components-first 1 kernel and none (6.1
    against 3.1 MiB when elementwise work reads it); the round trip
    `irfftn(rfftn(u))` of it, returned, 7 kernels against 5. The table shows
    such harm — less memory, or two launches or more saved — in 81 of 324
    forms: real transforms of an argument, the round trip of an argument
    returned, and an `rfftn` of stacked components over 3 axes, returned. The
    A100's compiler gives the same verdicts in all 324 forms.

    ## Known problems
    In 99 forms the components-first layout saves one kernel launch and no
    memory: a complex `fftn` returned (3 kernels against 2), a round trip read
    by elementwise work (7 against 6), the round trip of stacked components
    returned (the fusion notebook's `f_fft3d`: 7 against 6). Untimed on a
    GPU, one launch is not evidence enough: those findings are in the preview
    tier. In 144 forms the transposes fuse into the code around the FFT (a
    complex `fftn` read by elementwise work or by a sum over the components,
    real transforms of stacked components read that way): the same kernels
    and temporaries in both layouts, and the rule is silent. A "returned"
    result counts the components-first array as the caller's new layout:
    where the caller needs the component axis last, the transpose comes back
    (`f_fft3d` with its result moved back to `(N, N, N, 2)`: 7 kernels either
    way). On XLA:CPU, timed, the components-first layout is faster in 163 of
    324 forms and slower in 9; the timings were taken on a loaded shared
    machine, so read the CPU decisions as provisional. When the rank of the
    array is unknown, explicit axes `0..k-1` are read as leading axes, that
    is, as leaving the trailing component axis out. Only the trailing axis is
    considered (a small axis in the middle also forces a transpose, but is
    rarer). The layout change has to be made where the array is built, often
    in several places, so there is no automatic fix.

    ## Example
    ```python
    @jax.jit
    def f(x):
        v = jnp.stack([x, 2 * x], axis=-1)          # (N, N, N, 2)
        return jnp.fft.irfftn(jnp.fft.rfftn(v, axes=(0, 1, 2)), axes=(0, 1, 2))
    ```

    ## Use instead
    ```python
    @jax.jit
    def f(x):
        v = jnp.stack([x, 2 * x], axis=0)           # (2, N, N, N)
        return jnp.fft.irfftn(jnp.fft.rfftn(v, axes=(1, 2, 3)), axes=(1, 2, 3))
    ```

    ## Fix safety
    No automatic fix: the layout of the array is decided where it is created
    and wherever its components are read. The table's "after" is the advised
    layout written by hand for each variant (components first, the trailing
    axes transformed, the consumer reading axis 0).
    """
    backends = (
        Claim(
            "An FFT over the leading axes of an array with a trailing component axis is wrapped in transposes; "
            "stored component-first the FFT runs on the buffer",
            gpu=Evidence(True, "calibrated (jaxfuse_lint/core/calibration_tables/JF104.h100.json, .a100.json: XLA:GPU "
                               "of jax 0.10.2, deviceless): harm in 81 of 324 forms on both (real transforms of an "
                               "argument, round trips returned); one launch saved in 99; none where the transposes "
                               "fuse into a stack or an elementwise consumer"),
            cpu=Evidence(True, "calibrated (JF104.cpu.json: XLA:CPU of jax 0.10.2, timed): faster in 163 of 324 forms, "
                               "slower in 9"),
            tpu=TPU_UNKNOWN,
        ),
    )
    valid = (
        "import jax, jax.numpy as jnp\n@jax.jit\ndef f(x):\n    v = jnp.stack([x, x], axis=0)\n"
        "    return jnp.fft.rfftn(v, axes=(1, 2, 3))\n",
        "import jax, jax.numpy as jnp\n@jax.jit\ndef f(x):\n    v = jnp.stack([x, x], axis=-1)\n"
        "    return jnp.fft.fftn(v)\n",
        "import jax, jax.numpy as jnp\n@jax.jit\ndef f(x):\n    return jnp.fft.fftn(x, axes=(0, 1))\n",
    )
    invalid = (
        "import jax, jax.numpy as jnp\n@jax.jit\ndef f(x):\n    v = jnp.stack([x, x * 2.0], axis=-1)\n"
        "    return jnp.fft.rfftn(v, axes=(0, 1, 2))\n",
        "import jax, jax.numpy as jnp\n@jax.jit\ndef f(x):\n    assert x.shape[-1] == 3\n"
        "    return jnp.fft.fft(x, axis=0)\n",
        "import jax, jax.numpy as jnp\n@jax.jit\ndef f(u):\n    v = jnp.zeros((64, 64, 3), jnp.complex64) + u\n"
        "    return jnp.fft.fft2(v, axes=(0, 1))\n",
        "import jax, jax.numpy as jnp\n@jax.jit\ndef f(x):\n    vk = jnp.fft.fftn(jnp.stack([x, x], axis=0), axes=(1, 2))\n"
        "    w = jnp.moveaxis(vk, 0, -1) * 2.0\n    return jnp.fft.ifftn(w, axes=(0, 1))\n",
    )

    def check(self, model: SemanticModel, settings) -> Iterator[Violation]:
        limit = settings.small_axis_max
        for site in model.index.calls:
            scope = site.scope
            if not isinstance(scope, Function) or not model.is_traced(scope):
                continue
            call = site.call
            qn = model.qn(call.func, scope)
            if qn not in FFT_MULTI_AXIS and qn not in FFT_ONE_AXIS:
                continue
            axes = fft_axes(call, qn)
            operand = positional(call, 0) or keyword(call, "a") or keyword(call, "x")
            if axes is None or operand is None:
                continue
            shape = operand_shape(model, operand, scope)
            if shape is None:
                continue
            last = transforms_last_axis(axes, shape.rank)
            if last is not False:
                continue
            size = shape.size(-1)
            if size is None or not 2 <= size <= limit:
                continue
            short = as_written(call, qn)
            axes_text = "(" + ", ".join(str(a) for a in axes) + ("," if len(axes) == 1 else "") + ")"
            rank = shape.rank
            if rank is not None:
                good = "(" + ", ".join(str(a) for a in range(rank - len(axes), rank)) + ")"
            else:
                good = "(" + ", ".join(str(-k) for k in range(len(axes), 0, -1)) + ")"
            head = (f"`{short}` transforms axes {axes_text} of `{code_of(model, operand, 40)}`, whose trailing "
                    f"axis is a component axis of size {size}")
            advice = f"store the components first, shape ({size}, ...), and transform axes {good}"
            data = {"axes": axes, "size": size, "operand": operand}
            if raw(settings):  # the calibration harness: the pattern, whatever the table says
                yield Violation(call, message(f"{head}: XLA transforms trailing axes only; {advice}"), data=data)
                continue
            judged = self._judge(model, call, qn, scope, axes, shape, size, head, advice, data, settings)
            if judged is None:
                continue
            runs = evidence(model).premise(scope, call, raises=False)
            if runs is not None:
                yield judged.with_premises(runs)

    # -- what the compiler does with this layout (the calibration table) -------------------------
    def _judge(self, model, call, qn, scope, axes, shape, size, head, advice, data, settings) -> Violation | None:
        kind = fft_context.transform(model, call, qn, scope)
        points_shape = shape
        if kind == "rfftn_irfftn" and qn not in _FORWARD:
            # The inverse of a round trip: the points of the grid the forward transform read.
            forward = fft_context.forward_of(model, call, scope)
            inner = fft_context.operand(forward) if forward is not None else None
            points_shape = operand_shape(model, inner, scope) if inner is not None else None
        decision = decide(self.code, settings, transform=kind, dims=len(axes), points=_points(points_shape, axes),
                          components=size, producer=fft_context.producer(model, call, qn, scope),
                          consumer=fft_context.consumer(model, call, qn, scope))
        if decision.outcome == "none":
            return None  # the compiler does as well with this layout: nothing to win
        operand = data["operand"]
        points = _points(points_shape, axes)
        points_origin = axes_origin(model, operand, scope, list(axes)) if points is not None and \
            points_shape is shape else None
        points_known = premise_size(model, scope, f"the transformed points of `{code_of(model, operand, 40)}`",
                                    points, " points", origin=points_origin) if points_origin is not None else None
        premises = (premise_size(model, scope, f"the trailing axis of `{code_of(model, operand, 40)}`", size,
                                 origin=axis_origin(model, operand, scope, -1)),
                    *calibrated(decision, f"`{code_of(model, call, 40)}`",
                                [SizeClaim("points", f"the transformed points of `{code_of(model, operand, 40)}`",
                                           points_known, required=False)]))
        if not decision.fires:
            return Violation(call, message(f"{head}: XLA transforms trailing axes only, and it may transpose the "
                                           f"array before and after the FFT; {advice}"),
                             data=data, premises=premises)
        evidence = evidence_text(decision, "the calibrated component-last layout", "the components-first layout")
        return Violation(call, message(f"{head}: {evidence}; {advice}"), data=data, premises=premises)


_FORWARD = frozenset({"jax.numpy.fft.rfftn", "jax.numpy.fft.rfft2"})


def _points(shape: Shape | None, axes: tuple[int, ...]) -> int | None:
    """The number of points the transformed axes span, when their sizes are known."""
    if shape is None:
        return None
    total = 1
    for a in axes:
        if shape.rank is not None and not -shape.rank <= a < shape.rank:
            return None
        n = shape.size(a)
        if n is None:
            return None
        total *= n
    return total


def operand_shape(model: SemanticModel, operand: cst.BaseExpression, scope, depth: int = 0) -> Shape | None:
    """The operand's shape; through names bound to FFTs that leave the trailing axis alone
    (the FFT keeps the rank and the sizes of untransformed axes)."""
    shape = model.shape(operand, scope)
    if shape is not None and shape.size(-1) is not None:
        return shape
    if depth > 6:
        return shape
    value, value_scope = operand, scope
    if isinstance(operand, cst.Name):
        found = reaching_value(model, operand)
        if found is None:
            return shape
        value, value_scope = found
    if isinstance(value, cst.Call):
        qn = model.qn(value.func, value_scope)
        if qn in FFT_MULTI_AXIS or qn in FFT_ONE_AXIS:
            inner_operand = positional(value, 0) or keyword(value, "a") or keyword(value, "x")
            axes = fft_axes(value, qn)
            if inner_operand is None or axes is None:
                return shape
            inner = operand_shape(model, inner_operand, value_scope, depth + 1)
            if inner is None or transforms_last_axis(axes, inner.rank) is not False:
                return shape
            size = inner.size(-1)
            if size is None:
                return shape
            return Shape.make(inner.rank, None, {-1: size})
        if value is not operand:
            return operand_shape(model, value, value_scope, depth + 1)
    elif value is not operand:
        s = model.shape(value, value_scope)
        return s if s is not None else shape
    return shape


RULE = FftComponentAxisLast
