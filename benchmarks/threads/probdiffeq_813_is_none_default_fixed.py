# Thread: https://github.com/pnkraemer/probdiffeq/pull/813
# Diagnosis (@pnkraemer, probdiffeq maintainer): "Fix a tracer conversion issue" (the `output_scale or default` replaced by an `is None` test)
# Trap: the maintainer's fix tests `output_scale is None` (a Python test of the argument's identity), so a traced output scale passes through. Nothing should be reported.
# (The prior constructor reduced to a dense state-space model; the backend's numpy is jax.numpy.)
import jax
import jax.numpy as jnp


class DenseSSM:
    def __init__(self, num_derivatives, ode_dim):
        self.num_derivatives = num_derivatives
        self.ode_dim = ode_dim

    def output_scale_prototype(self):
        return jnp.empty(())

    def ibm_transitions(self, output_scale):
        n = self.num_derivatives + 1

        def discretize(dt):
            A = jnp.triu(jnp.ones((n, n))) * dt
            Q = output_scale**2 * dt * jnp.eye(n)
            return A, Q

        return discretize


def prior_ibm(tcoeffs, *, output_scale=None):
    ssm = DenseSSM(len(tcoeffs) - 1, tcoeffs[0].shape[-1])
    if output_scale is None:
        output_scale = jnp.ones_like(ssm.output_scale_prototype())
    discretize = ssm.ibm_transitions(output_scale=output_scale)
    return discretize, ssm


@jax.jit
def first_transition(u0, du0, output_scale, dt):
    discretize, _ = prior_ibm((u0, du0), output_scale=output_scale)
    return discretize(dt)


A, Q = first_transition(jnp.ones(2), jnp.zeros(2), 2.0, 0.1)
