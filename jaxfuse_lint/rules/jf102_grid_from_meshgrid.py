"""JF102 grid-from-meshgrid."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator

import libcst as cst

from jaxfuse_lint.model import Function, SemanticModel, keyword
from jaxfuse_lint.model.fusion import reaching_binding, reaching_value
from jaxfuse_lint.model.source_text import code_of
from jaxfuse_lint.rules.base import Rule, Violation, message
from jaxfuse_lint.core.targets import CPU_MEASURED, GPU_MEASURED, TPU_UNKNOWN, Claim, Evidence

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
    Fourier k-space or coordinate grid.

    ## Why is this bad?
    XLA will not repeat the `remainder` of `fftfreq` (or the arithmetic of
    `linspace`) for every grid point, so it computes each 1-D vector in a kernel
    of its own, writes it to a temporary, and broadcasts it into the grid in a
    second kernel. Built from `jnp.indices` with index arithmetic, the grid has
    its own shape from the first operation on: one kernel, which also fuses
    into whatever consumes the grid. The fusion notebook's `get_kmesh_naive`
    (meshgrid of fftfreq/rfftfreq, 64³ input) is two kernels, `get_kmesh`
    (indices + `myfftfreq`) one. Measured on CPU with jax 0.10.2: 2 kernels and
    256 B of temporaries → 1 kernel and none for the k² grid, and a filter
    `irfftn(rfftn(rho) * exp(-k²))` drops from 4 to 3 kernels. A meshgrid of
    `rfftfreq` or `arange` vectors alone is not flagged: that arithmetic is
    cheap, XLA already fuses it (measured: 1 kernel).

    ## Known problems
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
    Safe, and offered when every vector is `jnp.fft.fftfreq(n[, d])` or
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
    1-ulp difference).
    """
    backends = (
        Claim(
            "A grid from `jnp.meshgrid` of 1-D vectors computes each vector in its own kernel and broadcasts it; "
            "built from `jnp.indices` it is one kernel that fuses into its consumers",
            gpu=Evidence(False, GPU_MEASURED + ": `get_kmesh_naive` of f32[64,64,64] is 1 kernel and no "
                                "temporary before and after the fix, and the k-mesh filter around it 5 kernels "
                                "either way (the fusion notebook measured a second kernel on its GPU)"),
            cpu=Evidence(True, CPU_MEASURED + ": `get_kmesh_naive` → `get_kmesh` 2 → 1 kernels, 256 B → 0 B"),
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
            yield Violation(
                call,
                message(
                    f"`jnp.meshgrid` of {what} vectors (`{code_of(model, call, 50)}`) in traced "
                    f"`{scope.display_name}`: each vector is computed into a temporary by its own kernel "
                    "and then broadcast; build the grid from `jnp.indices` with index arithmetic "
                    "(one kernel that fuses into its consumers)",
                ),
                data={"args": args, "sources": sources, "indexing": indexing_of(call), "scope": scope},
            )


RULE = GridFromMeshgrid
