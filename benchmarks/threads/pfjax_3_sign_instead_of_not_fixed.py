# Thread: https://github.com/mlysy/pfjax/issues/3
# Diagnosis (@m9ko, pfjax developer): "In `mwg_adapt`, we get an error that traced values cannot be used in Boolean functions (at line 207)"
# Trap: the developer's proposed fix in the thread uses `jnp.sign(targ_acc - accept_rate)` and no Python boolean; it traces under jit. Nothing should be reported.
# (The function as in src/pfjax/mcmc.py at the thread's commit; called from a jitted adaptation step.)
import jax
import jax.numpy as jnp


def mwg_adapt(rw_sd, accept_rate, n_iter, adapt_max=.01, adapt_rate=.5):
    targ_acc = 0.44  # target acceptance rate
    delta = jnp.power(n_iter, -adapt_rate)
    delta = jnp.maximum(delta, adapt_max)
    low_acc = jnp.sign(targ_acc - accept_rate)
    return jnp.exp(jnp.log(rw_sd) - delta * low_acc)


@jax.jit
def adapt_step(rw_sd, n_accept, n_iter):
    return mwg_adapt(rw_sd, n_accept / n_iter, n_iter)


rw_sd = jnp.array([0.1, 0.2, 0.3])
rw_sd = adapt_step(rw_sd, jnp.array([5.0, 40.0, 90.0]), 100.0)
