"""matmul_tiled: C = A @ B in fp32, checked against float64 with a tolerance
scaled by (|A| |B|)_ij, the natural size of a dot product's rounding error."""
import numpy as np


def make_inputs(rng, shape):
    # Zero-mean U(-1, 1): long fp32 dot products neither grow nor stagnate.
    m, n, k = shape["M"], shape["N"], shape["K"]
    return {
        "A": rng.uniform(-1.0, 1.0, m * k).astype(np.float32),
        "B": rng.uniform(-1.0, 1.0, k * n).astype(np.float32),
    }


def _mats(inputs, shape):
    m, n, k = shape["M"], shape["N"], shape["K"]
    a = np.asarray(inputs["A"], dtype=np.float64).reshape(m, k)
    b = np.asarray(inputs["B"], dtype=np.float64).reshape(k, n)
    return a, b


def reference(inputs, shape):
    a, b = _mats(inputs, shape)
    return {"C": (a @ b).reshape(-1)}


def error_scale(inputs, shape):
    a, b = _mats(inputs, shape)
    return {"C": (np.abs(a) @ np.abs(b)).reshape(-1)}


def naive(inputs, shape):
    m, n, k = shape["M"], shape["N"], shape["K"]
    a = inputs["A"].tolist()
    b = inputs["B"].tolist()
    out = []
    for i in range(m):
        for j in range(n):
            s = 0.0
            for p in range(k):
                s += a[i * k + p] * b[p * n + j]
            out.append(s)
    return {"C": np.array(out)}
