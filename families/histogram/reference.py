"""histogram: counts of each byte value, exact integers."""
import numpy as np


def make_inputs(rng, shape):
    # Uniform bytes: every bin is hit and the shared atomics spread over all banks.
    return {"x": rng.integers(0, 256, shape["n"], dtype=np.uint8)}


def reference(inputs, shape):
    return {"hist": np.bincount(np.asarray(inputs["x"]), minlength=256).astype(np.int64)}


def naive(inputs, shape):
    counts = [0] * 256
    for v in inputs["x"].tolist():
        counts[v] += 1
    return {"hist": np.array(counts, dtype=np.int64)}
