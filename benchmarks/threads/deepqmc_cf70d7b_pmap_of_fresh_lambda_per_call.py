# Thread: https://github.com/deepqmc/deepqmc/commit/cf70d7b (maintainer fix commit; no issue thread)
# Diagnosis (Szabo Bernat, deepqmc maintainer, commit message): "refactor parallel utils for more efficient pmaps" (`jax.pmap(lambda x: x)(pytree)` becomes a module-level `@jax.pmap` function; the per-call `jax.pmap(lambda x: gather_fn(...))` helper is replaced by a module-level `pmap_pmean`)
# Problem: the parallel helpers, called every training step and every logging step, build `jax.pmap` of a fresh lambda on each call, so each call traces and compiles again.
# Written for this corpus after src/deepqmc/parallel.py before that commit (same structure, reduced).
import jax

PMAP_AXIS_NAME = 'device_axis'


def broadcast_to_devices(pytree):
    """Broadcast an array stored on a single device to all devices."""
    return jax.pmap(lambda x: x)(pytree)  # expect: JF302


def select_one_device(pytree, idx=0):
    return jax.tree_util.tree_map(lambda x: x[idx], pytree)


def gather_on_one_device(
    pytree, gather_fn=jax.lax.all_gather, flatten_device_axis=False
):
    """Gather data stored across devices to a single device."""
    all_gathered = jax.pmap(  # expect: JF302
        lambda x: gather_fn(x, PMAP_AXIS_NAME), axis_name=PMAP_AXIS_NAME
    )(pytree)
    on_one_device = select_one_device(all_gathered)
    if flatten_device_axis:
        on_one_device = jax.tree_util.tree_map(
            lambda x: x.reshape(-1, *x.shape[2:]), on_one_device
        )
    return on_one_device


def split_rng_key_to_devices(rng):
    rngs = jax.random.split(rng, jax.device_count())
    return broadcast_to_devices(rngs)
