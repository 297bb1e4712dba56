"""Texts libcst and CPython read differently (issue 37, item 12): a line holding only a
backslash continues onto the next one (valid Python before a decorator, which libcst rejected
or silently dropped from fixed code), and a NUL byte in a comment (CPython rejects the file,
libcst did not: the fixes it offered could never be applied)."""
from __future__ import annotations

import pytest

from jaxfuse_lint.core.config import Settings
from jaxfuse_lint.engine.pipeline import check_source, fix_source

FIXABLE = "    return x + np.eye(64)\n"  # JF201 by default (a folded constant of 16 KiB)


@pytest.mark.parametrize("source", [
    "import jax\nimport numpy as np\n\\\n@jax.jit\ndef f(x):\n" + FIXABLE,
    "import jax\nimport numpy as np\ndef h():\n    pass\n\\\n@jax.jit\ndef f(x):\n" + FIXABLE,
    "import jax\nimport numpy as np\ndef g():\n    \\\n    @jax.jit\n    def f(x):\n    " + FIXABLE + "    return f\n",
    "import jax\r\nimport numpy as np\r\n\\\r\n\\\r\n@jax.jit\r\ndef f(x):\r\n" + FIXABLE.replace("\n", "\r\n"),
], ids=["module", "after-a-def", "in-a-function", "crlf-twice"])
def test_a_lone_backslash_line_before_a_decorator_is_read_as_python_reads_it(source):
    compile(source, "m.py", "exec")  # valid Python
    result = check_source(source, "m.py", Settings())
    assert [d.code for d in result.diagnostics] == ["JF201"], result.diagnostics
    (d,) = result.diagnostics
    assert d.fix is not None
    outcome = fix_source(source, "m.py", Settings())
    assert "jnp.eye(64)" in outcome.source
    # Every line but the fixed one and the import it adds is kept, the backslash lines too.
    kept = [ln for ln in outcome.source.splitlines(keepends=True)
            if "jnp" not in ln and ln.strip()]
    assert kept == [ln for ln in source.splitlines(keepends=True) if "np.eye" not in ln and ln.strip()]


def test_a_backslash_line_indented_unlike_the_line_it_continues_is_reported_not_misread():
    """Python takes the indentation of a logical line from its first physical line, the
    backslash's: libcst would take the next line's. Such a file is reported, not analysed wrongly."""
    source = "import jax\nif True:\n    x = 1\n\\\n    y = 2\n"
    try:
        compile(source, "m.py", "exec")
        valid = True
    except SyntaxError:
        valid = False
    (d,) = check_source(source, "m.py", Settings()).diagnostics
    assert d.code == "JF000" and d.location.row == 4
    if valid:
        assert "indented differently" in d.message


def test_a_nul_in_a_comment_is_jf000_at_the_nul():
    source = "import jax\nimport numpy as np\n# a \x00 nul\n\n@jax.jit\ndef f(x):\n" + FIXABLE
    result = check_source(source, "m.py", Settings())
    assert [(d.code, d.location.row, d.location.column) for d in result.diagnostics] == [("JF000", 3, 5)]
    assert "null bytes" in result.diagnostics[0].message
    outcome = fix_source(source, "m.py", Settings())
    assert outcome.source == source and [d.code for d in outcome.remaining] == ["JF000"]
