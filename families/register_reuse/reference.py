"""register_reuse: 31-tap convolution with zero padding, scaled tolerance."""
import numpy as np

TAPS = 31
HALF = 15


def make_inputs(rng, shape):
    # Zero-mean U(-1, 1) inputs; random weights are asymmetric, so a reversed
    # or shifted tap order changes every output.
    return {
        "x": rng.uniform(-1.0, 1.0, shape["n"]).astype(np.float32),
        "w": rng.uniform(-1.0, 1.0, TAPS).astype(np.float32),
    }


def _taps(inputs, shape):
    """(n, 31) matrix of w[k] * x[i + k - 15], zero outside x."""
    n = shape["n"]
    x = np.concatenate([np.zeros(HALF), inputs["x"].astype(np.float64), np.zeros(HALF)])
    w = inputs["w"].astype(np.float64)
    windows = np.lib.stride_tricks.sliding_window_view(x, TAPS)[:n]
    return windows * w


def reference(inputs, shape):
    return {"y": _taps(inputs, shape).sum(axis=1)}


def naive(inputs, shape):
    n = shape["n"]
    x, w = inputs["x"].tolist(), inputs["w"].tolist()
    y = []
    for i in range(n):
        acc = 0.0
        for k in range(TAPS):
            j = i + k - HALF
            if 0 <= j < n:
                acc += w[k] * x[j]
        y.append(acc)
    return {"y": np.array(y)}


def error_scale(inputs, shape):
    """sum_k |w[k] x[i+k-15]|: what fp32 rounding of the tap sum grows with."""
    return {"y": np.abs(_taps(inputs, shape)).sum(axis=1)}
