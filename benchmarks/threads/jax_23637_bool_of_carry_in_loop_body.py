# Thread: https://github.com/jax-ml/jax/issues/23637
# Diagnosis (@mattjj, JAX maintainer): "jax.errors.TracerBoolConversionError: Attempted boolean conversion of traced array with shape float32[]. The error occurred while tracing the function body ... for scan. This concrete value was not available in Python because it depends on the value of the argument c."
# Problem: a lax.scan body and a lax.fori_loop body call bool() on the traced carry.
import jax


def body(c, _): return bool(c), None  # expect: JF402
jax.lax.scan(body, 3., None, length=1)


def body(_, c): return bool(c)  # expect: JF402
jax.lax.fori_loop(0, 5, body, 3.)
