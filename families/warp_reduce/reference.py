"""warp_reduce: per 32-value group, the sum (scaled tolerance) and max |x| (exact)."""
import numpy as np


def make_inputs(rng, shape):
    # Zero-mean U(-1, 1): long fp32 sums of positive values would stagnate,
    # and negative values make |x| differ from x for the absmax.
    return {"x": rng.uniform(-1.0, 1.0, shape["n"]).astype(np.float32)}


def reference(inputs, shape):
    g = inputs["x"].astype(np.float64).reshape(-1, 32)
    return {"sum": g.sum(axis=1), "absmax": np.abs(g).max(axis=1)}


def naive(inputs, shape):
    xs = inputs["x"].tolist()
    sums, maxima = [], []
    for start in range(0, shape["n"], 32):
        total, top = 0.0, 0.0
        for v in xs[start:start + 32]:
            total += v
            top = max(top, abs(v))
        sums.append(total)
        maxima.append(top)
    return {"sum": np.array(sums), "absmax": np.array(maxima)}


def error_scale(inputs, shape):
    """sum|x_g| per group: fp32 rounding grows with it, not with the (possibly tiny) sum."""
    return {"sum": np.abs(inputs["x"].astype(np.float64)).reshape(-1, 32).sum(axis=1)}
