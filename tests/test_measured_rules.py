"""The measured rules (JF501-JF503) on profiles written here: they name the cause (issue 43).

JF502 names the line that captured a constant, once; JF503 reports lines that share kernels once,
naming the kernels and the backend that measured them; JF501 counts waste (a fresh callable, a
static value that churns), not a test's deliberate sweep of shapes."""
from __future__ import annotations

import json
import textwrap
from dataclasses import replace

from jaxfuse_lint.core.config import Settings
from jaxfuse_lint.core.profile import FORMAT, text_digest
from jaxfuse_lint.engine import check_source
from jaxfuse_lint.runtime.use import with_profile


def _check(tmp_path, text: str, profile: dict, code: str, **settings) -> list:
    path = tmp_path / "profile.json"
    path.write_text(json.dumps({"format": FORMAT, "version": 1, "processes": [], "functions": [], "lines": [],
                                **profile}))
    chosen, _ = with_profile(replace(Settings(), select=(code,), **settings), str(path))
    return [d for d in check_source(text, "m.py", chosen).diagnostics if d.code == code]


def _entry(text: str, qualname: str, line: int, **fields) -> dict:
    digest = text_digest(text)
    return {"id": f"{digest}:{qualname}:{line}", "file": "m.py", "sha256": digest, "qualname": qualname,
            "line": line, "api": "jax.jit", "signatures": [], "compilations": [], "constants": [], **fields}


def _ref(text: str, line: int) -> dict:
    return {"file": "m.py", "sha256": text_digest(text), "line": line}


DESIGN = textwrap.dedent("""\
    import jax
    import numpy as np

    FMAT = np.ones((1024, 1024))


    def helper(m, x):
        return m @ x


    def make():
        design = lambda params: FMAT

        def loss(params, x):
            F = design(params)
            return helper(F, x).sum() + helper(F, 2 * x).sum()

        return jax.jit(loss)
""")


def test_jf502_names_the_line_that_captured_the_constant_once(tmp_path):
    const = {"bytes": 8 << 20, "shape": "f64[1024,1024]",
             "lines": [_ref(DESIGN, 8)],  # the helper's matmul, where the array is a parameter
             "captures": [_ref(DESIGN, 12)],  # `design = lambda params: FMAT`
             "entry_lines": [_ref(DESIGN, 16)]}
    entry = _entry(DESIGN, "make.<locals>.loss", 14, constants=[const])
    found = _check(tmp_path, DESIGN, {"entries": [entry]}, "JF502", constant_bytes_max=1 << 20)
    assert [d.location.row for d in found] == [12]
    assert "captured a 8.0 MiB constant (f64[1024,1024]) read here from outside the trace" in found[0].message


def test_jf502_without_a_capture_names_the_entrys_own_line_not_a_helpers(tmp_path):
    const = {"bytes": 8 << 20, "shape": "f64[1024,1024]", "lines": [_ref(DESIGN, 8)], "captures": [],
             "entry_lines": [_ref(DESIGN, 16)]}
    entry = _entry(DESIGN, "make.<locals>.loss", 14, constants=[const])
    found = _check(tmp_path, DESIGN, {"entries": [entry]}, "JF502", constant_bytes_max=1 << 20)
    assert [d.location.row for d in found] == [16]


KERNELS = textwrap.dedent("""\
    import jax
    import jax.numpy as jnp


    @jax.jit
    def f(x):
        y = jnp.sin(x) @ x
        z = jnp.cos(y) * y
        return jnp.cumsum(z, axis=0)
""")


def test_jf503_reports_lines_that_share_kernels_once_naming_them_and_the_backend(tmp_path):
    entry = _entry(KERNELS, "f", 5)
    digest = text_digest(KERNELS)

    def line(n: int, kernels: list[str], size: int) -> dict:
        return {"file": "m.py", "sha256": digest, "line": n, "entry": entry["id"], "backend": "cpu",
                "temp_bytes": size, "constant_bytes": 0, "kernels": len(kernels), "kernel_names": kernels,
                "copies": 0, "own": True}

    lines = [line(7, ["dot.1", "fusion.2"], 32 << 20), line(8, ["fusion.2", "fusion.3"], 32 << 20),
             line(9, ["reduce-window.4"], 20 << 20)]
    found = _check(tmp_path, KERNELS, {"entries": [entry], "lines": lines}, "JF503", temporary_bytes_max=16 << 20)
    assert [d.location.row for d in found] == [7, 9]
    assert found[0].message.startswith("lines 7-8 share 3 kernels: dot.1, fusion.2, fusion.3, which write 32.0 MiB "
                                       "of temporaries in the program of `jax.jit(f)`, measured on CPU in the "
                                       "recorded run")
    assert "this line writes 20.0 MiB of temporaries in the program of `jax.jit(f)` (1 kernel: reduce-window.4), " \
           "measured on CPU" in found[1].message


SWEEP = textwrap.dedent("""\
    import functools
    import jax


    @functools.partial(jax.jit, static_argnums=1)
    def scale(x, n):
        return x * n
""")


def _compilations(kinds: list[str], where: str) -> list[dict]:
    return [{"signature": i, "pid": 1, "kind": kind, "where": where} for i, kind in enumerate(kinds)]


def _sigs(n: int) -> list[dict]:
    return [{"args": [{"name": "x", "shape": [i + 1], "dtype": "float32"}], "static": {"n": "2"}}
            for i in range(n)]


def test_jf501_a_tests_sweep_of_shapes_is_not_waste(tmp_path):
    kinds = ["first"] + ["shape"] * 7
    entry = _entry(SWEEP, "scale", 5, signatures=_sigs(8),
                   compilations=_compilations(kinds, "tests/test_s.py::test_dispatch"))
    assert _check(tmp_path, SWEEP, {"entries": [entry]}, "JF501") == []
    # The same shapes compiled by a script (no test chose them) are what users pay.
    entry = _entry(SWEEP, "scale", 5, signatures=_sigs(8), compilations=_compilations(kinds, "run.py:12"))
    assert len(_check(tmp_path, SWEEP, {"entries": [entry]}, "JF501")) == 1


def test_jf501_a_static_value_that_churns_or_a_fresh_callable_is_waste_even_in_a_sweep(tmp_path):
    kinds = ["first", "shape", "shape", "static", "static", "fresh-callable", "shape"]
    entry = _entry(SWEEP, "scale", 5, signatures=_sigs(7),
                   compilations=_compilations(kinds, "tests/test_s.py::test_dispatch"))
    (found,) = _check(tmp_path, SWEEP, {"entries": [entry]}, "JF501")
    assert "was compiled 4 times in one recorded run (tests/test_s.py::test_dispatch)" in found.message
    assert "3 more for new shapes, a sweep the test chose, not counted" in found.message
