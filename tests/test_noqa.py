"""Suppression: line, code-specific, file-level; strings that look like noqa do not count."""
from __future__ import annotations

from jaxfuse_lint.core.config import Settings
from jaxfuse_lint.engine.pipeline import check_source

HEAD = "import jax\nimport jax.numpy as jnp\nimport numpy as np\n\n\n@jax.jit\ndef f(x, y, z):\n    v = jnp.stack([x, y, z], axis=-1)\n"
NORM = "v * jnp.sum(v * v, axis=-1, keepdims=True)"  # a form the default tables report (JF101)
EYE = "np.eye(64)"  # a constant folded into the program, reported by default (JF201)


def codes(src: str) -> list[tuple[int, str]]:
    return [(d.location.row, d.code) for d in check_source(src, "t.py", Settings()).diagnostics]


def test_line_noqa_all_and_specific():
    src = HEAD + f"    a = {NORM}  # noqa\n    b = {NORM} + {EYE}  # noqa: JF201\n    return a + b\n"
    assert codes(src) == [(10, "JF101")]


def test_noqa_prefix_and_other_codes():
    src = HEAD + f"    return {NORM} + {EYE}  # noqa: JF1, JF999\n"
    assert codes(src) == [(9, "JF201")]


def test_file_level():
    src = "# jaxfuse-lint: noqa: JF201\n" + HEAD + f"    return {NORM} + {EYE}\n"
    assert codes(src) == [(10, "JF101")]
    assert codes(HEAD + f"    return {NORM}\n") == [(9, "JF101")]
    assert codes("# jaxfuse-lint: noqa\n" + HEAD + f"    return {NORM}\n") == []


def test_noqa_inside_a_string_does_not_suppress():
    src = HEAD + f"    s = '# noqa'\n    return {NORM}\n"
    assert codes(src) == [(10, "JF101")]
