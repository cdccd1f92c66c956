"""rope_cache: NeoX rotary embedding in float64 from the bf16 q, k and the fp32 table.

The table holds (cos, sin) of pos * theta_j for P positions, theta_j =
500000^(-2j/128), rounded to fp32 (it is an input). The tokens are a prefill
chunk at a random offset: pos[t] = o + t, o drawn in [0, P - T], so a kernel
that indexes the table by t instead of pos[t] reads the wrong rows.
"""
import math

import ml_dtypes
import numpy as np

HD = 128
BASE = 500000.0


def _table(P):
    theta = BASE ** (-np.arange(64) * 2.0 / HD)
    ang = np.arange(P, dtype=np.float64)[:, None] * theta[None, :]
    cs = np.stack([np.cos(ang), np.sin(ang)], axis=-1)      # [P][64][2]
    return cs.astype(np.float32).reshape(-1)


def make_inputs(rng, shape):
    T, HQ, HK, P = shape["T"], shape["HQ"], shape["HK"], shape["P"]
    o = int(rng.integers(0, P - T + 1))
    return {
        "q": rng.standard_normal(HQ * T * HD).astype(ml_dtypes.bfloat16),
        "k": rng.standard_normal(HK * T * HD).astype(ml_dtypes.bfloat16),
        "cs": _table(P),
        "pos": (o + np.arange(T)).astype(np.int32),
    }


def _rotate(x, cs, pos, H, T):
    x = x.astype(np.float64).reshape(H, T, HD)
    c = cs.astype(np.float64).reshape(-1, 64, 2)[pos]          # [T][64][2]
    cos, sin = c[None, :, :, 0], c[None, :, :, 1]
    x1, x2 = x[..., :64], x[..., 64:]
    return np.concatenate([x1 * cos - x2 * sin, x2 * cos + x1 * sin], axis=-1).reshape(-1)


def reference(inputs, shape):
    T, HQ, HK = shape["T"], shape["HQ"], shape["HK"]
    pos = inputs["pos"].astype(np.int64)
    return {"qo": _rotate(inputs["q"], inputs["cs"], pos, HQ, T),
            "ko": _rotate(inputs["k"], inputs["cs"], pos, HK, T)}


def naive(inputs, shape):
    T, HQ, HK = shape["T"], shape["HQ"], shape["HK"]
    cs = inputs["cs"].astype(np.float64).tolist()
    pos = inputs["pos"].tolist()
    out = {}
    for name, H in (("q", HQ), ("k", HK)):
        x = inputs[name].astype(np.float64).tolist()
        y = [0.0] * len(x)
        for h in range(H):
            for t in range(T):
                b = (h * T + t) * HD
                for j in range(64):
                    c, s = cs[(pos[t] * 64 + j) * 2], cs[(pos[t] * 64 + j) * 2 + 1]
                    y[b + j] = x[b + j] * c - x[b + j + 64] * s
                    y[b + j + 64] = x[b + j + 64] * c + x[b + j] * s
        out[name + "o"] = np.array(y)
    return out


def error_scale(inputs, shape):
    """|x_j| + |x_{j+64}| for both outputs of a pair: the size bf16 rounding of the output grows with."""
    T, HQ, HK = shape["T"], shape["HQ"], shape["HK"]
    out = {}
    for name, H in (("q", HQ), ("k", HK)):
        a = np.abs(inputs[name].astype(np.float64).reshape(H, T, HD))
        s = a[..., :64] + a[..., 64:]
        out[name + "o"] = np.concatenate([s, s], axis=-1).reshape(-1)
    return out
