"""Row softmax (shared by softmax_attnrows and softmax_vocab): float64 from the fp32 inputs.

Every fourth row (r % 4 == 1) is shifted by +100, where expf(x) overflows
fp32: a kernel that skips the max subtraction fails on every seed.
"""
import math

import numpy as np

SHIFT = 100.0


def make_inputs(rng, shape):
    R, C = shape["R"], shape["C"]
    x = rng.uniform(-1.0, 1.0, (R, C))
    x[1::4] += SHIFT
    return {"x": x.astype(np.float32).reshape(-1)}


def reference(inputs, shape):
    x = inputs["x"].astype(np.float64).reshape(shape["R"], shape["C"])
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return {"y": (e / e.sum(axis=1, keepdims=True)).reshape(-1)}


def naive(inputs, shape):
    R, C = shape["R"], shape["C"]
    xs = inputs["x"].tolist()
    y = []
    for r in range(R):
        row = xs[r * C:(r + 1) * C]
        top = max(row)
        total = math.fsum(math.exp(v - top) for v in row)
        y.extend(math.exp(v - top) / total for v in row)
    return {"y": np.array(y)}
