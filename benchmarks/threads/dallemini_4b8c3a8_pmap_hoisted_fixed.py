# Thread: https://github.com/borisdayma/dalle-mini/commit/4b8c3a8 (maintainer fix commit; no issue thread)
# Trap: the maintainer's fixed version: the pmapped encoder is built once, before the loop, and reused for every super-batch. Nothing should be reported.
# Written for this corpus after encoding/vqgan-jax-encoding.ipynb at that commit (same structure, reduced).
import numpy as np
from jax import pmap


def encode(model, batch):
    _, indices = model.encode(batch)
    return indices


def encode_dataset(model, dataloader, superbatch_generator):
    superbatches = superbatch_generator(dataloader)
    p_encoder = pmap(lambda batch: encode(model, batch))
    results = None
    for superbatch in superbatches:
        encoded = p_encoder(superbatch.numpy())
        encoded = encoded.reshape(encoded.shape[0] * encoded.shape[1], -1)
        results = np.concatenate((results, encoded), axis=0) if results is not None else encoded
    return results
