"""stride_copy: out = x in fp32, compared exactly (a copy has no rounding)."""
import numpy as np


def make_inputs(rng, shape):
    # Distinct random values, so a misplaced element cannot match by accident.
    return {"x": rng.uniform(-1.0, 1.0, shape["n"]).astype(np.float32)}


def reference(inputs, shape):
    return {"out": inputs["x"].astype(np.float64)}


def naive(inputs, shape):
    x = inputs["x"]
    out = np.empty(shape["n"], dtype=np.float64)
    for j in range(shape["n"]):
        out[j] = float(x[j])
    return {"out": out}
