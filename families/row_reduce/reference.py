"""row_reduce: per-row sums of an fp32 matrix, checked against float64 with a
tolerance scaled by the row's sum of |x| (near-zero sums must not fail falsely)."""
import numpy as np


def make_inputs(rng, shape):
    # Zero-mean U(-1, 1): a long fp32 running sum stays small and keeps its precision.
    return {"x": rng.uniform(-1.0, 1.0, shape["R"] * shape["C"]).astype(np.float32)}


def reference(inputs, shape):
    x = np.asarray(inputs["x"], dtype=np.float64).reshape(shape["R"], shape["C"])
    return {"out": x.sum(axis=1)}


def error_scale(inputs, shape):
    x = np.asarray(inputs["x"], dtype=np.float64).reshape(shape["R"], shape["C"])
    return {"out": np.abs(x).sum(axis=1)}


def naive(inputs, shape):
    rows, cols = shape["R"], shape["C"]
    x = inputs["x"].tolist()
    out = []
    for r in range(rows):
        s = 0.0
        for c in range(cols):
            s += x[r * cols + c]
        out.append(s)
    return {"out": np.array(out)}
