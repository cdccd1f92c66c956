"""rmsnorm_fp8: RMSNorm then per-row e4m3 quantisation, in float64 from the bf16 inputs.

q is returned unrounded (y / s); the e4m3_step comparison rounds it once to the
nearest e4m3 code and accepts a candidate's code within one step of it. Row 2
is all zeros (when R > 2): s = 0 and q = 0 there, never a division by zero.
"""
import math

import ml_dtypes
import numpy as np

E4M3_MAX = 448.0
ZERO_ROW = 2


def make_inputs(rng, shape):
    R, C = shape["R"], shape["C"]
    x = rng.standard_normal((R, C))
    if R > ZERO_ROW:
        x[ZERO_ROW] = 0.0
    w = rng.uniform(0.25, 1.75, C)   # not ones: max|x| and max|x*w| differ
    return {"x": x.astype(ml_dtypes.bfloat16).reshape(-1), "w": w.astype(ml_dtypes.bfloat16)}


def reference(inputs, shape):
    R, C, eps = shape["R"], shape["C"], shape["eps"]
    x = inputs["x"].astype(np.float64).reshape(R, C)
    w = inputs["w"].astype(np.float64)
    inv = 1.0 / np.sqrt((x * x).mean(axis=1, keepdims=True) + eps)
    y = x * inv * w
    amax = np.abs(y).max(axis=1, keepdims=True)
    s = amax / E4M3_MAX
    q = np.divide(y, s, out=np.zeros_like(y), where=s > 0)
    return {"q": q.reshape(-1), "s": s.reshape(-1)}


def naive(inputs, shape):
    R, C, eps = shape["R"], shape["C"], shape["eps"]
    xs = inputs["x"].astype(np.float64).tolist()
    w = inputs["w"].astype(np.float64).tolist()
    q, s = [], []
    for r in range(R):
        row = xs[r * C:(r + 1) * C]
        inv = 1.0 / math.sqrt(math.fsum(v * v for v in row) / C + eps)
        y = [v * inv * w[c] for c, v in enumerate(row)]
        amax = max(abs(v) for v in y)
        sr = amax / E4M3_MAX
        s.append(sr)
        q.extend(v / sr if sr > 0 else 0.0 for v in y)
    return {"q": np.array(q), "s": np.array(s)}
