# Thread: https://github.com/jax-ml/jax/issues/3086
# Diagnosis (@hawkinsp, JAX maintainer, closing the issue with the leak checker): "I think we can consider this fixed by `jax_check_tracer_leaks`" (his example stores the traced argument in a global from inside the jitted function, which the checker reports as a leaked tracer)
# Problem: a jitted function assigns its traced argument to a module-level global; after the call the global holds an escaped tracer, and later uses fail with UnexpectedTracerError.
import jax

jax.config.update("jax_check_tracer_leaks", True)
x = None


@jax.jit
def f(y):
    global x
    x = y  # expect: JF403
    return y + 2


f(7)
