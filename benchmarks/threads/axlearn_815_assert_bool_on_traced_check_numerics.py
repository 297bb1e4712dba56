# Thread: https://github.com/apple/axlearn/issues/815
# Diagnosis (@ds-hwang, axlearn developer, issue author): "`assert bool(jnp.isfinite(x).all()), ...` doesn't work with traced `x`." ... "So `check_numerics` doesn't work inside `jit`, `pmap`, and `scan`."
# Problem: a numerics check asserts bool() of a jnp reduction; reached from a checkpointed, jitted layer it raises TracerBoolConversionError.
# Written for this corpus after the helper quoted in the issue (same idiom; the layer is a stand-in for the checkpointed fn in the traceback).
import jax
import jax.numpy as jnp

_enable_numeric_checks = True


def check_numerics(x, msg_fmt="", **msg_kwargs):
    """Checks that all elements in `x` are finite."""
    if _enable_numeric_checks:
        assert bool(jnp.isfinite(x).all()), f"Check numerics {msg_fmt.format(**msg_kwargs)}"  # expect: JF402


@jax.checkpoint
def layer(inputs):
    check_numerics(inputs, msg_fmt="layer {name}", name="repeat")
    return jnp.tanh(inputs)


jax.jit(layer)(jnp.ones((4,)))
