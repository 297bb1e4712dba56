"""JF201 numpy-constant-in-traced-code."""
from __future__ import annotations

from typing import Iterator

import libcst as cst

from jaxfuse_lint.model.names import as_written
from jaxfuse_lint.model import Kind, SemanticModel
from jaxfuse_lint.model.scopes import Function
from jaxfuse_lint.model.staging import staging
from jaxfuse_lint.rules.base import LineOf, Rule, Violation, message, reason_parts
from jaxfuse_lint.core.targets import CPU_MEASURED, TPU_UNKNOWN, Claim, Evidence, tracing


class NumpyConstantInTracedCode(Rule):
    code = "JF201"
    name = "numpy-constant-in-traced-code"
    summary = "NumPy call that builds an array inside traced code (folded into the program as a constant)"
    fixable = "sometimes"
    doc = """
    ## What it does
    Flags, in traced code, a NumPy call that builds an array from static
    arguments: `np.arange`, `linspace`, `ones`, `zeros`, `full`, `eye`,
    `meshgrid`, `indices`, `fft.fftfreq`, `random.*`, and NumPy array math on
    such results (`np.sin(np.arange(n))`, reported once, at the outermost call).

    ## Why is this bad?
    NumPy runs on the host while the function is traced; the array it returns
    is a concrete value, so XLA embeds it in the program as a constant. The
    constant occupies device memory for as long as the executable lives, swells
    the HLO, and can make compilation dramatically slower (constant folding of
    large arrays). The same expression written with `jax.numpy` is an `iota`
    plus arithmetic that XLA fuses into its consumer and never materialises
    (the fusion notebook's `f_numpy` against `f`).

    Static shape arithmetic is fine and is not flagged: `np.prod(x.shape)`,
    `np.pi`, `np.float32(2.0)`, dtypes, and `np.array` of a literal list (a
    handful of numbers costs nothing to fold). Neither is NumPy whose result
    goes straight into Python values — `list(set(np.arange(n)[axes]))`,
    `int(...)`, `.tolist()` — which never reach the program as an array.
    Nor is code traced only eagerly, outside any jit: the body of a lax loop
    called from plain Python, or a function differentiated with `jax.grad` /
    `jacrev` on the host. There the array is an *operand* of the operations
    JAX dispatches one by one, not part of a compiled program (measured: an
    eager `fori_loop` whose body adds `np.full(c.shape, 2.0)` compiles a
    `scan` that takes the array as its parameter `args_0`; the same loop under
    `jax.jit` has it as an HLO constant). Across modules the same holds: a
    helper another module only differentiates or vmaps on the host is not
    flagged, and one that any module jits (directly or through its callers)
    is.

    ## When it fires
    The harm — a folded constant — happens only when the NumPy array reaches
    the compiled program: it is an operand of traced computation (arithmetic
    with a tracer, a `jnp`/`lax` call, a gather `x[idx]`) or the value the
    jitted function returns. The rule follows the array from the call up its
    expression, through the local names it is assigned to
    (`a = np.roll(...); i = a[1]; jnp.sum(x, axis=i)`), through tuples and
    lists, and into the module's own helpers (their parameters, and the call
    sites of a helper that returns it) — `model/static_use.py` — and reports
    when one of those uses reaches the program (or none is known to need a
    concrete value and some cannot be followed).

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
            "Computing the array in the program (the fix) instead of reading a folded constant costs no "
            "run time worth counting",
            gpu=Evidence(None, "not measured here: no GPU was available (`benchmarks/proofs.py` times it)"),
            cpu=Evidence(False, CPU_MEASURED + ": `f_numpy` → `f_jnp` on f32[131072,2], median 140 µs → 864 µs; "
                                "the fix saves the constant's memory and compile time, not CPU time"),
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
            yield Violation(
                node,
                message(
                    f"`{short}` builds a NumPy array while `{fn.display_name}` is traced (",
                    *reason_parts(reason),
                    "): it is folded into the compiled program as a constant", *advice,
                ),
                data={"qualified_name": qn},
            )


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
