# Thread: https://github.com/asantini29/phentax/pull/28
# Diagnosis (@jperret21, PR author: "Calling `IMRPhenomTHM` inside a `jax.jit` context raises a `ConcretizationTypeError`": "`int(jnp.ceil(T / delta_t))` — `jnp.ceil` returns an abstract tracer inside JIT, and `int()` cannot concretize it", "The spin bound `assert jnp.all(...)` also raises during tracing"; @asantini29, phentax maintainer: "your fixes look great!", merged)
# Problem: the waveform's initial processing asserts on the (traced) spins and computes the number of time steps from static floats with `jnp.ceil` before `int()`, and the grid-size helper it calls does the same; under `jax.jit` every one of these needs a concrete value.
# Written for this corpus after src/phentax/waveform.py and src/phentax/utils/coarse_graining.py before that PR (same structure, reduced; the jitted caller shows how it runs).
import jax
import jax.numpy as jnp

BUCKET_SIZE = 512


def estimate_adaptive_steps(eta, tmin, tmax):
    C = 0.25 * eta
    N_post = jnp.where(tmax > 0.0, jnp.ceil(tmax / C), 0.0) + 1.0
    N_fine = jnp.ceil(1.0 / C)
    N_adaptive = jnp.maximum(-tmin - N_fine * C, 0.0)
    N_total = int(jnp.ceil(jnp.max(N_post + N_fine + N_adaptive) * 1.2)) + 200  # expect?: JF405
    N_total = int(jnp.ceil(N_total / BUCKET_SIZE) * BUCKET_SIZE)  # expect?: JF405
    return max(N_total, BUCKET_SIZE)


def estimate_adaptive_steps_from_T(T, delta_t=15.0):
    eta_worst = 0.25
    num_steps = T / delta_t
    return estimate_adaptive_steps(eta_worst, -num_steps, 0.0)


class IMRPhenomTHM:

    def __init__(self, T=3.15e7):
        self.T = T
        self.max_adaptive_steps = None

    def initial_processing(self, m1, m2, chi1z, chi2z, delta_t=15.0, T=None):
        assert jnp.all(  # expect: JF402
            jnp.abs(jnp.atleast_1d(chi1z)) <= 1
        ), "Spin must be between -1 and 1"
        assert jnp.all(  # expect: JF402
            jnp.abs(jnp.atleast_1d(chi2z)) <= 1
        ), "Spin must be between -1 and 1"

        if T is None:
            T = self.T

        num_steps = int(jnp.ceil(T / delta_t))  # expect: JF405

        new_max = estimate_adaptive_steps_from_T(T, delta_t)
        if self.max_adaptive_steps is None or new_max > self.max_adaptive_steps:
            self.max_adaptive_steps = new_max
        times = jnp.arange(num_steps) * delta_t
        return (m1 + m2) * times


wf = IMRPhenomTHM()


@jax.jit
def generate(m1, m2, chi1z, chi2z):
    return wf.initial_processing(m1, m2, chi1z, chi2z)


generate(30.0, 20.0, 0.3, -0.2)
