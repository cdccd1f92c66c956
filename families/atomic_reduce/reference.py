"""atomic_reduce: the sum of n fp32 values, checked against float64 with a
tolerance scaled by sum |x| (atomic order is not deterministic)."""
import numpy as np


def make_inputs(rng, shape):
    # Zero-mean U(-1, 1): positive inputs would make an fp32 running sum stagnate.
    return {"x": rng.uniform(-1.0, 1.0, shape["n"]).astype(np.float32)}


def reference(inputs, shape):
    return {"out": np.array([np.asarray(inputs["x"], dtype=np.float64).sum()])}


def error_scale(inputs, shape):
    return {"out": np.array([np.abs(np.asarray(inputs["x"], dtype=np.float64)).sum()])}


def naive(inputs, shape):
    s = 0.0
    for v in inputs["x"].tolist():
        s += v
    return {"out": np.array([s])}
