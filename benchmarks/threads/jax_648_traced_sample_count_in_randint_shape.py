# Thread: https://github.com/jax-ml/jax/issues/648
# Diagnosis (@hawkinsp, JAX maintainer): "Shapes within in `jit` block must be fully determined by the the static arguments to the jitted function. ... you are passing a non-static value for `N` where a function expects a static argument (`random.randint`'s shape)."
# Problem: the jitted Metropolis-Hastings sampler takes the number of samples as an ordinary argument and uses it as the shape of `random.randint`; under jit it is a tracer.
# (Adapted: the thread shows the call `sample(key,n_samps,N)` and its traceback; the body (a spin-flip sampler) is reconstructed from the maintainer's description.)
import jax.numpy as np
from jax import jit, random


@jit
def sample(key, N, x0):
    key, k1, k2 = random.split(key, 3)
    flips = random.randint(k1, (N,), 0, x0.shape[0])  # expect: JF402
    log_u = np.log(random.uniform(k2, flips.shape))
    energy = lambda x: np.sum(x ** 2)
    x = x0
    xs = []
    for j, lu in zip(flips, log_u):
        proposal = x.at[j].set(-x[j])
        accept = lu < energy(x) - energy(proposal)
        x = np.where(accept, proposal, x)
        xs.append(x)
    return np.stack(xs)


key = random.PRNGKey(1)
n_samps = 10
x0 = np.ones(5)
sample(key, n_samps, x0)
