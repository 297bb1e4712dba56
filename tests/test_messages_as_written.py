"""Messages quote the code as the user wrote it, not the canonical spelling (issue 28, item 3):
`np.sum` under `import jax.numpy as np`, `onp.arange` under `import numpy as onp`, `jit` after
`from jax import jit`."""
from dataclasses import replace

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
    result = check_source(SOURCE, "m.py", replace(Settings(), select=("JF101", "JF201")))
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


def test_as_written_falls_back_to_the_conventional_short_name():
    call = cst.parse_expression("fns[0](x)")
    assert as_written(call, "jax.numpy.sum") == "jnp.sum"
    assert as_written(cst.parse_expression("net.apply(p, x)"), "jax.jit", same_name=True) == "jax.jit"
    assert canonical_short("numpy.linalg.norm") == "np.linalg.norm"
    assert canonical_short("jax.lax.scan") == "lax.scan"
