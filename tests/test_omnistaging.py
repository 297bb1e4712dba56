"""Omnistaging: jax array operations in staged code give tracers whatever their inputs, only
where the route really stages (not an eager `jax.jacrev`/`grad`/`vmap`), and not under
`jax.ensure_compile_time_eval()`."""
from __future__ import annotations

from pathlib import Path

from jaxfuse_lint.core.config import Settings
from jaxfuse_lint.engine.pipeline import check_source
from jaxfuse_lint.run.runner import check_files

HELPER = '''
import jax.numpy as jnp


def project(x, w, c, check=False):
    if check:
        if jnp.dot(w, w) > c:
            raise ValueError("infeasible")
    return x * w
'''

EAGER = '''
import jax

from pkg.helper import project

jacobian = jax.jacrev(project)
'''

COMPILED = '''
import jax

from pkg.helper import project

fast = jax.jit(project, static_argnames="check")
checked = fast(1.0, 2.0, 3.0, check=True)
'''


def _project(tmp_path: Path, *users: str) -> list[Path]:
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "helper.py").write_text(HELPER)
    for i, text in enumerate(users):
        (pkg / f"user{i}.py").write_text(text)
    return sorted(pkg.glob("*.py"))


def _rows(run) -> list[tuple[str, int]]:
    return sorted((Path(d.filename).name, d.location.row) for d in run.diagnostics if d.code == "JF402")


def test_an_eager_route_from_another_module_sees_concrete_values(tmp_path: Path):
    run = check_files(_project(tmp_path, EAGER), Settings(select=("JF402",)), jobs=1)
    assert _rows(run) == []


def test_a_compiled_route_from_another_module_stages_every_jax_operation(tmp_path: Path):
    run = check_files(_project(tmp_path, COMPILED), Settings(select=("JF402",)), jobs=1)
    assert _rows(run) == [("helper.py", 7)]


SOURCE = '''
import jax
import jax.numpy as jnp


@jax.jit
def staged(x):
    if jnp.arange(3)[0] > 0:
        x = x + 1
    return x


@jax.jit
def compile_time(x):
    with jax.ensure_compile_time_eval():
        if jnp.arange(3)[0] > 0:
            x = x + 1
    return x


def eager(x):
    if jnp.arange(3)[0] > 0:
        x = x + 1
    return x


grad_eager = jax.grad(eager)
vmapped = jax.vmap(eager)
'''


def test_only_staged_code_outside_compile_time_eval():
    result = check_source(SOURCE, "m.py", Settings(select=("JF402",)))
    assert [d.location.row for d in result.diagnostics] == [8]
    assert "is staged out like every jax array operation" in result.diagnostics[0].message
