"""flash_tile: softmax(Q K^T * scale) V per head in float64, from the fp16-rounded inputs.

Odd heads get a ramp: q[:, 0] = 4 and k[j, 0] grows by 64 / SK per key, so their
scores rise by about 32 across the keys. Row maxima then climb by more than 8
several times per row, which runs the conditional-rescale path of a candidate
that rescales only then; even heads are plain N(0, 1) data.
"""
import math

import numpy as np

HD = 64
RAMP_Q = 4.0
RAMP_TOTAL = 64.0   # k[SK-1, 0] - k[0, 0] on ramped heads; the score ramp is RAMP_Q * RAMP_TOTAL * scale = 32


def make_inputs(rng, shape):
    BH, SQ, SK = shape["BH"], shape["SQ"], shape["SK"]
    q = rng.standard_normal((BH, SQ, HD))
    k = rng.standard_normal((BH, SK, HD))
    v = rng.standard_normal((BH, SK, HD))
    q[1::2, :, 0] = RAMP_Q
    k[1::2, :, 0] += RAMP_TOTAL * np.arange(SK) / SK
    return {name: a.astype(np.float16).reshape(-1) for name, a in (("q", q), ("k", k), ("v", v))}


def _probs(inputs, shape):
    BH, SQ, SK = shape["BH"], shape["SQ"], shape["SK"]
    q = inputs["q"].astype(np.float64).reshape(BH, SQ, HD)
    k = inputs["k"].astype(np.float64).reshape(BH, SK, HD)
    s = np.einsum("hqd,hkd->hqk", q, k) * shape["scale"]
    p = np.exp(s - s.max(axis=2, keepdims=True))
    return p / p.sum(axis=2, keepdims=True)


def reference(inputs, shape):
    BH, SK = shape["BH"], shape["SK"]
    v = inputs["v"].astype(np.float64).reshape(BH, SK, HD)
    return {"o": np.einsum("hqk,hkd->hqd", _probs(inputs, shape), v).reshape(-1)}


def naive(inputs, shape):
    BH, SQ, SK, scale = shape["BH"], shape["SQ"], shape["SK"], shape["scale"]
    q = inputs["q"].astype(np.float64).reshape(BH, SQ, HD).tolist()
    k = inputs["k"].astype(np.float64).reshape(BH, SK, HD).tolist()
    v = inputs["v"].astype(np.float64).reshape(BH, SK, HD).tolist()
    out = []
    for h in range(BH):
        for i in range(SQ):
            s = [scale * math.fsum(a * b for a, b in zip(q[h][i], k[h][j])) for j in range(SK)]
            mx = max(s)
            e = [math.exp(x - mx) for x in s]
            tot = math.fsum(e)
            out.extend(math.fsum(e[j] * v[h][j][d] for j in range(SK)) / tot for d in range(HD))
    return {"o": np.array(out)}


def error_scale(inputs, shape):
    """sum_j p_ij |v_jd|: what fp16 rounding of P and of O is relative to."""
    BH, SK = shape["BH"], shape["SK"]
    v = np.abs(inputs["v"].astype(np.float64).reshape(BH, SK, HD))
    return {"o": np.einsum("hqk,hkd->hqd", _probs(inputs, shape), v).reshape(-1)}
