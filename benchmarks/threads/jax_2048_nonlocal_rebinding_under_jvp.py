# Thread: https://github.com/jax-ml/jax/issues/2048
# Diagnosis (@mattjj, JAX maintainer): "The trouble here is there's a side-effect, namely where you write `x = y` for the nonlocal `x`. Side-effects void your JAX warranty (i.e. JAX transformations only work on pure functions)"
# Problem: a function differentiated with `jax.jvp` rebinds a variable of its enclosing function through `nonlocal`; the tracer escapes into the outer scope ("Can't lift Traced value", or "Different traces at same level" in the second example).
import jax


def D(f, x):
    return jax.jvp(f, (x,), (1.0,))[1]


def f(x):
    def inner(y):
        nonlocal x
        x = y  # expect: JF403
        return x
    return D(inner, x)*x


D(f, 1.0)  # Exception: Can't lift Traced<ConcreteArray(1.0)>...


def test():
    x = 1
    def inner(y):
        nonlocal x
        x = x*y  # expect: JF403
        return x
    a = D(inner, 1.0)
    b = D(inner, 1.0)
    return b


test()  # Exception: Different traces at same level
