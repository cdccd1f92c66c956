"""transpose: out (W x H) = x (H x W) transposed, compared exactly (no arithmetic)."""
import numpy as np


def make_inputs(rng, shape):
    # Distinct random values, so a misplaced element cannot match by accident.
    return {"x": rng.uniform(-1.0, 1.0, shape["H"] * shape["W"]).astype(np.float32)}


def reference(inputs, shape):
    x = inputs["x"].astype(np.float64).reshape(shape["H"], shape["W"])
    return {"out": np.ascontiguousarray(x.T).reshape(-1)}


def naive(inputs, shape):
    H, W = shape["H"], shape["W"]
    x = inputs["x"]
    out = np.empty(H * W, dtype=np.float64)
    for r in range(H):
        for c in range(W):
            out[c * H + r] = float(x[r * W + c])
    return {"out": out}
