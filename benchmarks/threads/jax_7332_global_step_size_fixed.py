# Thread: https://github.com/jax-ml/jax/issues/7332
# Diagnosis (@hawkinsp, JAX maintainer): "Yes, in both notebooks, `step_size` is a global variable that is referred to by `update`. ... But `step_size` does *not* change in this program, so we can consider it in a practical sense \"pure\""
# Trap: the jitted update reads a module-level `step_size` that the program never rebinds; a maintainer says this is fine, so nothing should be reported.
# (The tutorial notebook's update step, reduced to what the thread discusses.)
import jax.numpy as jnp
from jax import grad, jit, random

layer_sizes = [784, 512, 512, 10]
step_size = 0.01
num_epochs = 10


def random_layer_params(m, n, key, scale=1e-2):
  w_key, b_key = random.split(key)
  return scale * random.normal(w_key, (n, m)), scale * random.normal(b_key, (n,))


def init_network_params(sizes, key):
  keys = random.split(key, len(sizes))
  return [random_layer_params(m, n, k) for m, n, k in zip(sizes[:-1], sizes[1:], keys)]


def predict(params, image):
  activations = image
  for w, b in params[:-1]:
    activations = jnp.maximum(0, jnp.dot(w, activations) + b)
  final_w, final_b = params[-1]
  return jnp.dot(final_w, activations) + final_b


def loss(params, images, targets):
  preds = predict(params, images.T).T
  return -jnp.mean(preds * targets)


@jit
def update(params, x, y):
  grads = grad(loss)(params, x, y)
  return [(w - step_size * dw, b - step_size * db)
          for (w, b), (dw, db) in zip(params, grads)]


params = init_network_params(layer_sizes, random.PRNGKey(0))
x = jnp.ones((128, 784))
y = jnp.ones((128, 10))
for epoch in range(num_epochs):
  params = update(params, x, y)
