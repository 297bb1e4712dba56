# Thread: https://github.com/blackjax-devs/blackjax/pull/75
# Trap: an assertion on array *shapes* inside a jitted momentum generator is legal and cheap; @AdrienCorenflos (blackjax developer): "shapes are static in JAX so that will be evaluated under jitting but only once at compilation time". Nothing should be reported.
import jax
import jax.numpy as jnp
from jax.flatten_util import ravel_pytree


def gaussian_euclidean(inverse_mass_matrix):
    mass_matrix_sqrt = jnp.sqrt(jnp.reciprocal(inverse_mass_matrix))

    def momentum_generator(rng_key, position):
        flat_position, unravel_fn = ravel_pytree(position)
        standard_normal = jax.random.normal(rng_key, flat_position.shape)
        momentum = mass_matrix_sqrt * standard_normal
        assert momentum.shape == flat_position.shape
        return unravel_fn(momentum)

    return momentum_generator


generate = jax.jit(gaussian_euclidean(jnp.ones(3)))
generate(jax.random.PRNGKey(0), {"x": jnp.zeros(3)})
