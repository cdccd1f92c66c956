"""fp8_gemv_b16: Y[m][n] = s[n] * sum_k X[m][k] W[n][k] in float64 from the fp16 X and e4m3 W.

W holds e4m3 codes of N(0, 1) * 96 (clipped to +-448, so no NaN code), like a
per-row-scaled fp8 weight matrix; s[n] is drawn in [0.5, 1.5] / 96.
"""
import math

import ml_dtypes
import numpy as np

M = 16


def make_inputs(rng, shape):
    N, K = shape["N"], shape["K"]
    w = np.clip(rng.standard_normal(N * K) * 96.0, -448.0, 448.0)
    return {
        "W": w.astype(np.float32).astype(ml_dtypes.float8_e4m3fn),
        "X": rng.standard_normal(M * K).astype(np.float16),
        "s": (rng.uniform(0.5, 1.5, N) / 96.0).astype(np.float32),
    }


def _mats(inputs, shape):
    N, K = shape["N"], shape["K"]
    W = inputs["W"].astype(np.float64).reshape(N, K)
    X = inputs["X"].astype(np.float64).reshape(M, K)
    return W, X, inputs["s"].astype(np.float64)


def reference(inputs, shape):
    W, X, s = _mats(inputs, shape)
    return {"Y": ((X @ W.T) * s[None, :]).reshape(-1)}


def naive(inputs, shape):
    N, K = shape["N"], shape["K"]
    W = inputs["W"].astype(np.float64).tolist()
    X = inputs["X"].astype(np.float64).tolist()
    s = inputs["s"].astype(np.float64).tolist()
    Y = [s[n] * math.fsum(X[m * K + k] * W[n * K + k] for k in range(K)) for m in range(M) for n in range(N)]
    return {"Y": np.array(Y)}


def error_scale(inputs, shape):
    """s[n] * sum_k |X[m][k]| |W[n][k]|: what fp32 accumulation error is relative to."""
    W, X, s = _mats(inputs, shape)
    return {"Y": ((np.abs(X) @ np.abs(W).T) * np.abs(s)[None, :]).reshape(-1)}
