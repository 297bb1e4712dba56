"""JF202 captured-numpy-array."""
from __future__ import annotations

from typing import Iterator

from jaxfuse_lint.model import SemanticModel
from jaxfuse_lint.model.captures import captured_reads
from jaxfuse_lint.model.scopes import Function
from jaxfuse_lint.rules.captured_arrays import path_and_attribute_violations
from jaxfuse_lint.rules.folded_constants import judged_capture
from jaxfuse_lint.rules.base import LineOf, Rule, Violation, message, reason_parts
from jaxfuse_lint.core.targets import CPU_MEASURED, TPU_UNKNOWN, Claim, Evidence, tracing


class CapturedNumpyArray(Rule):
    code = "JF202"
    premises = ("runs-traced", "size", "harm")
    name = "captured-numpy-array"
    summary = "Traced function reads a module-level or enclosing NumPy array (baked in as a constant)"
    fixable = "sometimes"
    doc = """
    ## What it does
    Flags a read, inside a traced function, of a name bound outside any traced
    code — at module level or in an enclosing function that is not traced — to
    a NumPy array (`K = np.fft.fftfreq(256)`, `W = np.load("w.npy")`).

    ## Premises
    `runs-traced`; `size(the captured array)`: its elements, proven from the
    expression that builds it (line cited) or assumed with the table's
    threshold where not shown (preview); `harm(read)` from the table.

    ## Why is this bad?
    A traced function cannot take a closed-over NumPy array as an input: JAX
    embeds its value in the compiled program as a constant. It sits in device
    memory for the life of the executable, bloats the HLO, slows compilation,
    and any later change to the array is silently ignored by the cached
    program. Passed as an argument instead, it is a device buffer like any other
    input; built with `jax.numpy` inside the function, it fuses into its consumer
    — where the compiler does not already do better (below).

    What the calibration tables show (XLA:GPU for the H100 and the A100 decide
    alike; 254 calibrated forms, each compiled before and after the advice:
    rebuilt inside with `jax.numpy`, the rule's fix, for arrays made from
    shapes; passed as an argument for data — a draw of `np.random`, a loaded
    file, a list of Python ints): the harm shows in 89, and only from 1,024
    elements (4 KiB) up — 35 of 54 forms at 1,024 elements, 27 of 46 at 65,536
    and at 4,194,304, none of the 108 forms of 4 or 144 elements (576 bytes).
    Data is always worth passing from 1,024 elements: a loaded f32[2048,2048]
    matrix read by `x @ W` is 16.0 MiB of folded constants, none as an
    argument, 2 kernels either way (`random` and `load`: harm in every form of
    1,024 elements and more; a list of Python ints, at 1,024). An array made
    from shapes is worth rebuilding for `linspace`, `eye` and `fftfreq` read
    elementwise or as a table (6 of 10 forms each: a `fftfreq` of 65,536
    elements is 256 KiB), but not for what XLA already rebuilds: a 1-D
    `arange` (an `iota`: 0 of 20 elementwise and table forms), a constant of
    ones (a broadcast: 0 of 30). Rebuilt as a matmul operand it costs a kernel
    more (0 of 40). On XLA:CPU, whose table also times the programs: harm in 81
    of 254 forms; computing an array made from shapes is often slower than
    reading it (the advice mixed in 38).

    Only code that jit (or `pmap`, `pjit`, `eqx.filter_jit`) compiles is
    checked — directly, or called, vmapped or looped over from there: a `vmap`
    or a lax loop run eagerly takes captured arrays as operands.
    Reading only static facts about the array (`K.shape`, `K.ndim`, `K.dtype`,
    `len(K)`) captures nothing and is not flagged; neither is `np.array` of a
    literal list. Any `numpy.*` call makes an array (`np.hanning(256)`,
    `np.unique(...)`, the module's own helper returning one) except those known
    to give a scalar, dtype, shape, bool or None: whole-array reductions
    (`np.prod(x.shape)`, `np.sum(w)`), elementwise math on scalars
    (`np.sqrt(2.0)`), `np.float32(0.5)`, `np.dtype`, `np.finfo`, `np.shape`,
    `np.isscalar`, `np.random.seed`, a draw without a size. A draw of NumPy's
    Generator API (`rng = np.random.default_rng(0)`, then `rng.normal(0, 1,
    (512, 512))`, or `np.random.default_rng(0).standard_normal((512, 512))`)
    is data like the legacy `np.random.standard_normal((512, 512))`, and is
    decided the same way. An array read as
    a shape, axis or split point (`jnp.split(x, SPLITS)`, `x.reshape(SHAPE)`,
    `axis=AXES`) becomes Python numbers at trace time and is not flagged. A jax
    array captured the same way is JF207's.

    A name bound to an array on every path, NumPy on some and a jax array on
    others (`A = np.ones(n)`, then `A = jnp.asarray(A)` under an `if`), is
    reported for each kind that may still hold once the module (or the
    enclosing function) has run: JF202 for the NumPy path, JF207 for the jax
    one. Attributes count where `self` is a constant of the trace, not an
    argument: a method jitted as a bound method (`jax.jit(self.apply)`), with
    `self` static (`static_argnums=0`), or called from compiled code on an
    instance bound outside it (`MODEL.apply(x)`), and a lax loop body such a
    method hands over as a bound method (`lax.while_loop(cond, self._step,
    s)`), reading `self.table` that
    every assignment in a plain class sets to a NumPy array. Framework modules
    (flax, equinox, haiku) and registered pytrees pass their fields as leaves
    of an argument and are not checked.

    Objects count too: a read of `MESH.k` in compiled code, where `MESH` is
    an instance of a plain class bound outside traced code (at module level,
    or in the function that makes a jitted closure) and every assignment of
    `k` in the class is a NumPy array; and an element of a tuple attribute
    (`self.test_cases[0]`, `self.test_cases = (maps, starts)`) read where
    `self` is a constant of the trace.

    ## When it fires
    The harm — a folded constant — happens when the read reaches the compiled
    program: an operand of traced computation (arithmetic with a tracer, a
    `jnp`/`lax` call, a gather) or the returned value. The read is followed
    through local names, tuples and the module's helpers
    (`model/static_use.py`), as for JF201.

    Then the table of the configured target decides (`model/constant_context.py`):
    what builds the array (as JF201: `arange`, `linspace`, the fills, `eye`,
    `fftfreq`, `random`, a list of Python ints, and `load` for data read from
    files), its size in 4-byte elements (literals, module constants, a
    declared shape: `W: Float32[np.ndarray, "1024 64"] = np.load(path)`, and
    for an object's attribute the arguments of the call that made it,
    `Mesh(4096)`), how the function uses it (elementwise, as gather indices,
    as a table gathered at traced indices, a matmul operand) and whether the
    read is in a lax loop body. Reported with the measured figures where
    every calibrated form the code may take shows the harm; in the preview
    tier, without a fix, where only some do (a file loaded without a declared
    shape: its size decides) or the form is not calibrated; silent otherwise.
    The fix is offered only where the finding is reported, and never for a
    list of Python ints (rebuilt with `jnp` it is the same constant).

    ## When it stays silent
    When every use of the read needs a concrete Python value (an axis, a
    permutation, a shape, split points, `ppermute` pairs, a Python list index,
    a `set` member or `dict` key, Python control, `int`/`tuple`/`.tolist()`):
    the array is static metadata and never part of the program. Nor in the
    function of a host callback (`jax.pure_callback`, `io_callback`,
    `jax.debug.callback`, also through `functools.partial`): it runs on the
    host.

    ## Example
    ```python
    K = np.fft.fftfreq(4096)

    @jax.jit
    def smooth(x):
        return jnp.fft.ifft(jnp.fft.fft(x) * np.exp(-K**2))
    ```

    ## Use instead
    ```python
    @jax.jit
    def smooth(x):
        k = jnp.fft.fftfreq(x.shape[-1])
        return jnp.fft.ifft(jnp.fft.fft(x) * jnp.exp(-k**2))
    ```
    or pass the array as an argument: `smooth(x, K)`.

    ## Fix safety
    An unsafe fix (applied with `--unsafe-fixes`) where the rewrite is clear:
    when the array is built by NumPy functions that `jax.numpy` has with the
    same meaning (JF201's list) from names the traced function sees unchanged,
    and every read of it in the function works on a traced array, the function
    rebuilds it first thing with `jax.numpy` (`K = jnp.fft.fftfreq(4096)`; in a
    lambda the expression replaces the read). Unsafe because the values are now
    computed in float32 on the device rather than float64 on the host (last-bit
    differences, weakly typed results of Python scalars where NumPy's were
    strongly typed: see JF201), and because passing the array as an argument
    may be the better design. Arrays loaded from files (`np.load`) or made by other code
    get no fix; neither does an array the module changes in place after building it
    (`MASK[0] = 1.0`: the rebuilt array would miss the change) or one that another read in
    the function uses as a static value (an axis, a Python index: it would get a tracer).

    The fix is whole or not offered: it rebuilds every NumPy array the function
    captures, with the arrays they are built from (`DAMP = np.exp(-K**2)` brings
    `K` along), and each of their diagnostics offers that one fix. When one of them
    cannot be rebuilt, none is: rebuilding some would keep the constants and add
    the kernels that rebuild the others. In a lambda, a name read twice gets no fix
    (the expression would be computed twice).
    """
    backends = (
        Claim(
            "A NumPy array read by traced code from an enclosing or module scope is folded into the compiled "
            "program as a constant",
            gpu=tracing("JAX captures host arrays as constants while lowering, before any backend compiler runs"),
            cpu=Evidence(True, CPU_MEASURED + ": the captured array's bytes appear as folded constants"),
            tpu=tracing("as on every backend: the constant is in the lowered program"),
        ),
        Claim(
            "Passed as an argument (data) or rebuilt inside with `jax.numpy` (arrays made from shapes), the "
            "constant is gone and the program is no worse",
            gpu=Evidence(True, "the calibration tables (XLA:GPU, deviceless, H100 and A100 alike): in 89 of 254 "
                               "forms, from 1,024 elements up; not for 1-D `arange` or fills of ones (XLA "
                               "rebuilds them), nor matmul operands rebuilt with `jnp` (one kernel more)"),
            cpu=Evidence(None, "the XLA:CPU table: harm in 81 of 254 forms; the advice mixed in 38"),
            tpu=TPU_UNKNOWN,
        ),
    )
    valid = (
        "import jax, numpy as np\nK = np.arange(8)\n@jax.jit\ndef f(x):\n    return x.reshape(K.shape)\n",
        "import jax, numpy as np\nK = np.arange(8)\ndef host(x):\n    return x + K\n",
        "import jax\nCOEFFS = (0.5, 0.25)\n@jax.jit\ndef f(x):\n    return x * COEFFS[0]\n",
        "import jax, numpy as np\nSCALE = np.sqrt(2.0)\nN = np.prod((4, 8))\n@jax.jit\ndef f(x):\n"
        "    return x.reshape(N) * SCALE * np.float32(0.5)\n",
    )
    invalid = (
        "import jax, numpy as np\nK = np.arange(8)\n@jax.jit\ndef f(x):\n    return x + K\n",
        "import jax, numpy as np\ndef make(n):\n    grid = np.linspace(0, 1, n)\n    return jax.jit(lambda x: x * grid)\n",
        "import jax, jax.numpy as jnp, numpy as np\nWINDOW = np.hanning(256)\n@jax.jit\ndef f(x):\n"
        "    return jnp.fft.fft(x * WINDOW)\n",
    )

    def check(self, model: SemanticModel, settings) -> Iterator[Violation]:
        for c in captured_reads(model, model.numpy_arrays.binding_is_array):
            where = "at module level" if not isinstance(c.owner, Function) else f"in `{c.owner.display_name}`"
            first = c.bindings[0]
            v = Violation(
                c.name,
                message(
                    f"`{c.name.value}` is a NumPy array bound {where} (line ", LineOf(first.node),
                    f") and read in traced `{c.fn.display_name}` (", *reason_parts(model.trace_reason(c.fn)),
                    "): it is baked into the compiled program as a constant; pass it as an argument "
                    "or build it with `jax.numpy` inside",
                ),
                data={"binding": first, "owner": c.owner},
            )
            judged = judged_capture(self.code, model, settings, v, c.name, c.fn,
                                    [(b.value, c.owner) for b in c.bindings if b.value is not None])
            if judged is not None:
                yield judged

        yield from path_and_attribute_violations(model, "numpy", settings, self.code)


RULE = CapturedNumpyArray
