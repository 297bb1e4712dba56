"""`check --confirm`: a fusion finding in a function with known shapes is compiled before and after its
fix for the configured target (XLA:GPU deviceless here), then confirmed with the function's own
figures or dropped (runtime/confirm.py)."""
from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytest.importorskip("jax")

ROOT = Path(__file__).resolve().parent.parent

SOURCE = textwrap.dedent(
    '''\
    from __future__ import annotations

    from typing import TYPE_CHECKING

    import jax
    import jax.numpy as jnp

    if TYPE_CHECKING:
        from jaxtyping import Array, Float32


    @jax.jit
    def unit(p: Float32[Array, "65536 3"]):
        v = jnp.stack([p[:, 0] - p[:, 1], p[:, 1] - p[:, 2]], axis=-1)
        return v / jnp.sum(v * v, axis=-1, keepdims=True)


    @jax.jit
    def unknown_shapes(p):
        v = jnp.stack([p[:, 0] - p[:, 1], p[:, 1] - p[:, 2]], axis=-1)
        return v / jnp.sum(v * v, axis=-1, keepdims=True)
    '''
)


def run(*args, cwd):
    return subprocess.run([sys.executable, "-m", "jaxfuse_lint", "check", "--no-cache", "--select", "JF101", *args],
                          capture_output=True, text=True, cwd=cwd,
                          env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin", "HOME": str(cwd)})


def gpu_compiler_here() -> bool:
    from jaxfuse_lint.verify.backend import select

    return select("gpu").deviceless


def test_a_finding_is_confirmed_with_its_functions_own_figures(tmp_path):
    if not gpu_compiler_here():
        pytest.skip("no XLA:GPU compiler here (jax's CUDA plugin)")
    (tmp_path / "m.py").write_text(SOURCE)
    plain = run("m.py", cwd=tmp_path)
    assert plain.returncode == 1 and plain.stdout.count("JF101") == 2
    confirmed = run("--confirm", "m.py", cwd=tmp_path)
    assert "--confirm imports and runs the checked modules" in confirmed.stderr
    lines = [line for line in confirmed.stdout.splitlines() if "JF101" in line]
    assert len(lines) == 2
    unit, other = lines
    assert "confirmed by compiling `unit` for f32[65536,3] (jaxtyping annotations)" in unit
    assert "2 kernels, 512.0 KiB of temporaries → 1 kernel, no temporaries" in unit
    assert "confirmed" not in other  # no shapes: the table's decision stands


def test_a_finding_the_compile_does_not_show_is_dropped(tmp_path, monkeypatch):
    """The table is made to claim harm where the function's own compile shows none."""
    if not gpu_compiler_here():
        pytest.skip("no XLA:GPU compiler here (jax's CUDA plugin)")
    from jaxfuse_lint.core.config import Settings
    from jaxfuse_lint.core.diagnostics import Diagnostic, Location
    from jaxfuse_lint.runtime.confirm import confirm_findings

    source = SOURCE.replace("jnp.stack([p[:, 0] - p[:, 1], p[:, 1] - p[:, 2]], axis=-1)", "p[:, :2]", 1) \
        .replace("v / jnp.sum(v * v, axis=-1, keepdims=True)", "jnp.sum(v, axis=-1)", 1)
    path = tmp_path / "m.py"
    path.write_text(source)
    row = source.splitlines().index("    return jnp.sum(v, axis=-1)") + 1
    claimed = Diagnostic("JF101", "small-axis-reduction", "claimed", str(path), Location(row, 12), Location(row, 31))
    said = []
    kept = confirm_findings([claimed], Settings(), echo=said.append, keep_preview=False)
    assert kept == []
    assert any("dropped: compiling `unit` for f32[65536,3]" in line and "shows no harm" in line for line in said)


# -- issue 41, item 4: a trade-off is called a trade-off ----------------------------------------------

def test_a_trade_off_is_never_called_no_harm():
    from jaxfuse_lint.core.calibration import Figures, verdict
    from jaxfuse_lint.runtime.confirm import outcome_text

    before, after = Figures(6, 19, 4 << 20, 0), Figures(4, 4, 8 << 20, 0)
    assert verdict(before, after, code="JF103") == "mixed"
    text = outcome_text("mixed", before, after)
    assert text == ("shows a trade-off, not a gain: better on kernels 6 → 4, launches 19 → 4; "
                    "worse on temporaries 4.0 MiB → 8.0 MiB")
    assert "no harm" not in text
    worse = outcome_text("worse", Figures(2, 2, 0, 0), Figures(3, 3, 0, 0))
    assert worse == "shows the fix makes it worse (kernels 2 → 3, launches 2 → 3)"
    assert outcome_text("none", Figures(1, 1, 0, 0), Figures(1, 1, 0, 0)).startswith("shows no harm (")


STENCIL = textwrap.dedent(
    '''\
    from __future__ import annotations

    from typing import TYPE_CHECKING

    import jax
    import jax.numpy as jnp

    if TYPE_CHECKING:
        from jaxtyping import Array, Float32


    @jax.jit
    def smooth(u: Float32[Array, "1024 1024"]):
        def sweep(i, v):
            return 0.25 * (jnp.roll(v, 1, 0) + jnp.roll(v, -1, 0) + jnp.roll(v, 1, 1) + jnp.roll(v, -1, 1))

        return jax.lax.fori_loop(0, 4, sweep, u)
    '''
)


def test_confirm_calls_the_unrolled_stencil_a_trade_off(tmp_path):
    """The roll stencil is outside JF103's table (a preview finding); compiled, unrolling it trades
    temporaries for launches: dropped, and said to be a trade-off."""
    if not gpu_compiler_here():
        pytest.skip("no XLA:GPU compiler here (jax's CUDA plugin)")
    (tmp_path / "m.py").write_text(STENCIL)
    proc = subprocess.run([sys.executable, "-m", "jaxfuse_lint", "check", "--no-cache", "--select", "JF103",
                           "--preview", "--confirm", "m.py"], capture_output=True, text=True, cwd=tmp_path,
                          env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)})
    assert "JF103" not in proc.stdout, proc.stdout
    assert "dropped: compiling `smooth` for f32[1024,1024]" in proc.stderr, proc.stderr
    assert "shows a trade-off, not a gain: better on kernels 6 → 4, launches 19 → 4; worse on temporaries " \
           "4.0 MiB → 8.0 MiB" in proc.stderr, proc.stderr
    assert "no harm" not in proc.stderr
