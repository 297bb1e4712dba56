"""The fusion notebook's rules (JF102-JF104, JF204-JF206): their fixes compute the same values, and
what their documentation claims about kernels and temporaries holds on CPU.

Kernel launches are counted in the optimized HLO of `jax.jit(f).lower(...).compile()`: every
top-level instruction that is not bookkeeping (parameters, constants, tuples, bitcasts, scalar
loop counters) is one launch, and a `while` loop counts its body's launches times its known trip
count. Temporaries are `memory_analysis().temp_size_in_bytes`.
"""
from __future__ import annotations

import importlib.util
import itertools
import re
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxfuse_lint.core.config import Settings
from jaxfuse_lint.engine.pipeline import check_source, fix_source
from tests.fixture_harness import rule_settings

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"
SDS = jax.ShapeDtypeStruct


# -- HLO measurements ---------------------------------------------------------------------------------
_BOOKKEEPING = {"parameter", "constant", "tuple", "get-tuple-element", "bitcast", "after-all", "opt-barrier"}


def _computations(text: str) -> dict[str, list[str]]:
    comps: dict[str, list[str]] = {}
    current = None
    for line in text.splitlines():
        m = re.match(r"^(ENTRY\s+)?%(\S+)\s.*\{\s*$", line)
        if m:
            current = "ENTRY" if m.group(1) else m.group(2)
            comps[current] = []
        elif line.startswith("}"):
            current = None
        elif current is not None and " = " in line:
            comps[current].append(line.strip())
    return comps


def _instruction(line: str) -> tuple[str, str, str]:
    rhs = line.split(" = ", 1)[1].strip()
    if rhs.startswith("("):  # a tuple shape
        depth = 0
        for i, ch in enumerate(rhs):
            depth += (ch == "(") - (ch == ")")
            if depth == 0:
                break
        shape, rest = rhs[: i + 1], rhs[i + 1:].strip()
    else:
        shape, _, rest = rhs.partition(" ")
    return shape, rest.split("(", 1)[0], rest


def launches(text: str, name: str = "ENTRY", comps: dict | None = None) -> list[str]:
    """The kernels one execution launches, in order (a loop body's once per iteration)."""
    comps = comps or _computations(text)
    out: list[str] = []
    for line in comps[name]:
        shape, op, rest = _instruction(line)
        if op in _BOOKKEEPING:
            continue
        if op == "while":
            body = re.search(r"body=%([\w.\-]+)", rest).group(1)
            trips = re.search(r'"known_trip_count":\{"n":"(\d+)"', rest)
            out += launches(text, body, comps) * (int(trips.group(1)) if trips else 1)
            continue
        if re.fullmatch(r"[a-z0-9]+\[\](\{\})?", shape):
            continue  # scalar bookkeeping: loop counters
        out.append(op)
    return out


def measure(fn, *specs, **jit_kwargs) -> tuple[list[str], int]:
    compiled = jax.jit(fn, **jit_kwargs).lower(*specs).compile()
    return launches(compiled.as_text()), compiled.memory_analysis().temp_size_in_bytes


def load(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def settings(code: str, **kw) -> Settings:
    """The rule alone; a calibrated rule reports its raw pattern (the fixes' mechanics are tested here)."""
    return replace(rule_settings(code), **kw)


def test_launch_counter_counts_loop_iterations():
    def loop(x):
        return jax.lax.fori_loop(0, 3, lambda i, c: c * 2.0 + 1.0, x)  # noqa: JF103 (a rolled loop on purpose)

    text = jax.jit(loop).lower(SDS((64, 2), jnp.float32)).compile().as_text()
    assert launches(text).count("fusion") >= 3


# -- JF102 grid-from-meshgrid -------------------------------------------------------------------------
_GRID = '''import jax
import jax.numpy as jnp


def grid(rho):
    dd = 0.1 * 3
{body}
    return ({names},)
'''

_KINDS = [("fftfreq", "fftfreq"), ("fftfreq", "rfftfreq"), ("rfftfreq", "fftfreq"),
          ("fftfreq", "fftfreq", "rfftfreq"), ("rfftfreq", "fftfreq", "fftfreq")]


_D_FORMS = ["", ", d=0.37", ", 2.5", ", d=dd"]
# Python-scalar arithmetic around the vector (angular wavenumbers and the like).
_SCALES = [("", ""), ("2 * jnp.pi * ", ""), ("-", " / 3"), ("", " * (2 * jnp.pi) / 7")]
_CASES = [(kinds, indexing, _D_FORMS[i % len(_D_FORMS)], _SCALES[(i // 2) % len(_SCALES)])
          for i, (kinds, indexing) in enumerate(itertools.product(_KINDS, ["ij", "xy", None]))]


@pytest.mark.parametrize("kinds,indexing,d,scale", _CASES)
def test_jf102_fix_is_bit_exact(kinds, indexing, d, scale):
    """Every fftfreq/rfftfreq mix, both indexings, each way of passing d, scalar factors."""
    names = ["ka", "kb", "kc"][: len(kinds)]
    pre, post = scale
    lines = [f"    {n} = {pre}jnp.fft.{k}(rho.shape[{i}]{d}){post}" for i, (n, k) in enumerate(zip(names, kinds))]
    ix = "" if indexing is None else f', indexing="{indexing}"'
    lines.append(f"    {', '.join(names)} = jnp.meshgrid({', '.join(names)}{ix})")
    src = _GRID.format(body="\n".join(lines), names=", ".join(names)) + "\n\ngrid_jit = jax.jit(grid)\n"
    out = fix_source(src, "grid.py", settings("JF102"))
    assert "meshgrid" not in out.source and "fftfreq" not in out.source, out.source
    assert not out.remaining
    before, after = {}, {}
    exec(compile(src, "before.py", "exec"), before)
    exec(compile(out.source, "after.py", "exec"), after)
    # Odd sizes: fftfreq's negative half starts at (n+1)//2, and rfftfreq has n//2+1 entries.
    for shape in [(5, 7, 9), (8, 6, 4), (1, 2, 3)]:
        x = jnp.zeros(shape[: len(kinds)])
        for u, v in zip(before["grid_jit"](x), after["grid_jit"](x)):
            assert u.shape == v.shape and u.dtype == v.dtype
            np.testing.assert_array_equal(np.asarray(u), np.asarray(v))


def _jf102_modules():
    # The unsafe result holds every fix (`get_kmesh_naive`'s `d` parameter could be an array: unsafe).
    return (load(FIXTURES / "JF102" / "positives.py", "jf102_before"),
            load(FIXTURES / "JF102" / "positives.unsafe.py", "jf102_after"))


def test_jf102_fixed_fixture_computes_the_same():
    before, after = _jf102_modules()
    rng = np.random.default_rng(0)
    rho = jnp.asarray(rng.standard_normal((9, 6, 7)), jnp.float32)
    np.testing.assert_array_equal(before.get_kmesh_naive_jit(rho), after.get_kmesh_naive_jit(rho))
    np.testing.assert_array_equal(before.get_kmesh_naive(rho, d=0.3), after.get_kmesh_naive(rho, d=0.3))
    field = jnp.asarray(rng.standard_normal((7, 10)), jnp.float32)
    np.testing.assert_array_equal(before.default_xy_indexing(field), after.default_xy_indexing(field))
    np.testing.assert_allclose(before.inline_vectors(field), after.inline_vectors(field), rtol=1e-6, atol=1e-6)
    sq = jnp.asarray(rng.standard_normal((5, 5)), jnp.float32)
    np.testing.assert_allclose(before.vector_used_again(sq, 5), after.vector_used_again(sq, 5), rtol=1e-6)
    np.testing.assert_array_equal(before.scaled_frequencies(sq), after.scaled_frequencies(sq))
    f = jnp.asarray(rng.standard_normal((9, 7)), jnp.float32)
    np.testing.assert_allclose(before.spectral_shift_jit(f, 0.3, 0.7), after.spectral_shift_jit(f, 0.3, 0.7),
                               rtol=1e-6, atol=1e-6)


def test_jf102_fix_fuses_the_grid_on_cpu():
    before, after = _jf102_modules()
    rho = SDS((64, 64, 64), jnp.float32)
    k_before, t_before = measure(before.get_kmesh_naive, rho)
    k_after, t_after = measure(after.get_kmesh_naive, rho)
    # The notebook's get_kmesh_naive vs get_kmesh: two kernels (the fftfreq vector is a temporary) vs one.
    assert (len(k_before), len(k_after)) == (2, 1)
    assert t_before > 0 and t_after == 0

    def filtered(kmesh):
        return lambda r: jnp.fft.irfftn(jnp.fft.rfftn(r) * jnp.exp(-kmesh(r)), r.shape)

    f_before, _ = measure(filtered(before.get_kmesh_naive), rho)
    f_after, _ = measure(filtered(after.get_kmesh_naive), rho)
    assert len(f_after) == len(f_before) - 1  # the grid fuses into the consumer (CPU: 4 -> 3)


def test_jf102_cheap_grids_fuse_already():
    """Why rfftfreq/arange meshgrids are not flagged: XLA fuses them (1 kernel)."""
    def grid(rho):
        a, b = jnp.meshgrid(jnp.fft.rfftfreq(rho.shape[0]), jnp.arange(rho.shape[1]) * 0.1, indexing="ij")
        return a * b

    k, t = measure(grid, SDS((64, 64), jnp.float32))
    assert len(k) == 1 and t == 0


# -- JF103 short-loop-not-unrolled --------------------------------------------------------------------
def _jf103_modules():
    return (load(FIXTURES / "JF103" / "positives.py", "jf103_before"),
            load(FIXTURES / "JF103" / "positives.fixed.py", "jf103_after"))


def test_jf103_unrolled_fixture_computes_the_same():
    before, after = _jf103_modules()
    rng = np.random.default_rng(1)
    x = jnp.asarray(rng.uniform(-0.5, 0.5, (33, 4)), jnp.float32)
    y = jnp.asarray(rng.uniform(-0.5, 0.5, (33, 4)), jnp.float32)
    for name in ("f_for", "lambda_body", "module_constant", "scan_length", "scan_literal_xs", "multiline_call",
                 "helper_body"):
        np.testing.assert_allclose(getattr(before, name)(x), getattr(after, name)(x), rtol=1e-6, atol=1e-6,
                                   err_msg=name)
    np.testing.assert_allclose(before.param_capture(x, y), after.param_capture(x, y), rtol=1e-6, atol=1e-6)


def test_jf103_unroll_fuses_the_loop_on_cpu():
    before, after = _jf103_modules()
    x = SDS((1024 * 128, 2), jnp.float32)  # the notebook's 1 MiB probe array
    k_before, t_before = measure(before.f_for, x)
    k_after, t_after = measure(after.f_for, x)
    # The notebook's f_for: a copy of the carry plus one body launch per iteration, vs one fused kernel.
    assert len(k_before) == 5 and len(k_after) == 1
    assert t_before > 0 and t_after == 0
    k_before, _ = measure(before.scan_length, x)
    k_after, _ = measure(after.scan_length, x)
    assert len(k_before) >= 4 and len(k_after) == 1


def test_jf103_respects_unroll_max():
    src = (FIXTURES / "JF103" / "positives.py").read_text()
    default = check_source(src, "p.py", settings("JF103")).diagnostics
    low = check_source(src, "p.py", settings("JF103", unroll_max=3)).diagnostics
    rows = {d.location.row for d in low}
    assert len(low) < len(default)
    assert all("3 iterations" in d.message or "2 iterations" in d.message for d in low), [d.message for d in low]
    assert 15 not in rows  # f_for runs 4


# -- JF104 fft-component-axis-last --------------------------------------------------------------------
def test_jf104_component_first_layout_halves_the_temporaries_on_cpu():
    def last(x):
        a = jnp.fft.rfftn(x, axes=(0, 1, 2))
        return jnp.fft.irfftn(a, axes=(0, 1, 2))

    def first(x):
        a = jnp.fft.rfftn(x, axes=(1, 2, 3))
        return jnp.fft.irfftn(a, axes=(1, 2, 3))

    k_last, t_last = measure(last, SDS((64, 64, 32, 2), jnp.float32))
    k_first, t_first = measure(first, SDS((2, 64, 64, 32), jnp.float32))
    assert len(k_last) == 4 and len(k_first) == 2  # two transposes around the FFTs
    assert t_last > 1.9 * t_first


# -- JF204 cse-across-loop-scope ----------------------------------------------------------------------
def test_jf204_copy_after_the_loop_keeps_a_temporary_on_cpu():
    cases = load(FIXTURES / "JF204" / "cases.py", "jf204_cases")
    x = SDS((1024 * 128, 2), jnp.float32)
    k_after, t_after = measure(cases.f_cse_loop_after.__wrapped__, x)
    k_impl, t_impl = measure(cases.f_cse_loop_impl.__wrapped__, x)
    k_eps, t_eps = measure(cases.copies_differ.__wrapped__, x)
    assert t_after >= 1024 * 1024 and t_impl < 1024 and t_eps < 1024
    assert len(k_after) > len(k_impl)
    _, t_statements = measure(cases.statements.__wrapped__, SDS((64, 64), jnp.float32))
    assert t_statements >= 64 * 64 * 4


# -- JF205 unrolled-independent-ffts ------------------------------------------------------------------
def _jf205_modules():
    return (load(FIXTURES / "JF205" / "cases.py", "jf205_before"),
            load(FIXTURES / "JF205" / "cases.unsafe.py", "jf205_after"))


def test_jf205_fori_loop_computes_the_same():
    before, after = _jf205_modules()
    rng = np.random.default_rng(2)
    x = jnp.asarray(rng.standard_normal((2, 8, 8, 6)), jnp.float32)
    for n in range(1, 6):
        a, b = before.f_fft_multi_jit(x, n=n), after.f_fft_multi_jit(x, n=n)
        assert a.shape == b.shape and a.dtype == b.dtype
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5 * float(jnp.max(jnp.abs(a))))
    m = jnp.asarray(rng.standard_normal((16, 8)), jnp.float32)
    w = jnp.asarray(rng.standard_normal((8, 5)), jnp.float32)
    np.testing.assert_allclose(before.augmented(m, w), after.augmented(m, w), rtol=1e-5, atol=1e-5)
    v = jnp.asarray(rng.standard_normal((32,)), jnp.float32)
    np.testing.assert_allclose(before.term_first(v), after.term_first(v), rtol=1e-5, atol=1e-5)


def test_jf205_fori_loop_caps_the_temporaries_on_cpu():
    before, after = _jf205_modules()
    x = SDS((2, 64, 64, 32), jnp.float32)

    def temp(fn, n):
        return jax.jit(fn, static_argnames="n").lower(x, n=n).compile().memory_analysis().temp_size_in_bytes

    python_loop = [temp(before.f_fft_multi, n) for n in (3, 5, 9)]
    fori = [temp(after.f_fft_multi, n) for n in (3, 5, 9)]
    assert python_loop[0] < python_loop[1] < python_loop[2]  # grows with n (CPU: 4.4, 6.6, 11.1 MB)
    assert len(set(fori)) == 1  # constant (CPU: 2.2 MB)
    assert python_loop[1] > 2.5 * fori[1]


# -- JF206 fusion-blocking-barrier --------------------------------------------------------------------
def test_jf206_cpu_backend_drops_the_barrier():
    """What the rule's page says about CPU: XLA:CPU removes the barrier before fusion, so the
    notebook's two-kernel GPU result is one kernel here (the rule is about GPU behaviour)."""
    def with_barrier(x):
        s = jax.lax.optimization_barrier(jnp.sin(x) + 3)
        return s + jnp.exp(s)

    k, t = measure(with_barrier, SDS((1024 * 128, 2), jnp.float32))
    assert len(k) == 1 and t == 0


def test_jf206_checkpoint_prevent_cse_changes_nothing_forward():
    def get_im(x):
        return jnp.sin(jnp.arange(x.size).reshape(x.shape) ** 2.3)

    def plain(x):
        a = x + jnp.sum(get_im(x), axis=-1, keepdims=True)
        return a + get_im(x)

    def checkpointed(x):
        im = jax.checkpoint(get_im, prevent_cse=True)
        a = x + jnp.sum(im(x), axis=-1, keepdims=True)
        return a + im(x)

    x = SDS((1024 * 128, 2), jnp.float32)
    assert measure(plain, x) == measure(checkpointed, x)


# -- the codemods as libcst commands ------------------------------------------------------------------
@pytest.mark.parametrize("code,command,case,unsafe", [
    # A libcst command runs the rule as users get it: a calibrated rule follows its table.
    ("JF102", "GridFromIndicesCommand", "calibrated", False),
    ("JF103", "UnrollShortLoopCommand", "calibrated", False),
    ("JF205", "FoldIntoForiLoopCommand", "cases", True),
])
def test_libcst_tool_applies_the_same_fix(tmp_path, code, command, case, unsafe):
    target = tmp_path / "module.py"
    target.write_text((FIXTURES / code / f"{case}.py").read_text())
    args = ["-x", "--no-format", f"jaxfuse_lint.engine.libcst_commands.{command}", str(target)] + (["--unsafe-fixes"] if unsafe else [])
    env = {"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin", "JAX_PLATFORMS": "cpu"}
    proc = subprocess.run([sys.executable, "-m", "libcst.tool", "codemod", *args], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    expected = FIXTURES / code / f"{case}.{'unsafe' if unsafe else 'fixed'}.py"
    if code == "JF205":
        # As `--fix` does: JF205's tables show a trade of launches for temporaries, not a gain: no fix offered.
        expected = FIXTURES / code / f"{case}.py"
    assert target.read_text() == expected.read_text()
