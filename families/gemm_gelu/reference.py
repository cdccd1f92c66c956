"""Y = GELU(X @ W + b) with the exact erf GELU, bf16 X, W and Y, fp32 b.
The reference is float64 from the rounded bf16 inputs; the tolerance is
8e-3 |ref| (two bf16 half-ulps) plus 1e-3 (|X| |W|)_ij for the fp32 sum."""
import math

import ml_dtypes
import numpy as np

_erf = np.vectorize(math.erf, otypes=[np.float64])


def make_inputs(rng, shape):
    # X ~ U(-1, 1); W ~ U(-2/sqrt(K), 2/sqrt(K)) so that X @ W has a standard
    # deviation near 2/3 at every K; b ~ U(-1, 1). Pre-activations then span
    # GELU's curved range (about -3 to 3) instead of its linear tails.
    m, n, k = shape["M"], shape["N"], shape["K"]
    w = 2.0 / math.sqrt(k)
    return {
        "X": rng.uniform(-1.0, 1.0, m * k).astype(np.float32).astype(ml_dtypes.bfloat16),
        "W": rng.uniform(-w, w, k * n).astype(np.float32).astype(ml_dtypes.bfloat16),
        "b": rng.uniform(-1.0, 1.0, n).astype(np.float32),
    }


def _mats(inputs, shape):
    m, n, k = shape["M"], shape["N"], shape["K"]
    x = np.asarray(inputs["X"]).astype(np.float64).reshape(m, k)
    w = np.asarray(inputs["W"]).astype(np.float64).reshape(k, n)
    return x, w, np.asarray(inputs["b"], dtype=np.float64)


def reference(inputs, shape):
    x, w, b = _mats(inputs, shape)
    h = x @ w + b
    return {"Y": (0.5 * h * (1.0 + _erf(h / math.sqrt(2.0)))).reshape(-1)}


def error_scale(inputs, shape):
    # rtol 8e-3 on this scale = 8e-3 |ref| + 1e-3 (|X| |W|)_ij.
    x, w, _ = _mats(inputs, shape)
    return {"Y": np.abs(reference(inputs, shape)["Y"]) + 0.125 * (np.abs(x) @ np.abs(w)).reshape(-1)}


def naive(inputs, shape):
    m, n, k = shape["M"], shape["N"], shape["K"]
    x, w, b = _mats(inputs, shape)
    out = []
    for i in range(m):
        for j in range(n):
            s = float(b[j])
            for p in range(k):
                s += x[i, p] * w[p, j]
            out.append(0.5 * s * (1.0 + math.erf(s / math.sqrt(2.0))))
    return {"Y": np.array(out)}
