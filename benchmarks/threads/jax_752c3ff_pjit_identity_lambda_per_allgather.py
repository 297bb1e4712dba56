# Thread: https://github.com/jax-ml/jax/commit/752c3ffcd94806697ecb58fc42ff2669948a0226 (maintainer fix commit; no issue thread)
# Diagnosis (@yashk2810, JAX maintainer, commit message): "Lift `lambda x: x` to the top level so that we don't recompile on every invocation of `process_allgather`."
# Problem: `process_allgather` wraps a fresh `lambda x: x` with `pjit` on every call (three call sites), so each call traces and compiles the identity again.
# Written for this corpus after jax/experimental/multihost_utils.py before that commit (same structure, reduced to the pjit paths).
import jax
import numpy as np
from jax.experimental import maps
from jax.experimental.pjit import pjit
from jax.sharding import PartitionSpec as P


def _handle_array_process_allgather(inp, tiled, reps):
  if not inp.is_fully_addressable:
    out = pjit(lambda x: x, out_axis_resources=reps)(inp)  # expect: JF302
  else:
    devices = np.array(jax.devices()).reshape(jax.process_count(),
                                              jax.local_device_count())
    global_mesh = maps.Mesh(devices, ('processes', 'local_devices'))
    global_arr = jax.device_put(np.asarray(inp))
    with global_mesh:
      out = pjit(lambda x: x, out_axis_resources=None)(global_arr)  # expect: JF302
  return np.asarray(out.addressable_data(0))


def process_allgather(in_tree, tiled=False):

  def _pjit(inp):
    devices = np.array(jax.devices()).reshape(jax.process_count(),
                                              jax.local_device_count())
    global_mesh = maps.Mesh(devices, ('processes', 'local_devices'))
    in_axis_resources = P('processes')
    if inp.ndim == 0 or not tiled:
      inp = np.expand_dims(inp, axis=0)
    with global_mesh:
      out = pjit(lambda x: x, in_axis_resources=in_axis_resources,  # expect: JF302
                 out_axis_resources=None)(inp)
    return np.asarray(out.addressable_data(0))

  return jax.tree_util.tree_map(_pjit, in_tree)
