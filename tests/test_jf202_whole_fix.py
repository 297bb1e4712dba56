"""The JF202 fix is whole or not offered (issue 36, item 6).

Of two module-level tables read in one function, `--fix --unsafe-fixes` rebuilt one inside the
function and left the other captured (`"fix": null`): the program kept its constant and gained
the kernels that rebuild the first (verify: 10 → 11 kernels). A function's captured NumPy arrays
are now rebuilt together, in one fix that every one of their diagnostics offers, or not at all.
"""
from __future__ import annotations

from dataclasses import replace

from jaxfuse_lint.core.calibration import RAW
from jaxfuse_lint.core.config import Settings
from jaxfuse_lint.engine.pipeline import check_source, fix_source

# The rule's raw pattern, whatever its calibration table says of these small tables (64 elements, or
# sizes it cannot see): these tests are about how the fix is put together, not about the table.
SETTINGS = replace(Settings(), select=("JF202",), extra=(RAW,))
HEAD = "import jax\nimport jax.numpy as jnp\nimport numpy as np\n\n"


def fixes(source: str) -> list:
    return [d.fix for d in check_source(source, "m.py", SETTINGS).diagnostics]


def test_one_table_that_cannot_be_rebuilt_leaves_the_others_without_a_fix():
    source = HEAD + ("N = 64\nK = np.fft.fftfreq(N)\nWINDOW = np.load('window.npy')\n\n\n@jax.jit\n"
                     "def smooth(x):\n    return jnp.fft.ifft(jnp.fft.fft(x) * WINDOW * K).real\n")
    assert fixes(source) == [None, None]
    assert fix_source(source, "m.py", SETTINGS, unsafe=True).source == source


def test_every_table_of_the_function_is_rebuilt_by_one_fix():
    source = HEAD + ("K = np.fft.fftfreq(64)\nL = np.linspace(0.0, 1.0, 64)\n\n\n@jax.jit\n"
                     "def smooth(x):\n    return x * K + x * L\n")
    found = fixes(source)
    assert len(found) == 2 and all(f is not None for f in found)
    assert found[0].message == found[1].message == "Build `K` and `L` with `jnp` inside `smooth`"
    assert found[0].edits == found[1].edits
    assert found[0].detail.startswith("unsafe: ")
    fixed = fix_source(source, "m.py", SETTINGS, unsafe=True)
    assert "    K = jnp.fft.fftfreq(64)\n    L = jnp.linspace(0.0, 1.0, 64)\n    return x * K + x * L\n" in fixed.source
    assert fixed.remaining == []


def test_a_table_built_from_another_brings_it_along_in_order():
    source = HEAD + ("K = np.fft.fftfreq(64)\nDAMP = np.exp(-K ** 2)\n\n\n@jax.jit\n"
                     "def smooth(x):\n    return jnp.fft.ifft(jnp.fft.fft(x) * DAMP).real\n")
    fixed = fix_source(source, "m.py", SETTINGS, unsafe=True)
    assert ("def smooth(x):\n    K = jnp.fft.fftfreq(64)\n    DAMP = jnp.exp(-K ** 2)\n    return jnp.fft.ifft("
            in fixed.source)
    assert fixed.remaining == []
    [fix] = fixes(source)
    assert fix.message == "Build `DAMP` (and `K`, which it is built from) with `jnp` inside `smooth`"


def test_in_a_lambda_the_read_is_replaced_but_never_computed_twice():
    once = HEAD + "def make(n):\n    grid = np.linspace(0.0, 1.0, n)\n    return jax.jit(lambda x: x * grid)\n"
    fixed = fix_source(once, "m.py", SETTINGS, unsafe=True)
    assert "jax.jit(lambda x: x * jnp.linspace(0.0, 1.0, n))" in fixed.source and fixed.remaining == []
    twice = once.replace("lambda x: x * grid", "lambda x: x * grid + grid")
    assert fixes(twice) == [None, None]
