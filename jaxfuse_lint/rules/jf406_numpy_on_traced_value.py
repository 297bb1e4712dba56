"""JF406 numpy-on-traced-value."""
from __future__ import annotations

from typing import Iterator

import libcst as cst

from jaxfuse_lint.model import Kind, SemanticModel
from jaxfuse_lint.model.evidence import evidence
from jaxfuse_lint.model.scopes import Function
from jaxfuse_lint.model.source_text import code_of
from jaxfuse_lint.model.staged_values import staged_values
from jaxfuse_lint.model.staging import own_nodes, staging
from jaxfuse_lint.model.traced_premise import traced_premise
from jaxfuse_lint.rules.base import LineOf, Rule, Violation, message, reason_parts, staged_reason
from jaxfuse_lint.core.targets import Claim, tracing

# NumPy functions that convert their array arguments with `np.asarray` (every ufunc, the
# constructors, joins, linear algebra, FFTs, scalar types...): a tracer argument raises
# `TracerArrayConversionError` while tracing. Each was run under `jax.jit` with jax 0.10.2 and
# NumPy 2 (tests/test_trace_hazards.py re-runs a sample). NumPy hands some functions to the
# argument's own method instead (`np.sum(x)` calls `x.sum()`, also `mean`, `max`, `min`, `prod`,
# `std`, `var`, `any`, `all`, `cumsum`, `cumprod`, `argmax`, `argmin`, `reshape`, `transpose`,
# `swapaxes`, `moveaxis`, `squeeze`, `repeat`, `round`, `real`, `imag`, `flip`, `searchsorted`,
# `take_along_axis`; `np.shape`/`ndim`/`size` read attributes): those work on tracers and are
# not listed.
CONVERTING = frozenset("numpy." + n for n in (
    # ufuncs
    "abs absolute acos acosh add arccos arccosh arcsin arcsinh arctan arctan2 arctanh asin asinh atan atan2 "
    "atanh bitwise_and bitwise_count bitwise_invert bitwise_left_shift bitwise_not bitwise_or "
    "bitwise_right_shift bitwise_xor cbrt ceil conj conjugate copysign cos cosh deg2rad degrees divide divmod "
    "equal exp exp2 expm1 fabs float_power floor floor_divide fmax fmin fmod frexp gcd greater greater_equal "
    "heaviside hypot invert isfinite isinf isnan lcm ldexp left_shift less less_equal log log10 log1p log2 "
    "logaddexp logaddexp2 logical_and logical_not logical_or logical_xor matmul matvec maximum minimum mod modf "
    "multiply negative nextafter not_equal positive pow power rad2deg radians reciprocal remainder right_shift "
    "rint sign signbit sin sinh spacing sqrt square subtract tan tanh true_divide trunc vecdot vecmat "
    # constructors and conversions
    "array asarray asanyarray ascontiguousarray asfortranarray copy zeros_like ones_like empty_like "
    "float16 float32 float64 int8 int16 int32 int64 uint8 complex64 complex128 bool_ "
    # layout and joins
    "ravel concatenate stack vstack hstack dstack column_stack atleast_1d atleast_2d atleast_3d expand_dims "
    "fliplr flipud roll rot90 tile broadcast_to pad append insert delete meshgrid diag diagonal tril triu trace "
    # computations
    "where clip dot vdot einsum outer inner kron tensordot cross diff ediff1d gradient sort unique nonzero "
    "argwhere flatnonzero count_nonzero interp histogram percentile quantile median average nancumsum nansum "
    "nanmean nanmax nanmin nanstd nanvar ptp allclose isclose convolve correlate polyval polyfit nan_to_num "
    "angle unwrap sinc i0 "
    "linalg.norm linalg.inv linalg.solve linalg.det linalg.eig linalg.eigh linalg.svd linalg.qr "
    "linalg.cholesky linalg.pinv linalg.lstsq linalg.matrix_power "
    "fft.fft fft.ifft fft.rfft fft.irfft fft.fft2 fft.ifft2 fft.fftn fft.ifftn fft.rfftn fft.irfftn "
    "fft.fftshift fft.ifftshift"
).split())
# No `jax.numpy` namesake: no fix.
NO_JNP = frozenset({"numpy.asanyarray", "numpy.ascontiguousarray", "numpy.asfortranarray"})
# The `jax.numpy` version needs a static `size=` under `jit` (the result's shape depends on the
# values): no fix.
DATA_DEPENDENT_SHAPE = frozenset({"numpy.unique", "numpy.nonzero", "numpy.argwhere", "numpy.flatnonzero"})
# Keyword arguments that are options, never the converted values.
_OPTIONS = frozenset({"dtype", "axis", "axes", "order", "out", "casting", "ndmin", "copy", "like", "keepdims",
                      "kind", "norm", "n", "s", "k", "bins", "range", "density", "weights", "ddof", "side"})


class NumpyOnTracedValue(Rule):
    code = "JF406"
    premises = ("runs-traced", "traced")
    name = "numpy-on-traced-value"
    summary = "a NumPy function applied to a traced value (`TracerArrayConversionError` while tracing)"
    fixable = "sometimes"
    doc = """
    ## What it does
    Flags, in a staged function (`jax.jit`, `pmap`, `vmap`, `checkpoint`, a
    lax loop body or branch, or a function they call, through methods and
    objects too), a call of a NumPy function that converts its arguments to a
    NumPy array — every ufunc (`np.abs`, `np.exp`, `np.maximum`), the
    constructors and conversions (`np.array`, `np.asarray`, `np.float32`),
    joins, `np.where`, `np.clip`, `np.dot`/`np.einsum`, `np.linalg.*`,
    `np.fft.*` — when one of the converted arguments is a tracer: derived
    from a non-static argument through array operations. It flags too a NumPy
    array indexed by a tracer (`TABLE[i]` with `TABLE = np.linspace(...)` at
    module level, `np.zeros((3, 3))[i, :]`): NumPy converts the index.

    Never flagged where the value is static: a shape (`np.prod(x.shape)`), a
    static argument, a Python int or a constant (the static-use and value
    analyses decide); nor functions NumPy hands to the argument's own method
    (`np.sum(x)` runs `x.sum()`, also `mean`, `max`, `min`, `prod`, `std`,
    `var`, `any`, `all`, `cumsum`, `argmax`, `argmin`, `reshape`,
    `transpose`, `squeeze`, `round`...), which work on tracers; nor code that
    runs on the host (a host callback's body, `ensure_compile_time_eval`).

    Under an eager differentiating transform (`jax.grad(f)(x)`, `@jax.grad`,
    not jitted) the differentiated argument, and what differentiable
    operations compute from it, is a JVP tracer even for concrete inputs:
    NumPy's conversion of it raises too (jax#16404), and is flagged.

    ## Premises
    `runs-traced(f)`, proven by the route that traces `f`, and
    `traced(value)` for the converted argument (or the index), decided as
    for JF402: proven where the code shows the tracer (an argument a route
    traces, a jax operation staged out under the trace, the argument an eager
    `grad` differentiates), assumed where only a framework's convention makes
    it one (preview), disproved where the value is hashed by a
    `functools.cache`d function.

    ## Why is this bad?
    A tracer has no value while the function is traced; NumPy asks for one
    (`__array__`), and JAX raises `TracerArrayConversionError` — the function
    cannot be compiled at all. The `jax.numpy` function of the same name
    computes the same thing on the traced value, inside the program.

    ## Known problems
    A value the model cannot classify (an attribute of an argument, which may
    be a static pytree field) is not considered traced. NumPy functions that
    hand the argument to its method (`np.all(x < 0)`) return a tracer rather
    than raise: an `if` on that result is JF402's.

    ## Example
    ```python
    @jax.jit
    def energy(x):
        return np.sum(np.abs(x) ** 2)
    ```

    ## Use instead
    ```python
    @jax.jit
    def energy(x):
        return np.sum(jnp.abs(x) ** 2)
    ```

    ## Fix safety
    The NumPy function becomes its `jax.numpy` namesake (the module's alias
    for `jax.numpy` is reused, or `import jax.numpy as jnp` is added). Safe
    when the function runs only under tracing (it is jitted itself, or only
    traced code calls it, or `@jax.grad` decorates it and the argument
    carries the differentiated one's tangent): the original raised for every
    input, so nothing that worked changes. Unsafe when host code also calls
    the function with NumPy arrays: there it now returns a jax array,
    computed in the default dtype (float32 without x64) where NumPy used
    float64; also unsafe with a 64-bit `dtype=`, which `jax.numpy`
    canonicalises without x64. No fix where
    the result is needed as a Python value (an `if`, `int()`, a shape: the
    `jnp` result is a tracer there too — compute it from static values or
    move it out of the traced function), for a NumPy array indexed by a
    tracer (the message suggests `jnp.asarray(...)`), for `np.unique`/`np.nonzero`/
    `np.argwhere`/`np.flatnonzero` (under `jit` their `jnp` versions need a
    static `size=`), and for `np.asanyarray`/`np.ascontiguousarray`/
    `np.asfortranarray` (no `jnp` namesake).
    """
    backends = (
        Claim(
            "A NumPy function that converts a tracer to an array raises `TracerArrayConversionError` while tracing",
            gpu=tracing("it happens while JAX traces the function, before any backend compiler runs"),
            cpu=tracing("it happens while JAX traces the function, before any backend compiler runs"),
            tpu=tracing("it happens while JAX traces the function, before any backend compiler runs"),
        ),
    )
    valid = (
        "import jax, numpy as np\n@jax.jit\ndef f(x):\n    return x.reshape(np.prod(x.shape))\n",
        "import jax, numpy as np\n@jax.jit\ndef f(x):\n    return np.sum(x) * np.pi\n",
        "import numpy as np\ndef host(x):\n    return np.abs(x)\n",
        "import jax, numpy as np\nfrom functools import partial\n@partial(jax.jit, static_argnums=1)\n"
        "def f(x, n):\n    return x * np.arange(n)\n",
    )
    invalid = (
        "import jax, numpy as np\n@jax.jit\ndef f(x):\n    return np.abs(x)\n",
        "import jax, numpy as np\n@jax.jit\ndef f(x, y):\n    return np.asarray([x, y])\n",
        "import jax, numpy as np\ndef body(i, c):\n    return np.maximum(c, 0.0)\n"
        "def run(x):\n    return jax.lax.fori_loop(0, 3, body, x)\n",
    )

    def check(self, model: SemanticModel, settings) -> Iterator[Violation]:
        st = staging(model)
        values = staged_values(model)
        host = model.host_code
        proof = evidence(model)
        for site in model.index.calls:
            scope = site.scope
            if not isinstance(scope, Function) or not model.is_traced(scope):
                continue
            qn = model.qn(site.call.func, scope)
            if qn not in CONVERTING:
                continue
            if not st.is_staged(scope, batching=True):
                yield from self._differentiated(model, site.call, scope, qn)
                continue
            if host.runs_on_host(scope) or host.at_compile_time(site.call, scope):
                continue
            traced = [a.value for a in site.call.args
                      if not a.star and (a.keyword is None or a.keyword.value not in _OPTIONS)
                      and values.kind(a.value, scope) is Kind.TRACED]
            if not traced:
                continue
            # The code runs under a trace on a route that runs (model/evidence.py, as for JF402): not host
            # code behind a tracer guard, not a branch no traced route takes (`if not skip_checks:` where
            # every traced caller passes True), not a demonstration of the error.
            runs = proof.premise(scope, site.call, raises=True)
            value = traced_premise(model).premise(traced[0], scope)
            if runs is None or value is None:
                continue
            written = code_of(model, site.call.func, 40)
            jnp_name = qn[len("numpy."):]
            uses = model.static_uses.uses(site.call, scope)
            parts: tuple = (
                f"`{written}` converts its argument to a NumPy array, but `{code_of(model, traced[0], 40)}` is a "
                f"tracer while `{scope.display_name}` is traced (", *reason_parts(staged_reason(model, scope, batching=True)),
                "): this raises `TracerArrayConversionError` at trace time",
            )
            no_fix = None
            if uses.needs_static:
                where = (" (line ", LineOf(uses.static_at), ")") if uses.static_at is not None else ()
                parts += ("; its result is needed as a Python value", *where,
                          ": compute it from static values (shapes) or move it out of the traced function")
                no_fix = "the result is needed as a Python value"
            elif qn in DATA_DEPENDENT_SHAPE:
                parts += (f"; `jnp.{jnp_name}` works under `jit` only with a static `size=`",)
                no_fix = "the jnp version needs a static size="
            elif qn in NO_JNP:
                parts += ("; use `jnp.asarray`",)
                no_fix = "no jax.numpy namesake"
            else:
                parts += (f"; use `jnp.{jnp_name}`",)
            yield Violation(
                site.call,
                message(*parts),
                data={"call": site.call, "func": site.call.func, "scope": scope, "qualified": qn,
                      "jnp": jnp_name, "fixable": no_fix is None},
                no_fix=no_fix, premises=(runs, value),
            )
        yield from self._indexing(model)

    def _differentiated(self, model: SemanticModel, call: cst.Call, fn: Function, qn: str) -> Iterator[Violation]:
        """`np.sin(x)` in a function an eager `jax.grad` runs: the differentiated argument (and what
        is computed from it by differentiable operations) is a JVP tracer even for concrete inputs,
        and NumPy's conversion of it raises `TracerArrayConversionError` (jax#16404)."""
        tp = traced_premise(model)
        if not tp.differentiated_params(fn) or model.host_code.runs_on_host(fn):
            return
        found = next((p for a in call.args
                      if not a.star and (a.keyword is None or a.keyword.value not in _OPTIONS)
                      and (p := tp.differentiated_premise(a.value, fn)) is not None), None)
        if found is None:
            return
        runs = evidence(model).premise(fn, call, raises=True)
        if runs is None:
            return
        premise, name, reason = found
        jnp_name = qn[len("numpy."):]
        written = code_of(model, call.func, 40)
        parts: tuple = (
            f"`{written}` converts its argument to a NumPy array, but it carries the tangent of `{name}`, the "
            f"argument differentiated where `{fn.display_name}` is ", *reason_parts(reason),
            ": under differentiation it is a tracer even for concrete inputs, and this raises "
            "`TracerArrayConversionError`",
        )
        no_fix = None
        if qn in NO_JNP:
            parts += ("; use `jnp.asarray`",)
            no_fix = "no jax.numpy namesake"
        else:
            parts += (f"; use `jnp.{jnp_name}`",)
        # Every call runs under the transform where it decorates fn: the NumPy call always raised.
        always = reason.kind == "decorator"
        yield Violation(
            call,
            message(*parts),
            data={"call": call, "func": call.func, "scope": fn, "qualified": qn, "jnp": jnp_name,
                  "fixable": no_fix is None, "always_raised": always},
            no_fix=no_fix, premises=(runs, premise),
        )

    def _indexing(self, model: SemanticModel) -> Iterator[Violation]:
        """`TABLE[i]` with TABLE a NumPy array and i a tracer: NumPy converts the index
        (`TracerArrayConversionError`, or `TracerIntegerConversionError` for a slice bound)."""
        st = staging(model)
        values = staged_values(model)
        host = model.host_code
        for fn in model.traced.reasons:
            if not st.is_staged(fn, batching=True) or host.runs_on_host(fn):
                continue
            for node in own_nodes(fn):
                if not isinstance(node, cst.Subscript) or host.at_compile_time(node, fn):
                    continue
                indices, bounds = [], []
                for el in node.slice:
                    if isinstance(el.slice, cst.Index):
                        indices.append(el.slice.value)
                    else:
                        bounds.extend(b for b in (el.slice.lower, el.slice.upper, el.slice.step) if b is not None)
                traced = next((i for i in (*indices, *bounds) if values.kind(i, fn) is Kind.TRACED), None)
                if traced is None or not model.numpy_arrays.is_array(node.value, fn) \
                        or model.device_arrays.is_array(node.value, fn):
                    continue
                runs = evidence(model).premise(fn, node, raises=True)
                value = traced_premise(model).premise(traced, fn)
                if runs is None or value is None:
                    continue
                array = code_of(model, node.value, 40)
                yield Violation(
                    node,
                    message(
                        f"`{array}` is a NumPy array indexed by `{code_of(model, traced, 40)}`, a tracer while "
                        f"`{fn.display_name}` is traced (", *reason_parts(staged_reason(model, fn, batching=True)),
                        "): NumPy converts the index, which raises `",
                        "TracerIntegerConversionError" if traced in bounds else "TracerArrayConversionError",
                        "` at trace time; "
                        f"index a jax array instead (`jnp.asarray({array})[...]`)"),
                    data={"call": node, "scope": fn, "fixable": False},
                    no_fix="a NumPy array indexed by a tracer", premises=(runs, value),
                )


RULE = NumpyOnTracedValue
