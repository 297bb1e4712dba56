"""JF207 captured-jax-array."""
from __future__ import annotations

from typing import Iterator

from jaxfuse_lint.model import SemanticModel
from jaxfuse_lint.model.captures import captured_reads
from jaxfuse_lint.model.scopes import Function
from jaxfuse_lint.rules.captured_arrays import path_and_attribute_violations
from jaxfuse_lint.rules.folded_constants import judged_capture
from jaxfuse_lint.rules.base import LineOf, Rule, Violation, message, reason_parts
from jaxfuse_lint.core.targets import CPU_MEASURED, TPU_UNKNOWN, Claim, Evidence, tracing


class CapturedJaxArray(Rule):
    code = "JF207"
    premises = ("runs-traced", "size", "harm")
    name = "captured-jax-array"
    summary = "Traced function reads a module-level or enclosing jax array (folded in as a constant)"
    fixable = "never"
    doc = """
    ## What it does
    Flags a read, inside a function traced by `jit` (or reached from one), of a
    name bound outside traced code — at module level or in an enclosing function
    that is not traced — to a `jax.Array` with a size: what jax creates from a
    size (`jnp.zeros`/`linspace`/`arange`/`eye`/`meshgrid`/`indices`/`fftfreq`,
    `jax.random.*` with a shape), a conversion of a NumPy or jax array
    (`jnp.asarray(data)`, `jax.device_put(x)`), math, indexing, methods and
    views of those, or a module function whose every `return` is one
    (`K = jnp.fft.fftfreq(4096)`, `X_TRAIN = jnp.asarray(np.load(...))`), or a
    sparse array holding such arrays (`BCOO.fromdense(M)`, `BCOO((data,
    indices), shape=...)`). A name rebound to a device array on some path
    (`A = np.ones(n)`, then `A = jnp.asarray(A)` or `jax.device_put(A)`) is
    reported for the jax array when that binding may hold once the module (or
    the enclosing function) has run, and JF202 reports the NumPy path if it may
    hold too. Attributes count where `self` is a constant of the trace, not an
    argument: a method jitted as a bound method (`jax.jit(self.apply)`), with
    `self` static, or called from compiled code on an instance bound outside it
    (`MODEL.apply(x)`), and a lax loop body such a method hands over as a
    bound method (`lax.while_loop(cond, self._step, s)`), reading `self.k` that every assignment in a plain class
    sets to a jax array; flax/equinox/haiku modules and registered pytrees pass
    their fields as leaves of an argument and are not checked.

    ## Premises
    `runs-traced`; `size(the captured array)`: its elements, proven from the
    expression that builds it (`jax.device_put(np.random.rand(8000))` on line
    N) or assumed with the table's threshold where not shown (preview);
    `harm(read)` from the table. An array the program reads only through an
    operation the table does not calibrate (`jnp.fft.fft(pulse)`: the tables'
    uses are elementwise, gather indices, a gathered table, a matmul) is in
    the preview tier, naming the operation: the fold of an FFT of a captured
    constant at compile time (jax-ml/jax#10596, >10 s on a GPU then) is not
    measured by the tables, and XLA:CPU of jax 0.10.2 no longer folds it (the
    `fft` stays in the compiled program, 0.04 s to compile).

    ## Why is this bad?
    A jax array read by a traced function is not an argument of the compiled
    program: jit folds its value into the program as a constant, like a NumPy
    array (JF202). The bytes are copied into the executable and kept for its
    lifetime (on top of the device buffer the name still holds), the HLO grows,
    compilation slows down, and a later rebinding of the name is silently
    ignored by the cached program. Measured with `jaxfuse-lint verify` on CPU
    (jax 0.10.2): a jitted `x * K` with a captured `K = jnp.linspace(0, 1,
    65536)` carries 256.0 KiB of folded constants (jax itself lists it as a
    "captured constant"); with `K` built inside the function or passed as an
    argument, 0 B.

    What the calibration tables show (XLA:GPU for the H100 and the A100 decide
    alike; 230 calibrated forms, each compiled as written and as advised: built
    inside, first thing in the function that reads it, where the array is
    made from shapes; passed as an argument where it is data — a draw of
    `jax.random`, a converted file): the harm shows in 81, and only from
    1,024 elements (4 KiB) up — 27 of 46 forms at each of 1,024, 65,536 and
    4,194,304 elements, none of the 92 forms of 4 or 144 elements. A 5-element
    vector captured by a plotting cell folds 20 bytes: nothing worth a
    finding. Data is worth passing in every form from 1,024 elements (a
    `jax.random.normal` draw of 4,194,304 elements is 16.0 MiB of folded
    constants, none as an argument, one kernel either way); an array made from
    shapes is worth building inside for `linspace`, `eye` and `fftfreq` read
    elementwise or as a table (6 of 10 forms each), not for a 1-D `arange`
    (XLA makes the constant an `iota`: 0 of 20) nor a constant of ones (a
    broadcast: 0 of 30), and built inside as a matmul operand it costs a kernel
    more (0 of 40). On XLA:CPU (timed too): harm in 71 of 230 forms, the
    advice mixed in 43.

    ## When it fires
    The harm — a folded constant — happens when the read reaches the compiled
    program: an operand of traced computation (arithmetic with a tracer, a
    `jnp`/`lax` call, a gather) or the returned value, followed through local
    names, tuples and the module's helpers (`model/static_use.py`).

    Then the table of the configured target decides (`model/constant_context.py`,
    as for JF202): what builds the array (`arange`, `linspace`, the fills,
    `eye`, `fftfreq`, `random`, `load` for a converted file; data added to
    anything stays data: `simulated + noise`), its size in 4-byte elements
    (literals, module constants, declared shapes; a sum is at least as large
    as its largest known operand), how the function uses it and whether the
    read is in a lax loop body. Reported with the measured figures where every
    calibrated form the code may take shows the harm; in the preview tier where
    only some do — a `vmap` result of unknown size (`clean =
    jax.vmap(jax.jit(simulate))(thetas)`), a size the model cannot establish —
    or the form is not calibrated; silent otherwise.

    Routes the rule follows to a captured array: the results of `jax.vmap` /
    `jax.pmap` (of a jitted function too: `batched = jax.vmap(jax.jit(f))`)
    are jax arrays, and such a result plus NumPy noise is a jax array, not a
    NumPy one; a function reached through a transform bound to a name and
    called in compiled code (`g = jax.value_and_grad(loss)`, then `g(w)` in a
    jitted step) is compiled there; an attribute of an instance of a plain
    class bound outside traced code (`MESH.k`), and an element of a tuple
    attribute read where `self` is a constant of the trace
    (`self.test_cases[0]` with `jit(static_argnums=0)`).

    ## When it stays silent
    When every use of the read is static (`.shape`, `len`, an axis or shape
    argument, Python control), and in the function of a host callback
    (`jax.pure_callback`, `io_callback`, `jax.debug.callback`, also through
    `functools.partial`), which runs on the host.

    ## Known problems
    Only code that jit (or `pmap`, `pjit`, `eqx.filter_jit`) compiles is
    checked — directly, or called, vmapped or looped over from there: a `vmap`
    or a lax loop run eagerly takes captured arrays as operands.
    Shapes, dtypes and `len()` of the array (`K.shape`, `K.dtype`) are static
    and are not flagged. PRNG keys, `jnp.array` of a literal number or list,
    and jax results of Python numbers or of values of unknown size
    (`jnp.float32(box)`, `lax.stop_gradient(r) ** 2`: usually a 0-d array whose
    folding costs nothing) are not flagged. Arrays held in containers
    (`params["w"]`) are not followed. A
    NumPy array is JF202's: this rule is separate because the remedy differs
    (a NumPy value can be rebuilt with `jax.numpy`; a jax array usually comes
    from data or from other device computations and should be an argument).

    ## Example
    ```python
    K = jnp.fft.fftfreq(4096)

    @jax.jit
    def smooth(x):
        return jnp.fft.ifft(jnp.fft.fft(x) * jnp.exp(-K**2))
    ```

    ## Use instead
    ```python
    @jax.jit
    def smooth(x, k):
        return jnp.fft.ifft(jnp.fft.fft(x) * jnp.exp(-k**2))

    smooth(x, K)
    ```
    or, when it depends only on shapes, build it inside:
    `k = jnp.fft.fftfreq(x.shape[-1])`.

    ## Fix safety
    No automatic fix. Passing the array as an argument changes the function's
    signature and every call site (and, for a function handed to `lax` loops
    or `vmap`, how it is called), and building it inside recomputes it on
    every call and may round differently once XLA fuses it into its consumer:
    both are design decisions for the author.
    """
    backends = (
        Claim(
            "A jax array read by traced code from an enclosing or module scope is folded into the compiled "
            "program as a constant",
            gpu=tracing("JAX captures the array as a constant while lowering, before any backend compiler runs"),
            cpu=Evidence(True, CPU_MEASURED + ": `x * K` with a captured 65536-element `K` carries 256 KiB of "
                               "folded constants, 0 B with `K` passed as an argument"),
            tpu=tracing("as on every backend: the constant is in the lowered program"),
        ),
        Claim(
            "Passed as an argument (data) or built inside (arrays made from shapes), the constant is gone and "
            "the program is no worse",
            gpu=Evidence(True, "the calibration tables (XLA:GPU, deviceless, H100 and A100): in 81 of 230 forms, "
                               "from 1,024 elements up; not for 1-D `arange` or fills of ones (XLA rebuilds "
                               "them), nor matmul operands built inside (one kernel more)"),
            cpu=Evidence(None, "the XLA:CPU table: harm in 71 of 230 forms; the advice mixed in 43"),
            tpu=TPU_UNKNOWN,
        ),
    )
    valid = (
        "import jax, jax.numpy as jnp\nK = jnp.arange(8)\n@jax.jit\ndef f(x):\n    return x.reshape(K.shape)\n",
        "import jax, jax.numpy as jnp\nK = jnp.arange(8)\ndef host(x):\n    return x + K\n",
        "import jax, jax.numpy as jnp\nKEY = jax.random.PRNGKey(0)\nSCALE = jnp.float32(2.0)\n"
        "@jax.jit\ndef f(x):\n    return x * SCALE + jax.random.normal(KEY, x.shape)\n",
        "import jax, jax.numpy as jnp\n@jax.jit\ndef f(x, k):\n    return x * k\nK = jnp.arange(8.0)\ny = f(K, K)\n",
    )
    invalid = (
        "import jax, jax.numpy as jnp\nK = jnp.linspace(0.0, 1.0, 4096)\n@jax.jit\ndef f(x):\n    return x * K\n",
        "import jax, jax.numpy as jnp\ndef make(n):\n    grid = jnp.linspace(0, 1, n)\n"
        "    return jax.jit(lambda x: x * grid)\n",
        "import jax, jax.numpy as jnp, numpy as np\nX = jax.device_put(np.ones((100, 3)))\n"
        "@jax.jit\ndef loss(w):\n    return jnp.sum((X @ w) ** 2)\n",
    )

    def check(self, model: SemanticModel, settings) -> Iterator[Violation]:
        device, host = model.device_arrays, model.numpy_arrays

        def jax_array(bindings, owner) -> bool:  # a NumPy array is JF202's
            return device.binding_is_array(bindings, owner) and not host.binding_is_array(bindings, owner)

        for c in captured_reads(model, jax_array):
            where = "at module level" if not isinstance(c.owner, Function) else f"in `{c.owner.display_name}`"
            first = c.bindings[0]
            v = Violation(
                c.name,
                message(
                    f"`{c.name.value}` is a jax array bound {where} (line ", LineOf(first.node),
                    f") and read in traced `{c.fn.display_name}` (", *reason_parts(model.trace_reason(c.fn)),
                    "): jit folds it into the compiled program as a constant instead of taking it as an "
                    "input; pass it as an argument, or build it inside from shapes",
                ),
                data={"binding": first, "owner": c.owner},
            )
            judged = judged_capture(self.code, model, settings, v, c.name, c.fn,
                                    [(b.value, c.owner) for b in c.bindings if b.value is not None])
            if judged is not None:
                yield judged

        yield from path_and_attribute_violations(model, "jax", settings, self.code)


RULE = CapturedJaxArray
