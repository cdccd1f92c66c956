"""scale_relu: z = max(a * x, 0), compared exactly.

The product is the fp32 one: IEEE multiplication is correctly rounded and
there is no addition to contract into an FMA, so every correct candidate
produces these exact bits."""
import numpy as np


def make_inputs(rng, shape):
    # Zero-mean, so about half of the outputs are clamped to 0 for either sign of a.
    return {"x": rng.uniform(-1.0, 1.0, shape["n"]).astype(np.float32)}


def reference(inputs, shape):
    prod = np.float32(shape["a"]) * inputs["x"]
    return {"z": np.maximum(prod, np.float32(0.0)).astype(np.float64)}


def naive(inputs, shape):
    a = float(shape["a"])
    z = np.empty(shape["n"], dtype=np.float64)
    for i, v in enumerate(inputs["x"].tolist()):
        # a * v in float64 is exact for two fp32 factors; rounding it once to
        # fp32 gives the correctly rounded fp32 product.
        p = float(np.float32(a * v))
        z[i] = p if p > 0.0 else 0.0
    return {"z": z}
