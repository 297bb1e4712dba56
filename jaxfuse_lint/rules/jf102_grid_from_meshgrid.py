"""JF102 grid-from-meshgrid."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator

import libcst as cst

from jaxfuse_lint.core.calibration import decide, evidence_text, raw
from jaxfuse_lint.model import Function, SemanticModel, grid_context, keyword
from jaxfuse_lint.model.fusion import reaching_binding, reaching_value
from jaxfuse_lint.model.source_text import code_of
from jaxfuse_lint.model.evidence import evidence
from jaxfuse_lint.model.premises import LineOf, SizeClaim, calibrated
from jaxfuse_lint.model.premises import size as premise_size
from jaxfuse_lint.model.size_origin import SizeOrigin
from jaxfuse_lint.rules.base import Rule, Violation, message
from jaxfuse_lint.core.targets import TPU_UNKNOWN, Claim, Evidence

FFTFREQ = "jax.numpy.fft.fftfreq"
RFFTFREQ = "jax.numpy.fft.rfftfreq"
# 1-D coordinate builders whose arithmetic XLA will not repeat per grid point: a `remainder`
# (fftfreq) or a `linspace`-style computation is materialised as a small vector first.
_COSTLY = {FFTFREQ: "fftfreq", "jax.numpy.linspace": "linspace", "jax.numpy.logspace": "logspace",
           "jax.numpy.geomspace": "geomspace"}
_CHEAP = {RFFTFREQ: "rfftfreq", "jax.numpy.arange": "arange"}


@dataclass(eq=False)
class Source:
    """Where one meshgrid argument comes from."""

    kind: str  # fftfreq | rfftfreq | linspace | logspace | geomspace | arange
    call: cst.Call  # the builder call
    scope: object  # the scope the call is written in
    direct: bool  # the argument is the builder's value itself (not scaled)


def source_of(model: SemanticModel, expr: cst.BaseExpression, scope, depth: int = 0) -> Source | None:
    """The 1-D coordinate builder behind a meshgrid argument, through names and scaling."""
    if depth > 10:
        return None
    if isinstance(expr, cst.Call):
        qn = model.qn(expr.func, scope)
        kind = _COSTLY.get(qn) or _CHEAP.get(qn)
        if kind is not None:
            return Source(kind, expr, scope, True)
        if qn is None and isinstance(expr.func, cst.Attribute) and expr.func.attr.value == "astype":
            # `fftfreq(n).astype(int)`, `(fftfreq(n) * n).astype(jnp.int32)`: the same 1-D vector, cast
            inner = source_of(model, expr.func.value, scope, depth + 1)
            return Source(inner.kind, inner.call, inner.scope, False) if inner else None
        return None
    if isinstance(expr, cst.Name):
        found = reaching_value(model, expr)
        if found is None:
            # `kx, ky = fftfreq(n), rfftfreq(n)`: the element of a tuple assignment
            binding = reaching_binding(model, expr)
            if binding is None:
                return None
            owner, b = binding
            value = b.value
            if b.kind != "assign" or b.index is None or not isinstance(value, (cst.Tuple, cst.List)) or \
                    b.index >= len(value.elements) or any(isinstance(el, cst.StarredElement) for el in value.elements):
                return None
            target = b.node.targets[0].target if isinstance(b.node, cst.Assign) and len(b.node.targets) == 1 else None
            if not isinstance(target, (cst.Tuple, cst.List)) or len(target.elements) != len(value.elements):
                return None
            found = (value.elements[b.index].value, owner)
        return source_of(model, found[0], found[1], depth + 1)
    if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, (cst.Minus, cst.Plus)):
        inner = source_of(model, expr.expression, scope, depth + 1)
        return Source(inner.kind, inner.call, inner.scope, False) if inner else None
    if isinstance(expr, cst.BinaryOperation) and isinstance(
            expr.operator, (cst.Multiply, cst.Divide, cst.Add, cst.Subtract)):
        # Arithmetic on a builder's vector is part of the same 1-D computation.
        for side in (expr.left, expr.right):
            inner = source_of(model, side, scope, depth + 1)
            if inner is not None:
                return Source(inner.kind, inner.call, inner.scope, False)
    return None


def meshgrid_arguments(call: cst.Call, model: SemanticModel | None = None) -> list[cst.BaseExpression] | None:
    """The vectors passed to meshgrid, looking into `*[...]` and `*(f(n) for n in ...)`, and
    (given the model) into a name bound once to such a list (`freqs = [fftfreq(s) for s in
    shape]`, then `meshgrid(*freqs)`); None when they cannot be listed (the result of a call)."""
    out = []
    for a in call.args:
        if a.keyword is not None:
            continue
        if a.star == "*":
            v = a.value
            if isinstance(v, cst.Name) and model is not None:
                found = reaching_value(model, v)
                if found is not None and isinstance(found[0], (cst.List, cst.Tuple, cst.ListComp, cst.GeneratorExp)):
                    v = found[0]
            if isinstance(v, (cst.List, cst.Tuple)):
                out.extend(el.value for el in v.elements)
            elif isinstance(v, (cst.ListComp, cst.GeneratorExp)):
                out.append(v.elt)
            else:
                return None
        elif a.star:
            return None
        else:
            out.append(a.value)
    return out


def indexing_of(call: cst.Call) -> str | None:
    """'xy' (the default), 'ij', or None when it is not a literal."""
    e = keyword(call, "indexing")
    if e is None:
        return "xy"
    if isinstance(e, cst.SimpleString) and e.evaluated_value in ("xy", "ij"):
        return e.evaluated_value
    return None


class GridFromMeshgrid(Rule):
    code = "JF102"
    premises = ('runs-traced', 'size', 'harm')
    name = "grid-from-meshgrid"
    summary = "`jnp.meshgrid` of `fftfreq`/`linspace` vectors in traced code (build the grid from `jnp.indices`)"
    fixable = "sometimes"
    doc = """
    ## What it does
    Flags, in traced code, a dense `jnp.meshgrid` of 1-D coordinate vectors of
    which at least one is computed by `jnp.fft.fftfreq`, `jnp.linspace`,
    `jnp.logspace` or `jnp.geomspace` (directly, through names — a tuple
    assignment `kx, ky = fftfreq(n), rfftfreq(n)` included — scaled by a
    constant, as in `2 * jnp.pi * jnp.fft.fftfreq(n, d)`, or cast with
    `.astype(...)`), also when the vectors come as `*freqs` from a list
    (`freqs = [fftfreq(s) for s in shape]`) — the usual way of building a
    Fourier k-space or coordinate grid — where JF102's calibration table shows
    that the grid built from `jnp.indices` compiles better for the form found
    (the Calibration section below).

    The table's features, read from the code: the number of grid axes (2, 3);
    the number of grid points (classes of 4,096, 262,144 and 2,097,152 points,
    from the vectors' lengths: literals, module constants, `x.shape[i]` of
    arrays of declared shape); the vectors (`fftfreq` on every axis, `fftfreq`
    with `rfftfreq` last, `linspace` on every axis); whether they are scaled;
    and what reads the grid, followed through elementwise arithmetic and
    names: returned (`k² = kx² + ky²`), a reduction, or an FFT's output it
    multiplies (a filter in k-space). What the rule cannot read matches every
    calibrated value: the finding is reported when all of them show the harm,
    and is in the preview tier, without its fix, when only some do.

    ## Premises
    `runs-traced` (the route into the trace); `size(the points of the grid)`:
    the grid's points, proven from the vectors' lengths (each `fftfreq(n)` /
    `linspace(..., n)` cited by its line), or assumed where a length is not
    shown and the table's answer depends on it ("harm from 262,144 points":
    preview); `harm(meshgrid)`: every calibrated form the code may take shows
    the harm, citing the table.

    ## Why is this bad?
    Where XLA will not repeat the arithmetic of `fftfreq` (a `where` on the
    index) or `linspace` for every grid point, it computes each 1-D vector in
    a kernel of its own and broadcasts it into the grid in another; built
    from `jnp.indices` with index arithmetic, the grid has its own shape from
    the first operation and is one kernel. On XLA:GPU that happens only for
    large grids: for the 2,097,152-point class (128³) the H100's compiler (jax
    0.10.2, deviceless) makes the k² grid of `fftfreq` vectors 2 kernels and
    the `jnp.indices` form 1, and a k-space filter
    `ifftn(fftn(x) * exp(-k²))` 6 kernels against 5; up to 262,144 points
    (64³, 512²) both forms are the same kernels and temporaries (the fusion
    notebook's `get_kmesh_naive` of 64³: 1 kernel either way; a 400 × 400
    `linspace` grid: the same kernels and no temporaries either way). The
    A100's compiler splits the 1024 × 2048 grid as well (3 → 1 kernels). On
    XLA:CPU the vectors are a kernel of their own at almost every size: 2 → 1
    kernels for the k² grid, 6 → 5 (4 → 3 with `rfftfreq`) for the filter;
    on the smallest grids the `jnp.indices` form was sometimes slower in the
    timed runs (mixed).

    ## Known problems
    With a reduction reading the grid, the `jnp.indices` form changes how XLA
    splits the reduction, not the grid: better in 22 of 36 forms on the H100,
    worse in 3 (a 64³ grid keeps 1 MiB more temporaries), and on XLA:CPU worse
    in 32 of 36 (the full grid is materialised: 2 MiB of temporaries for a
    512² grid where the vectors needed 2 KiB); the rule follows the table.
    The CPU figures include wall-clock taken on a loaded shared machine. A
    grid whose reads end elsewhere (a function call, several kinds of
    consumer) has no consumer the table knows: every one is asked.
    `sparse=True` grids are not flagged (they are broadcast, never
    materialised). Vectors the linter cannot trace back to their builder are
    not considered.

    ## Example
    ```python
    def k2(rho, d=1.0):
        kx = jnp.fft.fftfreq(rho.shape[0], d=d)
        kz = jnp.fft.rfftfreq(rho.shape[1], d=d)
        kx, kz = jnp.meshgrid(kx, kz, indexing="ij")
        return kx**2 + kz**2
    ```

    ## Use instead
    ```python
    def k2(rho, d=1.0):
        kx, kz = jnp.indices((rho.shape[0], rho.shape[1] // 2 + 1))
        kx, kz = (jnp.where(kx < (rho.shape[0] + 1) // 2, kx, kx - rho.shape[0]) / (d * rho.shape[0]),
                  kz / (d * rho.shape[1]))
        return kx**2 + kz**2
    ```

    ## Fix safety
    Offered only where the table shows the harm for every form the grid may
    take. Safe, and offered when every vector is `jnp.fft.fftfreq(n[, d])` or
    `jnp.fft.rfftfreq(n[, d])` (no `dtype=`/`device=`) — possibly through
    names, negated, or multiplied or divided by Python scalars (`2 * jnp.pi *
    fftfreq(n, d=dx)`) — the grid is unpacked into distinct names (`kx, ky, kz
    = jnp.meshgrid(...)`), `indexing` is a literal (`"xy"`, the default, swaps
    the first two axes, and the fix keeps that), and `n`, `d` and the scalars
    are simple expressions that mean the same at the meshgrid. The grid becomes
    `jnp.indices` of the meshgrid's shape followed by the exact arithmetic of
    `fftfreq` (`where(i < (n+1)//2, i, i-n) / (d*n)`) and `rfftfreq`
    (`i / (d*n)`), with the scalar factors applied in their original order:
    the same values, bit for bit, for even and odd `n` (tested). Dtypes:
    `fftfreq` returns a strongly typed default float; the index arithmetic does
    too when `d` is absent or a Python int, and with a Python float `d` the
    quotient (weakly typed) is cast back with `.astype(float)`, the default
    float of either x64 setting, a no-op on the values. When `d` may be an
    array (a parameter, a computed value) its dtype is unknown and the fix is
    unsafe. The 1-D
    assignments that only fed the meshgrid are removed. An added offset
    (`fftfreq(n) + 0.5`) gets no fix: XLA may contract it with a
    multiplication into an FMA in one program and not the other (measured: a
    1-ulp difference). `linspace` grids get no fix (the table's "after" for
    them is the advised `jnp.indices` form, `start + i * step`).
    """
    backends = (
        Claim(
            "A grid from `jnp.meshgrid` of 1-D vectors computes each vector in its own kernel and broadcasts it; "
            "built from `jnp.indices` it is one kernel that fuses into its consumers",
            gpu=Evidence(True, "calibrated (jaxfuse_lint/core/calibration_tables/JF102.h100.json, .a100.json: XLA:GPU "
                               "of jax 0.10.2, deviceless): harm in 28 and 40 of 108 forms — grids of the "
                               "2,097,152-point class (k² 2 → 1 kernels, the k-space filter 6 → 5) and some forms "
                               "read by a reduction; up to 262,144 points the same kernels either way"),
            cpu=Evidence(True, "calibrated (JF102.cpu.json: XLA:CPU of jax 0.10.2, timed): harm in 62 of 108 forms; "
                               "worse in 32 (a reduction reading the grid)"),
            tpu=TPU_UNKNOWN,
        ),
    )
    valid = (
        "import jax, jax.numpy as jnp\n@jax.jit\ndef f(x):\n"
        "    a, b = jnp.meshgrid(jnp.arange(x.shape[0]), jnp.arange(x.shape[1]), indexing='ij')\n    return a + b\n",
        "import jax.numpy as jnp\ndef host(n):\n"
        "    kx, ky = jnp.meshgrid(jnp.fft.fftfreq(n), jnp.fft.fftfreq(n))\n    return kx + ky\n",
        "import jax, jax.numpy as jnp\n@jax.jit\ndef f(x):\n"
        "    kx, ky = jnp.meshgrid(jnp.fft.fftfreq(8), jnp.fft.fftfreq(8), sparse=True)\n    return x + kx + ky\n",
    )
    invalid = (
        "import jax, jax.numpy as jnp\n@jax.jit\ndef f(x):\n    k = jnp.fft.fftfreq(x.shape[0])\n"
        "    kx, ky = jnp.meshgrid(k, k, indexing='ij')\n    return x * (kx**2 + ky**2)\n",
        "import jax, jax.numpy as jnp\n@jax.jit\ndef f(x):\n"
        "    gx, gy = jnp.meshgrid(jnp.linspace(0, 1, 64), jnp.linspace(0, 1, 32))\n    return x + gx * gy\n",
        "import jax, jax.numpy as jnp\n@jax.jit\ndef f(x):\n"
        "    grids = jnp.meshgrid(*[2 * jnp.pi * jnp.fft.fftfreq(n) for n in x.shape], indexing='ij')\n"
        "    return x * sum(g**2 for g in grids)\n",
    )

    def check(self, model: SemanticModel, settings) -> Iterator[Violation]:
        for site in model.index.calls:
            scope = site.scope
            if not isinstance(scope, Function) or not model.is_traced(scope):
                continue
            call = site.call
            if model.qn(call.func, scope) != "jax.numpy.meshgrid":
                continue
            sparse = keyword(call, "sparse")
            if sparse is not None and not (isinstance(sparse, cst.Name) and sparse.value == "False"):
                continue
            args = meshgrid_arguments(call, model)
            if not args:
                continue
            sources = [source_of(model, a, scope) for a in args]
            costly = [s for s in sources
                      if s is not None and s.kind in ("fftfreq", "linspace", "logspace", "geomspace")]
            if not costly:
                continue
            kinds = sorted({s.kind for s in costly})
            what = " and ".join(f"`{k}`" for k in kinds)
            head = f"`jnp.meshgrid` of {what} vectors (`{code_of(model, call, 50)}`) in traced `{scope.display_name}`"
            data = {"args": args, "sources": sources, "indexing": indexing_of(call), "scope": scope}
            if raw(settings):  # the calibration harness: the pattern, whatever the table says
                yield Violation(call, message(f"{head}: build the grid from `jnp.indices` with index arithmetic"),
                                data=data)
                continue
            judged = self._judge(model, call, scope, sources, head, data, settings)
            if judged is None:
                continue
            runs = evidence(model).premise(scope, call, raises=False)
            if runs is not None:
                yield judged.with_premises(runs)

    # -- what the compiler does with this grid (the calibration table) ---------------------------
    def _judge(self, model, call, scope, sources, head, data, settings) -> Violation | None:
        lengths = [grid_context.vector_length(model, s.kind, s.call, s.scope) if s is not None else None
                   for s in sources]
        points = None
        if all(n is not None for n in lengths):
            points = 1
            for n in lengths:
                points *= n
        kinds = {s.kind for s in sources} if all(s is not None for s in sources) else set()
        vectors = {frozenset({"fftfreq"}): "fftfreq", frozenset({"fftfreq", "rfftfreq"}): "fftfreq_rfftfreq",
                   frozenset({"linspace"}): "linspace"}.get(frozenset(kinds), "other")
        direct = {s.direct for s in sources if s is not None}
        scale = None if len(direct) != 1 or None in sources else "plain" if direct == {True} else "scaled"
        decision = decide(self.code, settings, dims=len(sources), points=points, vectors=vectors, scale=scale,
                          consumer=grid_context.consumer(model, call, scope))
        if decision.outcome == "none":
            return None  # the compiler builds this grid as well as the `jnp.indices` form: nothing to win
        known = None
        if points is not None:
            parts: list = []
            for src in sources:
                parts += [", " if parts else "", f"`{code_of(model, src.call, 40)}` on line ", LineOf(src.call)]
            known = premise_size(model, scope, f"the points of `{code_of(model, call, 40)}`", points, " points",
                                 origin=SizeOrigin("vector-lengths", ("the vectors' lengths: ", *parts)))
        premises = calibrated(decision, f"`{code_of(model, call, 40)}`",
                              [SizeClaim("points", f"the points of `{code_of(model, call, 40)}`", known)])
        if not decision.fires:
            return Violation(call, message(f"{head}: built from `jnp.indices` with index arithmetic, the grid "
                                           "may fuse into its consumers"),
                             data=data, premises=premises)
        evidence = evidence_text(decision, "the calibrated meshgrid", "the `jnp.indices` form")
        return Violation(call, message(f"{head}: {evidence}; build the grid from `jnp.indices` with index "
                                       "arithmetic"), data=data, premises=premises)


RULE = GridFromMeshgrid
