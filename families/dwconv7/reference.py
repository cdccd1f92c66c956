"""dwconv7: 7x7 depthwise convolution (pad 3) in float64 from the bf16 input and fp32 weights.

Weights are drawn independently per tap and channel, so the filter has no
symmetry and a flipped kernel is wrong everywhere.
"""
import math

import ml_dtypes
import numpy as np


def make_inputs(rng, shape):
    N, H, W, C = shape["N"], shape["H"], shape["W"], shape["C"]
    return {
        "x": rng.standard_normal(N * H * W * C).astype(ml_dtypes.bfloat16),
        "wt": rng.uniform(-0.3, 0.3, 49 * C).astype(np.float32),
        "bias": rng.uniform(-0.5, 0.5, C).astype(np.float32),
    }


def _conv(x, wt, bias, shape, absolute=False):
    N, H, W, C = shape["N"], shape["H"], shape["W"], shape["C"]
    x = x.astype(np.float64).reshape(N, H, W, C)
    w = wt.astype(np.float64).reshape(7, 7, C)
    b = bias.astype(np.float64)
    if absolute:
        x, w, b = np.abs(x), np.abs(w), np.abs(b)
    xp = np.zeros((N, H + 6, W + 6, C))
    xp[:, 3:H + 3, 3:W + 3] = x
    out = np.broadcast_to(b, (N, H, W, C)).copy()
    for i in range(7):
        for j in range(7):
            out += xp[:, i:i + H, j:j + W] * w[i, j]
    return out.reshape(-1)


def reference(inputs, shape):
    return {"y": _conv(inputs["x"], inputs["wt"], inputs["bias"], shape)}


def naive(inputs, shape):
    N, H, W, C = shape["N"], shape["H"], shape["W"], shape["C"]
    x = inputs["x"].astype(np.float64).tolist()
    w = inputs["wt"].astype(np.float64).tolist()
    b = inputs["bias"].astype(np.float64).tolist()
    y = []
    for n in range(N):
        for h in range(H):
            for ww in range(W):
                for c in range(C):
                    terms = [b[c]]
                    for i in range(7):
                        for j in range(7):
                            hh, wj = h + i - 3, ww + j - 3
                            if 0 <= hh < H and 0 <= wj < W:
                                terms.append(x[((n * H + hh) * W + wj) * C + c] * w[(i * 7 + j) * C + c])
                    y.append(math.fsum(terms))
    return {"y": np.array(y)}


def error_scale(inputs, shape):
    """sum |x| |w| + |b| over each output's taps: what fp32 accumulation and bf16 rounding are relative to."""
    return {"y": _conv(inputs["x"], inputs["wt"], inputs["bias"], shape, absolute=True)}
