"""stride_smem: out = x in fp32, compared exactly (a copy has no rounding)."""
import numpy as np


def make_inputs(rng, shape):
    # Distinct random values, so a misplaced element cannot match by accident.
    return {"x": rng.uniform(-1.0, 1.0, shape["n"]).astype(np.float32)}


def reference(inputs, shape):
    return {"out": inputs["x"].astype(np.float64)}


def naive(inputs, shape):
    # Segment by segment, as the start walks it: element base + c * 32 + r of
    # each 1024-element segment, for every (c, r) pair that lies below n.
    x, n = inputs["x"], shape["n"]
    out = np.full(n, np.nan)
    for base in range(0, n, 1024):
        for c in range(32):
            for r in range(32):
                g = base + c * 32 + r
                if g < n:
                    out[g] = float(x[g])
    return {"out": out}
