# Thread: https://github.com/google-research/multinerf/pull/62
# Diagnosis (@creeper121386, PR author: "the runtime `numpy` should be `jax.numpy`. However, the argument `xnp` is not passed to the function `convert_to_ndc`", giving "TracerArrayConversionError"; @jonbarron, multinerf maintainer: "Good catch, and thanks for the CL!")
# Problem: with rays cast inside the jitted train step, `convert_to_ndc` stacks traced ray directions with `np.stack` (hard-coded NumPy, and `xnp` left at its NumPy default by the caller), which calls `__array__` on tracers.
# Written for this corpus after internal/camera_utils.py before that PR (same structure, reduced; the jitted train step shows how it runs).
import jax
import jax.numpy as jnp
import numpy as np


def convert_to_ndc(origins, directions, pixtocam, near=1., xnp=np):
  t = -(near + origins[..., 2]) / directions[..., 2]
  origins = origins + t[..., None] * directions
  dx, dy, dz = xnp.moveaxis(directions, -1, 0)
  ox, oy, oz = xnp.moveaxis(origins, -1, 0)
  xmult = 1. / pixtocam[0, 2]
  ymult = 1. / pixtocam[1, 2]
  origins_ndc = xnp.stack([xmult * ox / oz, ymult * oy / oz,
                           -xnp.ones_like(oz)], axis=-1)
  infinity_ndc = np.stack([xmult * dx / dz, ymult * dy / dz,  # expect: JF406
                           xnp.ones_like(oz)],
                          axis=-1)
  directions_ndc = infinity_ndc - origins_ndc
  return origins_ndc, directions_ndc


def pixels_to_rays(origins, directions, pixtocam_ndc, xnp=np):
  origins, directions = convert_to_ndc(origins, directions, pixtocam_ndc)
  return origins, directions


@jax.jit
def train_step(origins, directions, pixtocam_ndc):
  origins, directions = pixels_to_rays(origins, directions, pixtocam_ndc,
                                       xnp=jnp)
  return jnp.sum(directions)


train_step(jnp.ones((8, 3)), -jnp.ones((8, 3)), jnp.eye(3) + 1.)
