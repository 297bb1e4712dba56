# Thread: https://github.com/borisdayma/dalle-mini/commit/4b8c3a8 (maintainer fix commit; no issue thread)
# Diagnosis (@pcuenca, dalle-mini developer, commit message): "JIT outside the loop. ... there is a noticeable performance improvement doing it this way."
# Problem: the VQGAN encoding notebook wraps a fresh lambda with `pmap` inside the loop over super-batches, so a new pmapped function is built (and compiled) for every super-batch.
# Written for this corpus after encoding/vqgan-jax-encoding.ipynb before that commit (same structure, reduced).
import numpy as np
from jax import pmap


def encode(model, batch):
    _, indices = model.encode(batch)
    return indices


def encode_dataset(model, dataloader, superbatch_generator):
    superbatches = superbatch_generator(dataloader)
    results = None
    for superbatch in superbatches:
        encoded = pmap(lambda batch: encode(model, batch))(superbatch.numpy())  # expect: JF301
        encoded = encoded.reshape(encoded.shape[0] * encoded.shape[1], -1)
        results = np.concatenate((results, encoded), axis=0) if results is not None else encoded
    return results
