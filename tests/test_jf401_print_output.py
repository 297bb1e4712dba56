"""JF401's fix prints what the `print` it replaces printed: each case runs the original
`print` eagerly (where it shows values, not tracers) and the fixed `jax.debug.print` under
`jax.jit`, and compares the text. Cases the fix cannot render exactly must get no fix."""
from __future__ import annotations

import contextlib
import io
import textwrap
from dataclasses import replace

import pytest

from jaxfuse_lint.core.config import Settings
from jaxfuse_lint.engine.pipeline import check_source, fix_source

jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")

SETTINGS = replace(Settings(), select=("JF401",))


def module(line: str) -> str:
    return textwrap.dedent(f"""\
        import jax
        import jax.numpy as jnp


        def f(p1, p2):
            {line}
            return p1


        f_jit = jax.jit(f)
        """)


def run(source: str, name: str) -> str:
    namespace: dict = {}
    exec(compile(source, "m.py", "exec"), namespace)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        namespace[name](jnp.float32(1.5), jnp.arange(3))
        jax.effects_barrier()
    return out.getvalue()


@pytest.mark.parametrize("line", [
    'print(f"pair {p1, p2}")',
    'print(f"pair {p1, p2,} and {(p2, p1)}")',
    'print(f"spec {p1:.3f} conv {p2!r} both {p1!r:>30} ascii {p1!a}")',
    'print(f"{p1} literal {{x}} {{{p1}}} }}}}")',
    'print("plain", (p1, p2), p2, sep="|")',
    'print("a", p1, "b", end="!\\n")',
    'print(f"shape {p2.shape}: {p2}")',
    'print(f"{p1 * 2:8.2f}|{p2 + 1}")',
])
def test_fixed_print_shows_the_same_text(line):
    source = module(line)
    outcome = fix_source(source, "m.py", SETTINGS)
    assert not outcome.errors and not outcome.dropped
    assert "jax.debug.print(" in outcome.source and "print(f" not in outcome.source.replace("debug.print", "")
    assert run(outcome.source, "f_jit") == run(source, "f")


@pytest.mark.parametrize("line", [
    'print(f"mixed {p1, 3}")',  # the 3 would print as an array
    'print(f"eq {p1=}")',
    'w = 5; print(f"nested {p1:{w}}")',
    'print(f"star {(*p2,)}")',
    'print(f"literal {{x}} before {p1}")',  # jax.debug.print would not format at all
])
def test_no_fix_where_the_text_would_change(line):
    source = module(line)
    result = check_source(source, "m.py", SETTINGS)
    found = [d for d in result.diagnostics if d.code == "JF401"]
    assert found and all(d.fix is None for d in found)


def test_the_fix_keeps_the_quotes_of_the_string_it_rewrites():
    from dataclasses import replace as _replace

    from jaxfuse_lint.core.config import Settings as _Settings
    from jaxfuse_lint.engine.pipeline import fix_source as _fix

    source = ("import jax\n\n\n@jax.jit\ndef g(x):\n    print('value', x)\n    print(f'x = {x}')\n"
              "    print(\"double\", x)\n    print('it\"s', x)\n    print(x)\n    return x\n")
    fixed = _fix(source, "m.py", _replace(_Settings(), select=("JF401",))).source
    assert "    jax.debug.print('value {}', x)\n" in fixed
    assert "    jax.debug.print('x = {}', x)\n" in fixed
    assert '    jax.debug.print("double {}", x)\n' in fixed
    assert "    jax.debug.print('it\"s {}', x)\n" in fixed  # the text holds the other quote: kept
    assert '    jax.debug.print("{}", x)\n' in fixed
