# Thread: https://github.com/GalacticDynamics/coordinax/commit/59a45224c4c8eb9b42d0d79652fab4e3ccceccb1 (maintainer fix commit; no issue thread)
# Diagnosis (@nstarman, coordinax maintainer): "`_solve_tau`, `_solve_tau_dense` and `_arclength_between` each built a fresh `ode_rhs` closure, and therefore a fresh `ODETerm`, on every call. ... filter-jitted with the term in its cache key and a Python closure hashes by identity, so every call missed the cache and recompiled the whole integrator."
# Problem: the arc-length solve wraps a new closure in `ODETerm` on every call and hands it to the filter-jitted solver; each call compiles the integrator again (1247 ms -> 1.5 ms once hoisted).
# (The solve reduced to plain arrays, without units; the solver a filter-jitted diffeqsolve as in diffraxtra; called for several arc lengths.)
import diffrax as dfx
import equinox as eqx
import jax
import jax.numpy as jnp


@eqx.filter_jit
def diffeqsolver(terms, t0, t1, dt0, y0):
    return dfx.diffeqsolve(terms, dfx.Tsit5(), t0, t1, dt0, y0,
                           stepsize_controller=dfx.PIDController(rtol=1e-8, atol=1e-8))


def _speed(curve, tau):
    return jnp.linalg.norm(jax.jacfwd(curve)(tau))


def _solve_tau(curve, tau_0, s):
    def ode_rhs(sigma, tau_flat, args):
        del sigma, args
        return s / _speed(curve, tau_flat)

    sol = diffeqsolver(dfx.ODETerm(ode_rhs), 0.0, 1.0, None, tau_0)  # expect: JF302
    return sol.ys[-1]


def helix(tau):
    return jnp.stack([jnp.cos(tau), jnp.sin(tau), 0.5 * tau])


taus = [_solve_tau(helix, jnp.asarray(0.0), s) for s in (0.5, 2.0, 4.0)]
