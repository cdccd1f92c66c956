"""row_softmax: float64 softmax per row; every fourth row sits near +100."""
import math

import numpy as np

SHIFTED_ROW = 4    # rows r % 4 == 1 are shifted by +100 in every seed
SHIFT = 100.0


def make_inputs(rng, shape):
    # U(-1, 1) rows; rows r % 4 == 1 are shifted to about +100, where
    # exp(x) overflows fp32, so a kernel that skips or misplaces the max fails
    # on every seed (softmax itself is shift-invariant).
    R, C = shape["R"], shape["C"]
    x = rng.uniform(-1.0, 1.0, (R, C))
    x[1::SHIFTED_ROW] += SHIFT
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
