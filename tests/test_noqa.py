"""Suppression: line, code-specific, file-level; strings that look like noqa do not count."""
from __future__ import annotations

from jaxfuse_lint.core.config import Settings
from jaxfuse_lint.engine.pipeline import check_source

HEAD = "import jax\nimport jax.numpy as jnp\nimport numpy as np\n\n\n@jax.jit\ndef f(x):\n    v = jnp.stack([x, x], axis=-1)\n"


def codes(src: str) -> list[tuple[int, str]]:
    return [(d.location.row, d.code) for d in check_source(src, "t.py", Settings()).diagnostics]


def test_line_noqa_all_and_specific():
    src = HEAD + "    a = jnp.sum(v, axis=-1)  # noqa\n    b = jnp.sum(v, axis=-1) + np.linspace(0.0, 1.0, 4096)  # noqa: JF201\n    return a + b\n"
    assert codes(src) == [(10, "JF101")]


def test_noqa_prefix_and_other_codes():
    src = HEAD + "    return jnp.sum(v, axis=-1) + np.linspace(0.0, 1.0, 4096)  # noqa: JF1, JF999\n"
    assert codes(src) == [(9, "JF201")]


def test_file_level():
    src = "# jaxfuse-lint: noqa: JF201\n" + HEAD + "    return jnp.sum(v, axis=-1) + np.linspace(0.0, 1.0, 4096)\n"
    assert codes(src) == [(10, "JF101")]
    assert codes("# jaxfuse-lint: noqa\n" + HEAD + "    return jnp.sum(v, axis=-1)\n") == []


def test_noqa_inside_a_string_does_not_suppress():
    src = HEAD + "    s = '# noqa'\n    return jnp.sum(v, axis=-1)\n"
    assert codes(src) == [(10, "JF101")]
