"""layernorm: float64 two-pass layer norm; every fourth row has a large mean."""
import math

import numpy as np

OFFSET_ROW = 4     # rows r % 4 == 1 get a large mean in every seed
# 1e4 rather than 1e3: at 1e3 a one-pass fp32 variance lands only just outside
# the tolerance on some seeds; at 1e4 it goes negative or far off on every seed.
# Correct two-pass candidates are unaffected: the scaled tolerance grows with
# |mean|, exactly as fp32's resolution of x does.
OFFSET = 1.0e4


def make_inputs(rng, shape):
    # U(-1, 1) rows; rows r % 4 == 1 are offset to mean 1e4 with the same
    # spread, where a one-pass E[x^2] - mean^2 variance cancels in fp32.
    R, C = shape["R"], shape["C"]
    x = rng.uniform(-1.0, 1.0, (R, C))
    x[1::OFFSET_ROW] += OFFSET
    return {
        "x": x.astype(np.float32).reshape(-1),
        "gamma": rng.uniform(0.5, 1.5, C).astype(np.float32),
        "beta": rng.uniform(-0.5, 0.5, C).astype(np.float32),
    }


def _stats(inputs, shape):
    x = inputs["x"].astype(np.float64).reshape(shape["R"], shape["C"])
    mean = x.mean(axis=1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=1, keepdims=True)
    return x, mean, 1.0 / np.sqrt(var + shape["eps"])


def reference(inputs, shape):
    x, mean, rstd = _stats(inputs, shape)
    g, b = inputs["gamma"].astype(np.float64), inputs["beta"].astype(np.float64)
    return {"y": ((x - mean) * rstd * g + b).reshape(-1)}


def naive(inputs, shape):
    R, C, eps = shape["R"], shape["C"], shape["eps"]
    xs, g, b = inputs["x"].tolist(), inputs["gamma"].tolist(), inputs["beta"].tolist()
    y = []
    for r in range(R):
        row = xs[r * C:(r + 1) * C]
        mean = math.fsum(row) / C
        var = math.fsum((v - mean) ** 2 for v in row) / C
        rstd = 1.0 / math.sqrt(var + eps)
        y.extend((v - mean) * rstd * g[c] + b[c] for c, v in enumerate(row))
    return {"y": np.array(y)}


def error_scale(inputs, shape):
    """|gamma| * rstd * (|x| + |mean|) + |beta|: the size fp32 rounding of x - mean grows with."""
    x, mean, rstd = _stats(inputs, shape)
    g, b = np.abs(inputs["gamma"].astype(np.float64)), np.abs(inputs["beta"].astype(np.float64))
    return {"y": (g * rstd * (np.abs(x) + np.abs(mean)) + b).reshape(-1)}
