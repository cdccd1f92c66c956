"""launch_chain: eight steps of an asymmetric three-point stencil with zero
boundaries, in float64 with the kernels' float32 coefficients."""
import numpy as np

STEPS = 8


def make_inputs(rng, shape):
    return {"x": rng.uniform(-1.0, 1.0, shape["n"]).astype(np.float32)}


def _coefficients(shape):
    # The kernels receive c0, c1, c2 as float; use exactly those values.
    return tuple(float(np.float32(shape[k])) for k in ("c0", "c1", "c2"))


def reference(inputs, shape):
    c0, c1, c2 = _coefficients(shape)
    y = np.asarray(inputs["x"], dtype=np.float64)
    for _ in range(STEPS):
        p = np.pad(y, 1)
        y = (c0 * p[:-2] + c1 * p[1:-1]) + c2 * p[2:]
    return {"out": y}


def naive(inputs, shape):
    c0, c1, c2 = _coefficients(shape)
    y = inputs["x"].tolist()
    n = len(y)
    for _ in range(STEPS):
        nxt = []
        for i in range(n):
            left = y[i - 1] if i > 0 else 0.0
            right = y[i + 1] if i + 1 < n else 0.0
            nxt.append(c0 * left + c1 * y[i] + c2 * right)
        y = nxt
    return {"out": np.array(y)}
