"""stride_expf: y = exp(x) elementwise, float64 reference."""
import math

import numpy as np


def make_inputs(rng, shape):
    # U(-8, 8): outputs span about seven decades, all normal fp32 numbers.
    return {"x": rng.uniform(-8.0, 8.0, shape["R"] * shape["C"]).astype(np.float32)}


def reference(inputs, shape):
    return {"y": np.exp(inputs["x"].astype(np.float64))}


def naive(inputs, shape):
    R, C = shape["R"], shape["C"]
    x = inputs["x"]
    y = np.empty(R * C, dtype=np.float64)
    for r in range(R):
        for c in range(C):
            y[r * C + c] = math.exp(float(x[r * C + c]))
    return {"y": y}
