"""JF201 numpy-constant-in-traced-code."""
from __future__ import annotations

from typing import Iterator

import libcst as cst

from jaxfuse_lint.core.calibration import raw
from jaxfuse_lint.model.names import as_written
from jaxfuse_lint.model import Kind, SemanticModel
from jaxfuse_lint.model.scopes import Function
from jaxfuse_lint.model.staging import staging
from jaxfuse_lint.rules import folded_constants
from jaxfuse_lint.model.evidence import evidence
from jaxfuse_lint.model.premises import calibrated
from jaxfuse_lint.model.source_text import code_of
from jaxfuse_lint.rules.base import LineOf, Rule, Violation, message, reason_parts
from jaxfuse_lint.core.targets import CPU_MEASURED, TPU_UNKNOWN, Claim, Evidence, tracing


class NumpyConstantInTracedCode(Rule):
    code = "JF201"
    premises = ("runs-traced", "size", "harm")
    name = "numpy-constant-in-traced-code"
    summary = "NumPy call that builds an array inside traced code (folded into the program as a constant)"
    fixable = "sometimes"
    doc = """
    ## What it does
    Flags, in traced code, a NumPy call that builds an array from static
    arguments: `np.arange`, `linspace`, `ones`, `zeros`, `full`, `eye`,
    `meshgrid`, `indices`, `fft.fftfreq`, `random.*` (and the draws of a
    `np.random.default_rng(...)` Generator: `rng.normal(0, 1, (512, 512))`),
    and NumPy array math on such results (`np.sin(np.arange(n))`, reported
    once, at the outermost call).

    ## Premises
    `runs-traced`; `size(the constant)`: its elements in 4-byte units, proven
    from its own arguments (`np.arange(10000)` on line N), a declared shape, or
    the call that passes its count (`Mesh(4096)` on line N); where the code
    does not show it and the table's answer depends on it, assumed with the
    table's threshold ("harm from 1,024 elements": preview); `harm(constant)`
    from the table. A 1-D `np.arange` of a static count read elementwise is not
    reported at any size: XLA rewrites an iota-shaped constant as an `iota`
    (jax-ml/jax#3220's `x + np.arange(10000)` compiles to one
    `iota_add_fusion`, no constant, on XLA:CPU of jax 0.10.2), so only the
    lowered text carries it.

    ## Why is this bad?
    NumPy runs on the host while the function is traced; the array it returns
    is a concrete value, so it enters the program as a constant. The constant
    occupies device memory for as long as the executable lives, swells the
    HLO and the compile time. Written with `jax.numpy`, the same expression is
    computed in the program (an `iota` plus arithmetic, fused into its
    consumer). Whether that is better depends on the constant and its use,
    and the compiler decides it — which is why the rule asks its calibration
    tables (below) before it reports.

    What the tables show (XLA:GPU for the H100 and the A100 decide alike;
    278 calibrated forms, harm in 91): the constant is worth removing from
    1,024 elements (4 KiB) up — 32 of 66 forms at 1,024 elements, 32 of 58 at
    65,536, 27 of 48 at 4,194,304 — and never below: 0 of 48 forms of 4
    elements and 0 of 58 of 144 (576 bytes) show a difference worth counting
    (at least 1 KiB). `x + np.arange(x.size).reshape(x.shape) ** 2.3` on an
    f32[2048,2048] input carries 16.0 MiB of folded constants, none with
    `jnp`, one kernel either way; a `linspace` or `fftfreq` of 65,536
    elements, 256 KiB. XLA already rebuilds some constants itself: a 1-D
    `np.arange` becomes an `iota` (0 B of constants before the fix: none of
    its 20 elementwise and table forms shows the harm, nor `x + np.arange(
    x.shape[0])[:, None]`), a constant of ones a broadcast (0 of 42). A list
    of Python ints (`np.stack(rows)`) is the same constant with `jnp.stack`
    (0 of 24). As a matmul operand the `jnp` version takes one kernel more
    (and as many temporaries as the constant's bytes): the fix is not better
    (0 of 40, mixed or worse). On XLA:CPU, where the tables also time the
    programs, reading a constant is often faster than computing it: the fix
    is mixed in 56 of 278 forms (`linspace` of 65,536: 88 µs → 121 µs).

    ## When it fires
    The harm — a folded constant — happens only when the NumPy array reaches
    the compiled program: it is an operand of traced computation (arithmetic
    with a tracer, a `jnp`/`lax` call, a gather `x[idx]`) or the value the
    jitted function returns. The rule follows the array from the call up its
    expression, through the local names it is assigned to
    (`a = np.roll(...); i = a[1]; jnp.sum(x, axis=i)`), through tuples and
    lists, and into the module's own helpers (their parameters, and the call
    sites of a helper that returns it) — `model/static_use.py`.

    Then it asks the table of the configured target about the form it found
    (`model/constant_context.py`): which NumPy function builds the array
    (`arange`, `linspace`, `ones` and the other fills, `eye`, `fftfreq`,
    `random`, an array of a Python list; math and layout on one keep its
    builder), its size in 4-byte elements (from literals, module constants,
    `len` of a literal, declared shapes, the arguments every call of a helper
    or every construction of a class passes: `np.arange(self.n)` with every
    `GraphConv(100000)`), whether that size is the size of a traced input
    (`np.arange(x.size)`: calibrated over inputs of 1,024 to 4,194,304
    elements) or one of its dimensions (`x.shape[0]`: 144 to 65,536), how the
    program uses it (elementwise with a traced value, as gather indices
    `x[C, a]`, as a table gathered at traced indices `jnp.take(C, i)`, a
    matmul operand) and whether it is built in a lax loop body. It reports,
    with the measured figures in the message, where every calibrated form the
    code may take shows the fix removing a constant and costing nothing; in
    the preview tier, without a fix, where only some do (a size it cannot
    establish: a static argument, an undeclared input dimension) or the form
    is not calibrated (`np.meshgrid`, scatter indices); nowhere else.

    ## When it stays silent
    When the array is static metadata: every use the model can see needs a
    concrete Python value, so it never becomes part of the program — an axis,
    a permutation or a shape (`axis=`, `jnp.transpose(x, perm)`,
    `x.reshape(s)`, `jnp.zeros(s)`, `jnp.roll`, `lax.ppermute(perm=...)`), split
    points (`jnp.split`), an index into a Python list, a `set` member or `dict`
    key, Python control (`if`, `while`, `and`/`or`, `not`, comparisons that feed
    them), `len`/`int`/`float`/`range`/`tuple`/`.tolist()`/`.item()`, a
    jitted function's `static_argnums`, the argument or return value of a
    `functools.lru_cache`d helper (it caches the host value on purpose; with
    `jnp` it would cache a tracer). With `jax.numpy` each of these would be a
    tracer and tracing would fail. Nor does it fire in code that runs on the
    host: the function of a `jax.pure_callback` / `io_callback` /
    `jax.debug.callback` (by name, as a lambda, or through `functools.partial`),
    nor in code that asks for trace-time constants: under `with
    jax.ensure_compile_time_eval():`, and in helpers called only from there.
    Nor on an array the code changes in place (`q[i, j] = ...`, `a.fill(v)`,
    `a += b`): host code building a table element by element (Clebsch-Gordan
    coefficients, masks, lookup tables) on purpose, which `jax.numpy` cannot
    do; whether its result is worth passing as an argument is decided where
    the table is used, not where it is built.
    Nor on arrays that fold nothing large: a 0-d array (`np.zeros((), dtype)`),
    and `np.broadcast_to(...)`, whose zero strides jax lowers as a broadcast of
    the distinct elements (the source is reported on its own when it is a
    NumPy array); a value handed to `itertools` becomes Python data.

    ## Known problems
    The size classes are in 4-byte elements: a narrower dtype counts for less
    only where `dtype=` or `.astype(...)` names it. Sizes between the
    calibrated classes take the nearest one on a log scale (4,096 elements
    decide as 1,024 do). The XLA:CPU table times the programs on the machine
    that made it; timings of a shared machine are noisy (a few forms of 4
    elements show a difference in wall-clock beyond the noise of the runs).

    ## Example
    ```python
    @jax.jit
    def f(x):
        return x + np.arange(x.size).reshape(x.shape) ** 2.3
    ```

    ## Use instead
    ```python
    @jax.jit
    def f(x):
        return x + jnp.arange(x.size).reshape(x.shape) ** 2.3
    ```

    ## Fix safety
    Safe where `jax.numpy` has the same function with the same meaning
    (`arange`, `linspace`, `zeros`, `ones`, `full`, `eye`, `indices`,
    `meshgrid`, `mgrid`, `fft.fftfreq`, stacking, elementwise math...) and the
    array is only used as an array (arithmetic, jnp calls, indexing, returned):
    every array-building NumPy call in the reported expression is rewritten to
    `jnp.` (reusing the module's alias for `jax.numpy`, or adding `import
    jax.numpy as jnp`); static helpers such as `np.prod(x.shape)`, `np.pi` and
    `np.float32` are left alone. Dtypes and values: NumPy computes on the host
    in float64/int64, and jax canonicalises the result (32 bits without x64)
    as a *strongly* typed array; `jnp` computes in float32 without x64, and its
    results of Python scalars are *weakly* typed (`jnp.arange(n) * 0.5`, so
    `x16 + that` stays float16 where NumPy's constant made it float32). The fix
    is safe only where both agree bit for bit: creation with literal or shape
    arguments (`zeros`, `ones`, `eye`, `indices`, `arange` with int or
    whole-number arguments, `array` of literals, `mgrid` with int slices,
    `full` with `dtype=` — `jnp.full(s, 3)` takes the Python number's weak
    type — and their `dtype=`) and layout (`reshape`, `transpose`, `stack`, `meshgrid`...).
    Anything NumPy computed (`**`, `sin`, `linspace`, `fftfreq`, arithmetic on
    the array with Python numbers) is unsafe. It is also unsafe when the array is iterated or used
    where the code might need a concrete value, and there is no fix when it is
    used where only a concrete NumPy value works (an `if` test, `int()`,
    `.tolist()`, another NumPy call). `np.random.*` has no fix (JAX's random
    numbers need keys and differ in value), nor has any call without a `jnp`
    equivalent. No fix at all, safe or unsafe, is offered where the array also
    reaches a static use (above: the `jnp` version would reach it as a
    tracer), reaches a use the model cannot follow (another module's
    function, a store into a container) or is stored on `self` (a `jnp` value there would be a
    tracer that outlives the trace); the finding stays when it also reaches
    the program. Values are followed through attributes of `self` (to the
    class's methods that read them) and parameter defaults.
    """
    backends = (
        Claim(
            "A NumPy array built while tracing is captured as a constant and folded into the compiled program",
            gpu=tracing("JAX captures host arrays as constants while lowering, before any backend compiler runs"),
            cpu=Evidence(True, CPU_MEASURED + ": `f_numpy` 1 MiB → 0 B of folded constants"),
            tpu=tracing("as on every backend: the constant is in the lowered program"),
        ),
        Claim(
            "Built with `jax.numpy` instead, the constant is gone and the program is no worse (kernels, launches, "
            "temporaries)",
            gpu=Evidence(True, "the calibration tables (XLA:GPU, deviceless, H100 and A100 alike): in 91 of 278 "
                               "forms, from 1,024 elements up; not for 1-D `arange` (XLA makes it an `iota`), "
                               "fills of ones, lists of Python ints, matmul operands (one kernel more)"),
            cpu=Evidence(None, "the XLA:CPU table: harm in 71 of 278 forms; reading the constant is often faster "
                               "than computing it (the fix mixed in 56)"),
            tpu=TPU_UNKNOWN,
        ),
    )
    valid = (
        "import jax, numpy as np\n@jax.jit\ndef f(x):\n    return x.reshape(np.prod(x.shape)) * np.pi\n",
        "import numpy as np\ndef host(n):\n    return np.arange(n) ** 2\n",
        "import jax, numpy as np\n@jax.jit\ndef f(x):\n    return x * np.array([1.0, 2.0])\n",
        "import jax, jax.numpy as jnp, numpy as np\n@jax.jit\ndef f(x):\n"
        "    perm = np.arange(x.ndim)[::-1]\n    return jnp.transpose(x, perm)\n",
    )
    invalid = (
        "import jax, numpy as np\n@jax.jit\ndef f(x):\n    return x + np.arange(x.size).reshape(x.shape)\n",
        "import jax, numpy as onp\ndef helper(x):\n    return onp.linspace(0, 1, x.shape[0])\nf = jax.jit(lambda x: x * helper(x))\n",
    )

    def check(self, model: SemanticModel, settings) -> Iterator[Violation]:
        arrays = model.numpy_arrays
        candidates: dict[cst.CSTNode, str] = {}
        for node_scope_pairs in _numpy_nodes(model):
            node, scope, qn = node_scope_pairs
            if not arrays.is_array(node, scope):
                continue
            args = node.args if isinstance(node, cst.Call) else ()
            if any(model.kind(a.value, scope) is Kind.TRACED for a in args):
                continue  # a tracer handed to NumPy is an error, not a constant
            if model.static_uses.uses(node, scope).static_metadata:
                # An axis, a shape, a permutation, split points (`jnp.split(x, np.cumsum(sizes))`), a list
                # index, Python control, `list(set(np.arange(n)[axes]))`: never program data.
                continue
            if model.host_code.at_compile_time(node, scope):
                continue  # under `jax.ensure_compile_time_eval()`: a trace-time constant on purpose
            if model.static_uses.uses(node, scope).mutated:
                continue  # built in place by host code (`q[i, j] = ...`): a table on purpose, no jnp equivalent
            if _scalar_sized(model, node, scope, qn):
                continue  # a 0-d array, or a scalar broadcast (zero strides: lowered as a broadcast)
            candidates[node] = qn
        for node, qn in candidates.items():
            # Report the outermost NumPy computation only.
            if any(a in candidates for a in _expression_ancestors(model, node)):
                continue
            fn = model.function_of(node)
            reason = model.trace_reason(fn)
            short = as_written(node, qn)
            uses = model.static_uses.uses(node, fn)
            if uses.needs_static and uses.static_at is not None:
                advice = ("; build the array that goes into the program with `jax.numpy` and keep NumPy for the "
                          "value also used where a concrete one is needed (line ", LineOf(uses.static_at), ")")
            else:
                advice = ("; use `jax.numpy`",)
            head = (f"`{short}` builds a NumPy array while `{fn.display_name}` is traced (", *reason_parts(reason),
                    "): it is folded into the compiled program as a constant")
            if raw(settings):  # the calibration harness: the pattern, whatever the table says
                yield Violation(node, message(*head, *advice), data={"qualified_name": qn})
                continue
            judged = self._judge(model, node, fn, settings, head, advice, qn)
            if judged is None:
                continue
            runs = evidence(model).premise(fn, node, raises=False)
            if runs is not None:
                yield judged.with_premises(runs)

    # -- what the compiler does with this constant (the calibration table) ------------------------
    def _judge(self, model, node, fn, settings, head, advice, qn) -> Violation | None:
        found = folded_constants.features(model, node, fn, known=True)
        decision = folded_constants.judge(self.code, settings, found)
        if decision.outcome == "none":
            return None  # too small to matter, rebuilt in place by XLA, or `jnp` folds the same constant
        data = {"qualified_name": qn}
        if found["builder"] == "random":
            advice = ("; pass the values as an argument (or draw them with `jax.random` from a key argument)",)
            fixed = "with the values passed as an argument"
        else:
            fixed = "with `jax.numpy`"
        premises = calibrated(decision, f"`{code_of(model, node, 40)}`",
                              [folded_constants.size_claim(model, node, fn, found)])
        if not decision.fires:
            return Violation(node, message(*head, *advice), data=data, premises=premises)
        cited = folded_constants.evidence(decision, "this form", fixed, found["size"])
        return Violation(node, message(*head, f" ({cited})" if cited else "", *advice), data=data, premises=premises)


def _numpy_nodes(model: SemanticModel):
    compiled = staging(model).is_compiled  # traced eagerly, the array is an operand, not a constant
    host = model.host_code.runs_on_host  # a host callback's body runs on concrete values
    for site in model.index.calls:
        scope = site.scope
        if isinstance(scope, Function) and model.is_xla_traced(scope) and compiled(scope) and not host(scope):
            qn = model.numpy_arrays.is_numpy_call(site.call, scope)
            if qn is not None:
                yield site.call, scope, qn
    for fn in model.traced.reasons:
        if model.is_kernel(fn) or not compiled(fn) or host(fn):
            continue
        for read in fn.reads:
            parent = model.parent(read.name)
            if isinstance(parent, cst.Attribute) and parent.value is read.name:
                sub = model.parent(parent)
                if isinstance(sub, cst.Subscript) and sub.value is parent:
                    qn = model.numpy_arrays.is_numpy_call(sub, fn)
                    if qn is not None:
                        yield sub, fn, qn


def _scalar_sized(model: SemanticModel, node: cst.CSTNode, scope, qn: str) -> bool:
    """A 0-d array (`np.zeros((), dtype)`), or `np.broadcast_to(...)`: jax lowers a NumPy array
    with zero strides as a broadcast of its distinct elements (`_ndarray_constant_handler`), so
    the broadcast folds nothing larger than its source (reported on its own when it is an array)."""
    shape = model.shape(node, scope)
    if shape is not None and shape.rank == 0:
        return True
    return qn == "numpy.broadcast_to"


def _expression_ancestors(model: SemanticModel, node: cst.CSTNode):
    p = model.parent(node)
    while p is not None and not isinstance(p, (cst.BaseStatement, cst.BaseSmallStatement, cst.Lambda, cst.FunctionDef)):
        yield p
        p = model.parent(p)


RULE = NumpyConstantInTracedCode
