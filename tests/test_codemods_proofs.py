"""The fixes pay off: the fusion notebook's examples, fixed by `fix_source`, compiled on CPU.

Each test applies the rule's fix with `jaxfuse_lint.engine.pipeline.fix_source`, compiles the
function before and after with `jax.jit(f).lower(...).compile()`, and asserts the
drop it measured: fewer kernels (top-level instructions of the optimized HLO that
launch work), fewer temporary bytes (`memory_analysis().temp_size_in_bytes`), fewer
bytes of folded constants, or fewer compilations. Results must stay equal too.

Measured on CPU (jax 0.10.2):
  f_sum_jax, x f32[131072,2], x's size along axis 1 declared:  2 -> 1 kernels, 1 MiB -> 0 temp
  f_sum_jax exactly as in the notebook (x's size unknown,
      x broadcast with jnp.broadcast_arrays, then split):      2 -> 1 kernels, 1 MiB -> 0 temp
      (indexing `kvm * x` as a whole instead: 2 -> 2 kernels, and at 1024 rows 4 KiB -> 8 KiB temp)
  f_filter_with_temp, rho f32[64,64,64]:                       8 -> 7 kernels, 2.16 MB -> 1.08 MB temp
  f_cse_loop_expl, x f32[131072,2]:                            7 -> 5 kernels, 1 MiB -> 129 B temp
  f_numpy, x f32[131072,2]:                                    1 MiB of folded constants -> 0
  g_inner_jitted_lambda, n = 5:                                5 traces/compilations -> 1
"""
from __future__ import annotations

import re
from dataclasses import replace

import numpy as np
import pytest

from jaxfuse_lint.core.calibration import RAW
from jaxfuse_lint.core.config import Settings
from jaxfuse_lint.engine.pipeline import fix_source

jax = pytest.importorskip("jax")
jnp = jax.numpy

_BOOKKEEPING = frozenset({
    "parameter", "constant", "tuple", "get-tuple-element", "bitcast", "after-all", "add-dependency",
    "opt-barrier", "domain", "partition-id", "replica-id",
})
_HEADER = re.compile(r"^(ENTRY\s+)?%?([\w.\-]+)\s.*\{\s*$")
_INSTR = re.compile(r"^\s*(?:ROOT\s+)?%?[\w.\-]+\s*=\s*(\(.*?\)|\S+)\s+([\w\-]+)\((.*)$")


def _computations(text: str):
    comps: dict[str, list[tuple[str, str, str]]] = {}
    entry = current = None
    for line in text.splitlines():
        if current is None:
            m = _HEADER.match(line)
            if m and "->" in line:
                current = m.group(2)
                comps[current] = []
                if m.group(1):
                    entry = current
            continue
        if line.strip() == "}":
            current = None
            continue
        m = _INSTR.match(line)
        if m:
            comps[current].append((m.group(2), m.group(1), m.group(3)))
    return comps, entry


def kernels(compiled) -> int:
    """Instructions that launch work: those left in ENTRY and in the loops/calls it runs.

    Fusions count once (their insides are one kernel); parameters, constants, tuples and
    bitcasts move nothing; `while`/`call`/`conditional` are entered, not counted.
    """
    comps, entry = _computations(compiled.as_text())
    seen: set[str] = set()
    count = 0

    def visit(name: str) -> None:
        nonlocal count
        if name in seen or name not in comps:
            return
        seen.add(name)
        for opcode, _, rest in comps[name]:
            if opcode == "while":
                for key in ("body", "condition"):
                    m = re.search(key + r"=%?([\w.\-]+)", rest)
                    if m:
                        visit(m.group(1))
            elif opcode in ("call", "conditional"):
                for m in re.finditer(r"(?:to_apply|true_computation|false_computation)=%?([\w.\-]+)", rest):
                    visit(m.group(1))
                m = re.search(r"branch_computations=\{([^}]*)\}", rest)
                if m:
                    for n in m.group(1).split(","):
                        visit(n.strip().lstrip("%"))
            elif opcode not in _BOOKKEEPING:
                count += 1

    visit(entry)
    return count


_ELEMENT_BYTES = {"pred": 1, "s8": 1, "u8": 1, "s16": 2, "u16": 2, "f16": 2, "bf16": 2, "s32": 4, "u32": 4,
                  "f32": 4, "s64": 8, "u64": 8, "f64": 8, "c64": 8, "c128": 16}


def folded_constant_bytes(compiled) -> int:
    """Bytes of array constants embedded in the optimized program (scalars excluded)."""
    total = 0
    for m in re.finditer(r"=\s*([a-z0-9]+)\[([\d,]+)\]\S*\s+constant\(", compiled.as_text()):
        n = 1
        for d in m.group(2).split(","):
            n *= int(d)
        total += n * _ELEMENT_BYTES.get(m.group(1), 4)
    return total


def temp_bytes(compiled) -> int:
    return compiled.memory_analysis().temp_size_in_bytes


def fixed(source: str, code: str, unsafe: bool = False, raw: bool = False) -> str:
    """`code`'s fix of `source`. `raw`: the rule reports its raw pattern, whatever its calibration table
    says (the fix of a form whose table decision depends on a size the example does not state; these
    tests measure what the fix does, compiled)."""
    settings = replace(Settings(), select=(code,), extra=(RAW,) if raw else ())
    outcome = fix_source(source, "notebook.py", settings, unsafe=unsafe)
    assert not outcome.errors and not outcome.dropped, (outcome.errors, outcome.dropped)
    assert outcome.changed, f"{code} fixed nothing"
    again = fix_source(outcome.source, "notebook.py", settings, unsafe=unsafe)
    assert again.source == outcome.source, "fixing twice changed the code again"
    return outcome.source


def load(source: str) -> dict:
    namespace: dict = {"__name__": "notebook_example"}
    exec(compile(source, "<notebook>", "exec"), namespace)
    return namespace


def compile_both(before_src: str, after_src: str, name: str, *args):
    before, after = load(before_src)[name], load(after_src)[name]
    cb = jax.jit(before).lower(*args).compile()
    ca = jax.jit(after).lower(*args).compile()
    np.testing.assert_allclose(np.asarray(jax.jit(after)(*args)), np.asarray(jax.jit(before)(*args)),
                               rtol=1e-5, atol=1e-5)
    return cb, ca


def probe(*shape, seed=0):
    return jnp.asarray(np.random.default_rng(seed).random(shape, dtype=np.float32))


# -- JF101: f_sum_jax ------------------------------------------------------------------------------
KVEC = '''
import jax
import jax.numpy as jnp


def kvec_mesh(N):
    return jnp.stack((jnp.arange(0, N), jnp.arange(0, N)), axis=-1)
'''

F_SUM_JAX = KVEC + '''

@jax.jit
def f_sum_jax(x):
    kvm = kvec_mesh(len(x))
    return x * 2 + jnp.sum(kvm * x, axis=1, keepdims=True)
'''

F_SUM_JAX_DECLARED = KVEC + '''

@jax.jit
def f_sum_jax(x):
    assert x.shape[-1] == 2
    kvm = kvec_mesh(len(x))
    return x * 2 + jnp.sum(kvm * x, axis=1, keepdims=True)
'''


def test_f_sum_jax_with_declared_size_fuses_into_one_kernel():
    # x's dtype is not declared: a weakly typed x would make the fix's result weakly typed, so the
    # fix is unsafe (a `Float[Array, "n 2"]` annotation makes it safe).
    after = fixed(F_SUM_JAX_DECLARED, "JF101", unsafe=True)
    assert "kvm[..., 0] * x[..., 0] + kvm[..., 1] * x[..., 1]" in after
    cb, ca = compile_both(F_SUM_JAX_DECLARED, after, "f_sum_jax", probe(131072, 2))
    assert (kernels(cb), kernels(ca)) == (2, 1)
    assert temp_bytes(cb) == 131072 * 2 * 4 and temp_bytes(ca) == 0


def test_f_sum_jax_as_written_broadcasts_the_unknown_factor_and_fuses():
    """x's size along axis 1 is unknown, so x is broadcast against kvm before it is indexed."""
    after = fixed(F_SUM_JAX, "JF101", unsafe=True)
    assert ("    _, x_full = jnp.broadcast_arrays(kvm, x)\n"
            "    return x * 2 + (kvm[:, 0] * x_full[:, 0] + kvm[:, 1] * x_full[:, 1])[:, None]\n") in after
    for rows in (1024, 131072):
        cb, ca = compile_both(F_SUM_JAX, after, "f_sum_jax", probe(rows, 2))
        assert (kernels(cb), kernels(ca)) == (2, 1)
        assert temp_bytes(cb) > 0 and temp_bytes(ca) == 0


COUNTS = '''
import jax
import jax.numpy as jnp


@jax.jit
def hits(x):
    v = jnp.stack([x[:, 0] > 0, x[:, 1] > 0], axis=-1)
    return jnp.sum(v, axis=-1)


@jax.jit
def small(x):
    v = jnp.stack([x[:, 0], x[:, 1]], axis=-1).astype(jnp.int8) * 100
    return jnp.sum(v, axis=-1)


@jax.jit
def small_mean(x):
    v = jnp.stack([x[:, 0], x[:, 1]], axis=-1).astype(jnp.int16)
    return jnp.mean(v, axis=-1)
'''


def test_dtype_preserving_casts_keep_results_and_still_fuse():
    """Issue 15's examples: a sum of bools (counts 0/1/2) and of int8 (past 127) accumulate in int32
    in `jnp.sum`; the safe fix casts each term (`.astype(int)`), and still fuses: 1 kernel, no temporary.
    (Two columns of an input summed and returned: JF101's table keeps these forms silent, XLA fusing the
    reduction on its own; the raw pattern's fix is what is measured here.)"""
    after = fixed(COUNTS, "JF101", raw=True)
    assert "return v[..., 0].astype(int) + v[..., 1].astype(int)" in after
    assert "return (v[..., 0].astype(jnp.float32) + v[..., 1].astype(jnp.float32)) / 2" in after
    x = jnp.asarray(np.random.default_rng(1).normal(size=(4096, 2)).astype(np.float32) * 3)
    before_ns, after_ns = load(COUNTS), load(after)
    for name in ("hits", "small", "small_mean"):
        want, got = before_ns[name](x), after_ns[name](x)
        assert want.dtype == got.dtype and np.array_equal(np.asarray(want), np.asarray(got)), name
        compiled = jax.jit(after_ns[name]).lower(x).compile()
        assert (kernels(compiled), temp_bytes(compiled)) == (1, 0), name
    assert int(jnp.max(before_ns["hits"](x))) == 2 and int(jnp.max(before_ns["small"](x))) > 127


WHOLE = '''
import jax
import jax.numpy as jnp


def kvec_mesh(N):
    return jnp.stack((jnp.arange(0, N), jnp.arange(0, N)), axis=-1)


@jax.jit
def f_sum_jax(x):
    kvm = kvec_mesh(len(x))
    return x * 2 + jnp.sum(kvm * x, axis=1, keepdims=True)


@jax.jit
def f_sum_whole(x):
    kvm = kvec_mesh(len(x))
    return x * 2 + ((kvm * x)[:, 0] + (kvm * x)[:, 1])[:, None]


@jax.jit
def g_sum(y):
    return jnp.exp(y) + jnp.sum(jnp.sin(y) * y, axis=-1, keepdims=True)


@jax.jit
def g_sum_whole(y):
    return jnp.exp(y) + ((jnp.sin(y) * y)[..., 0] + (jnp.sin(y) * y)[..., 1])[..., None]
'''


def test_indexing_the_operand_as_a_whole_fuses_only_without_a_stack_inside():
    """Why the fix broadcasts instead of indexing `(kvm * x)` as a whole where it can: XLA does not push
    the lane slices through the product into the stacked k-mesh (still 2 kernels, and at 1024 rows
    twice the temporaries); without a stack in the operand, whole indexing fuses."""
    ns = load(WHOLE)
    x = probe(1024, 2)
    stacked = [jax.jit(ns[n]).lower(x).compile() for n in ("f_sum_jax", "f_sum_whole")]
    assert [kernels(c) for c in stacked] == [2, 2]
    assert temp_bytes(stacked[1]) >= temp_bytes(stacked[0])
    plain = [jax.jit(ns[n]).lower(x).compile() for n in ("g_sum", "g_sum_whole")]
    assert [kernels(c) for c in plain] == [2, 1] and temp_bytes(plain[1]) == 0


# -- JF203: f_filter_with_temp ------------------------------------------------------------------------
KMESH = '''
import jax
import jax.numpy as jnp


def myfftfreq(i, n, d=1.0):
    """Does the same as jnp.fft.fftfreq(n, d)[i] but avoids creating the frequency array"""
    return jnp.where(i < (n + 1) // 2, i / n, (i - n) / n) / d


def myrfftfreq(i, n, d=1.0):
    return i / n / d


def get_kmesh(rho, d=1.0, norm2=False, real=True):
    ix, iy, iz = jnp.indices((rho.shape[0], rho.shape[1], (rho.shape[2] // 2) + 1 if real else rho.shape[2]))

    kx = myfftfreq(ix, rho.shape[0], d=d)
    ky = myfftfreq(iy, rho.shape[1], d=d)

    if real:
        kz = myrfftfreq(iz, rho.shape[2], d=d)
    else:
        kz = myfftfreq(iz, rho.shape[2], d=d)

    if norm2:
        return kx**2 + ky**2 + kz**2
    else:
        return jnp.stack((kx, ky, kz), axis=-1)


@jax.jit
def f_filter_with_temp(rho):
    """If we define a variable outside the loop, it will be stored as a temporary"""
    k2 = get_kmesh(rho, norm2=True)

    def step(i, rho):
        rhok = jnp.fft.rfftn(rho, axes=(0, 1, 2))
        rhok *= jnp.exp(-0.5 * k2)
        return jnp.fft.irfftn(rhok, axes=(0, 1, 2))

    return jax.lax.fori_loop(0, 5, step, rho)
'''


def test_f_filter_with_temp_recomputes_the_kmesh_in_the_loop():
    # k2's size is not stated (JF203's table shows the harm from 4,096 elements: preview by default);
    # the fix, measured at rho f32[64,64,64].
    after = fixed(KMESH, "JF203", raw=True)
    assert "    def step(i, rho):\n        k2 = get_kmesh(rho, norm2=True)\n" in after
    assert "    k2 = get_kmesh(rho, norm2=True)\n\n" not in after  # the outer binding is gone
    cb, ca = compile_both(KMESH, after, "f_filter_with_temp", probe(64, 64, 64))
    assert (kernels(cb), kernels(ca)) == (8, 7)
    assert temp_bytes(cb) > 2_100_000 and temp_bytes(ca) < 1_100_000  # 2.16 MB -> 1.08 MB


F_CSE_LOOP_EXPL = '''
import jax
import jax.numpy as jnp


def get_im(x, eps=0.):
    return jnp.sin((jnp.arange(x.size).reshape(x.shape) + eps) ** 2.3)


@jax.jit
def f_cse_loop_expl(x):
    im = get_im(x)

    def step(i, a):
        return a + im

    return jax.lax.fori_loop(0, 5, step, x + im)
'''


def test_f_cse_loop_expl_recomputes_inside_the_loop_too():
    # x's size is not stated (preview by default, as above); the fix, measured at x f32[131072,2].
    after = fixed(F_CSE_LOOP_EXPL, "JF203", raw=True)
    assert "    def step(i, a):\n        im = get_im(x)\n" in after
    cb, ca = compile_both(F_CSE_LOOP_EXPL, after, "f_cse_loop_expl", probe(131072, 2))
    assert kernels(ca) < kernels(cb)
    assert temp_bytes(cb) >= 131072 * 2 * 4 and temp_bytes(ca) < 1024


LOOP_INPUT = '''
import jax
import jax.numpy as jnp


@jax.jit
def f(x, a0, s):
    w = jnp.exp(-s * a0)

    def step(i, c):
        return c * w

    return jax.lax.fori_loop(0, 5, step, x)


@jax.jit
def f_recomputed(x, a0, s):
    def step(i, c):
        w = jnp.exp(-s * a0)
        return c * w

    return jax.lax.fori_loop(0, 5, step, x)
'''


def test_value_of_a_loop_input_gets_no_fix_for_cpu_because_recomputing_saves_nothing():
    """`exp(-s * a0)` is no bigger than its input: XLA:CPU hoists the recomputation back out.

    For the default target (GPU, whose pipeline has no loop-invariant code motion) the fix is
    offered where its table shows the harm, an `a0` of 4,096 elements or more (declared here), and
    writes exactly `f_recomputed`; with the size unknown it is a preview finding without a fix.
    tests/test_targets.py has the policy."""
    declared = LOOP_INPUT.replace("def f(x, a0, s):\n", "def f(x, a0, s):\n    assert a0.shape == (131072, 2)\n", 1)
    cpu = replace(Settings(), select=("JF203",), target="cpu")
    assert not fix_source(LOOP_INPUT, "notebook.py", cpu, unsafe=True).changed
    assert not fix_source(declared, "notebook.py", cpu, unsafe=True).changed
    assert not fix_source(LOOP_INPUT, "notebook.py", replace(Settings(), select=("JF203",)), unsafe=True).changed
    gpu = fix_source(declared, "notebook.py", replace(Settings(), select=("JF203",)), unsafe=True)
    assert gpu.changed and "    def step(i, c):\n        w = jnp.exp(-s * a0)\n        return c * w" in gpu.source
    assert "    w = jnp.exp(-s * a0)\n\n" not in gpu.source  # the outer binding is gone
    ns = load(LOOP_INPUT)
    args = (probe(131072, 2), probe(131072, 2, seed=1), 0.5)
    captured = jax.jit(ns["f"]).lower(*args).compile()
    recomputed = jax.jit(ns["f_recomputed"]).lower(*args).compile()
    assert temp_bytes(recomputed) == temp_bytes(captured)
    assert kernels(recomputed) == kernels(captured)


# -- JF201: f_numpy ---------------------------------------------------------------------------------
F_NUMPY = '''
import jax
import numpy as np


@jax.jit
def f_numpy(x):
    """Folded constants appear as 'code_size' in the memory report."""
    return x + np.arange(x.size).reshape(x.shape) ** 2.3
'''


def test_f_numpy_no_longer_folds_a_constant():
    # `** 2.3` computed in float32 by jnp instead of float64 by NumPy, weakly typed: an unsafe fix.
    after = fixed(F_NUMPY, "JF201", unsafe=True)
    assert "import jax.numpy as jnp" in after and "jnp.arange(x.size)" in after
    cb, ca = compile_both(F_NUMPY, after, "f_numpy", probe(131072, 2))
    assert folded_constant_bytes(cb) == 131072 * 2 * 4
    assert folded_constant_bytes(ca) == 0


# -- JF301: g_inner_jitted_lambda ---------------------------------------------------------------------
G_INNER = '''
import jax


def unjitted_loop_body(prev_i):
    return prev_i + 1


def g_inner_jitted_lambda(x, n):
    i = 0
    while i < n:
        i = jax.jit(lambda x: unjitted_loop_body(x))(i)
    return x + i
'''


def _count_traces(source: str, n: int) -> tuple[int, int, object]:
    """(traces of the loop body, backend compilations, result) for one call of g with n iterations."""
    import jax.monitoring

    ns = load(source)
    body = ns["unjitted_loop_body"]
    traces = []

    def counting(prev_i):
        traces.append(1)
        return body(prev_i)

    ns["unjitted_loop_body"] = counting
    compiles = []

    def listener(event, duration, **kwargs):
        if event == "/jax/core/compile/backend_compile_duration":
            compiles.append(event)

    jax.monitoring.register_event_duration_secs_listener(listener)
    try:
        result = ns["g_inner_jitted_lambda"](jnp.float32(1.0), n)
    finally:
        jax.monitoring.unregister_event_duration_listener(listener)
    return len(traces), len(compiles), result


def test_g_inner_jitted_lambda_compiles_once():
    after = fixed(G_INNER, "JF301")
    assert "unjitted_loop_body_jit = jax.jit(unjitted_loop_body)\n    while i < n:" in after
    _count_traces(G_INNER, 2)  # warm up the eager operations both versions share (`<`, `+`)
    traces_b, compiles_b, out_b = _count_traces(G_INNER, 5)
    traces_a, compiles_a, out_a = _count_traces(after, 5)
    assert (traces_b, traces_a) == (5, 1)
    assert compiles_b >= 5 and compiles_a <= 1
    assert float(out_a) == float(out_b) == 6.0
