"""C = A @ B for bf16 A (M x K) and B (K x N) with an fp32 result, checked
against float64 products of the rounded bf16 inputs. The tolerance is scaled
by (|A| |B|)_ij, the natural size of a dot product's rounding error."""
import ml_dtypes
import numpy as np


def make_inputs(rng, shape):
    # Zero-mean U(-1, 1) drawn in fp32 and rounded to bf16 on the host.
    m, n, k = shape["M"], shape["N"], shape["K"]
    return {
        "A": rng.uniform(-1.0, 1.0, m * k).astype(np.float32).astype(ml_dtypes.bfloat16),
        "B": rng.uniform(-1.0, 1.0, k * n).astype(np.float32).astype(ml_dtypes.bfloat16),
    }


def _mats(inputs, shape):
    m, n, k = shape["M"], shape["N"], shape["K"]
    a = np.asarray(inputs["A"]).astype(np.float64).reshape(m, k)
    b = np.asarray(inputs["B"]).astype(np.float64).reshape(k, n)
    return a, b


def reference(inputs, shape):
    a, b = _mats(inputs, shape)
    return {"C": (a @ b).reshape(-1)}


def error_scale(inputs, shape):
    a, b = _mats(inputs, shape)
    return {"C": (np.abs(a) @ np.abs(b)).reshape(-1)}


def naive(inputs, shape):
    # A sum of K rank-one updates in k order: no matmul call, one loop over k.
    a, b = _mats(inputs, shape)
    c = np.zeros((shape["M"], shape["N"]))
    for p in range(shape["K"]):
        c += np.multiply.outer(a[:, p], b[p, :])
    return {"C": c.reshape(-1)}
