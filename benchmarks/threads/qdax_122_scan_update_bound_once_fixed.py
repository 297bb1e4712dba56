# Thread: https://github.com/adaptive-intelligent-robotics/QDax/issues/94 (fixed by https://github.com/adaptive-intelligent-robotics/QDax/pull/122)
# Diagnosis (@Lookatator, QDax maintainer, PR #122): "Fix consecutive jits of same method in for loops"
# Trap: the maintainer's fix binds `map_elites.scan_update` once before the loop; every iteration scans the same function object, so the compiled step is reused and nothing should be reported.
# (The algorithm reduced to a toy repertoire update; the notebook's main loop as in the examples.)
from functools import partial

import jax
import jax.numpy as jnp


class MAPElites:
    def __init__(self, scoring_fn, batch_size):
        self._scoring_fn = scoring_fn
        self._batch_size = batch_size

    @partial(jax.jit, static_argnames=("self",))
    def update(self, repertoire, random_key):
        random_key, subkey = jax.random.split(random_key)
        genotypes = jax.random.normal(subkey, (self._batch_size, repertoire.shape[-1]))
        fitnesses = self._scoring_fn(genotypes)
        best = genotypes[jnp.argmax(fitnesses)]
        repertoire = repertoire.at[0].set(best)
        return repertoire, {"max_fitness": jnp.max(fitnesses)}, random_key

    @partial(jax.jit, static_argnames=("self",))
    def scan_update(self, carry, unused):
        repertoire, random_key = carry
        repertoire, metrics, random_key = self.update(repertoire, random_key)
        return (repertoire, random_key), metrics


map_elites = MAPElites(scoring_fn=lambda g: -jnp.sum(g**2, axis=-1), batch_size=128)
repertoire = jnp.zeros((16, 8))
random_key = jax.random.PRNGKey(0)
num_loops = 100
log_period = 10

all_metrics = {}
map_elites_scan_update = map_elites.scan_update
for i in range(num_loops):
    (repertoire, random_key), metrics = jax.lax.scan(
        map_elites_scan_update,
        (repertoire, random_key),
        (),
        length=log_period,
    )
    all_metrics[i] = metrics
