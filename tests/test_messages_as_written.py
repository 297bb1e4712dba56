"""Messages quote the code as the user wrote it, not the canonical spelling (issue 28, item 3):
`np.sum` under `import jax.numpy as np`, `onp.arange` under `import numpy as onp`, `jit` after
`from jax import jit`."""
from dataclasses import replace

from jaxfuse_lint.core.calibration import RAW
from jaxfuse_lint.core.config import Settings
from jaxfuse_lint.engine.pipeline import check_source
from jaxfuse_lint.model.names import as_written, canonical_short
import libcst as cst

SOURCE = '''\
import functools
import jax
import numpy as onp
import jax.numpy as np
from jax import jit


@jit
def f(x):
    assert x.shape[-1] == 2
    y = np.sum(x, axis=-1)
    return y + onp.arange(x.size).reshape(x.shape)[..., 0] ** 2.3


@functools.partial(jax.jit, static_argnums=1)
def g(x, n):
    assert x.shape[-1] == 3
    return jax.numpy.sum(x, axis=-1) * n + onp.linspace(0, 1, x.shape[0])
'''


def messages():
    # The calibrated rules' raw pattern (calibration.RAW): their tables keep some of these small forms
    # silent or in the preview tier; what is checked here is how the messages spell the code.
    result = check_source(SOURCE, "m.py", replace(Settings(), select=("JF101", "JF201"), extra=(RAW,)))
    return {(d.code, d.location.row): d for d in result.diagnostics}


def test_messages_quote_the_callee_as_written():
    found = messages()
    assert found[("JF101", 11)].message.startswith("`np.sum` reduces axis -1")
    assert "decorated with `jit` on line 8" in found[("JF201", 12)].message
    assert found[("JF201", 12)].message.startswith("`onp.arange` builds a NumPy array")
    assert "(`onp.arange`)" in found[("JF201", 12)].fix.message
    assert found[("JF101", 18)].message.startswith("`jax.numpy.sum` reduces")
    assert "decorated with `jax.jit` on line 15" in found[("JF201", 18)].message
    assert not any("`jnp." in d.message for d in found.values())
    # As the tables decide (the message then cites the compiler's figures), the spelling is the same.
    table = check_source(SOURCE, "m.py", replace(Settings(), select=("JF201",))).diagnostics
    reported = {d.location.row: d for d in table}
    assert reported[12].message.startswith("`onp.arange` builds a NumPy array") and "XLA:GPU" in reported[12].message
    assert "(`onp.arange`)" in reported[12].fix.message and not any("`jnp." in d.message for d in table)


def test_as_written_falls_back_to_the_conventional_short_name():
    call = cst.parse_expression("fns[0](x)")
    assert as_written(call, "jax.numpy.sum") == "jnp.sum"
    assert as_written(cst.parse_expression("net.apply(p, x)"), "jax.jit", same_name=True) == "jax.jit"
    assert canonical_short("numpy.linalg.norm") == "np.linalg.norm"
    assert canonical_short("jax.lax.scan") == "lax.scan"


def test_jf301_and_jf302_name_the_transform_as_written():
    source = ("from jax import jit\nimport jax\n\n\ndef f(x):\n    return x * 2\n\n\ndef loop(xs):\n"
              "    return [jit(f)(x) for x in xs]\n\n\ndef loop2(xs):\n    for x in xs:\n"
              "        @jit\n        def h(v):\n            return v + 1\n        h(x)\n\n\n"
              "def fresh(x):\n    return jit(lambda v: v * 2)(x)\n\n\ndef canonical(xs):\n"
              "    return [jax.jit(f)(x) for x in xs]\n")
    # (preview: a new wrapper per item of `xs` is reported by default only where the loop is shown to repeat many times)
    result = check_source(source, "m.py", replace(Settings(), select=("JF301", "JF302"), preview=True))
    found = {(d.code, d.location.row): d.message for d in result.diagnostics}
    assert found[("JF301", 10)].startswith("`jit` of the module-level function `f` inside a comprehension")
    assert found[("JF301", 15)].startswith("`jit` of `h` (a `def` in the loop body)")
    assert "`jit`" in found[("JF302", 22)] and "`jax.jit`" not in found[("JF302", 22)]
    assert found[("JF301", 26)].startswith("`jax.jit` of the module-level function `f`")
