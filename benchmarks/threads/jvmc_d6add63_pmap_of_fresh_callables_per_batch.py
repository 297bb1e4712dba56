# Thread: https://github.com/markusschmitt/vmc_jax/commit/d6add63d677a20e4ce5be7edeb3fcacb1ef565cb (maintainer fix commit; no issue thread)
# Diagnosis (Markus Schmitt, jVMC maintainer): "Fixed cross-validation. Removed further unnecessary recompilaions." (the inner `expand_batch` moved to module level and the slicing lambda pmapped once in `__init__`)
# Problem: every batched evaluation of an operator pmaps a freshly defined `expand_batch` (twice) and a fresh slicing lambda for the remainder batch, so each call of `get_O_loc_batched` compiles them again.
# (The operator reduced to the remainder path of `get_O_loc_batched`; `pmap_for_my_devices` as in jVMC/global_defs.py; called once per VMC step.)
from functools import partial

import jax
import jax.numpy as jnp

myPmapDevices = jax.devices()[:1]
pmap_for_my_devices = partial(jax.pmap, devices=myPmapDevices)


class Operator:
    def __init__(self):
        self._get_config_batch_pmapd = pmap_for_my_devices(
            lambda d, startIdx, sliceSize: jax.lax.dynamic_slice_in_dim(d, startIdx, sliceSize),
            in_axes=(0, None, None), static_broadcasted_argnums=(2,))

    def get_O_loc_unbatched(self, logPsiS, logPsiSP):
        return jnp.exp(logPsiSP - logPsiS)

    def get_O_loc_batched(self, samples, logPsiS, batchSize):
        numSamples = samples.shape[1]
        numBatches = numSamples // batchSize
        remainder = numSamples % batchSize

        def expand_batch(batch, batchSize):
            outShape = list(batch.shape)
            outShape[0] = batchSize
            outp = jnp.zeros(tuple(outShape), dtype=batch.dtype)
            return outp.at[:batch.shape[0]].set(batch)
        batch = self._get_config_batch_pmapd(samples, numBatches * batchSize, remainder)
        batch = pmap_for_my_devices(expand_batch, static_broadcasted_argnums=(1,))(batch, batchSize)  # expect: JF302
        logPsiSbatch = self._get_config_batch_pmapd(logPsiS, numBatches * batchSize, remainder)
        logPsiSbatch = pmap_for_my_devices(expand_batch, static_broadcasted_argnums=(1,))(logPsiSbatch, batchSize)  # expect: JF302

        OlocBatch = self.get_O_loc_unbatched(logPsiSbatch, 0.5 * logPsiSbatch + jnp.sum(batch, axis=-1))

        OlocBatch = pmap_for_my_devices(  # expect: JF302
                        lambda d, startIdx, sliceSize: jax.lax.dynamic_slice_in_dim(d, startIdx, sliceSize),
                        in_axes=(0, None, None), static_broadcasted_argnums=(2,)
                    )(OlocBatch, 0, remainder)
        return OlocBatch


op = Operator()
for step in range(100):
    samples = jax.random.bernoulli(jax.random.PRNGKey(step), 0.5, (1, 1000, 16)).astype(jnp.float32)
    logPsiS = jnp.sum(samples, axis=-1) * 0.1
    Oloc = op.get_O_loc_batched(samples, logPsiS, 256)
