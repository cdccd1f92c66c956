"""argmax_vocab: the first index of each row's maximum (exact int32).

Rows are N(0, 1) logits. Planted maxima, in every seed and shape:
- rows r % 4 == 1: the maximum lies in the partial last 1024-element chunk
  (when V % 1024 != 0), which a loop over whole chunks never reads;
- rows r % 4 == 2: the maximum appears twice, at two random indices;
- rows r % 4 == 3: the maximum appears three times, at j, j + 1 (same float4
  or the next) and j + 129 (another lane), so only the first-index rule
  gives j.
Keep every value normal (never denormal): two_pass's second kernel finds the
index by exact equality with the row maximum under -ftz=true, which would
match flushed denormals as zeros.
"""
import numpy as np

CHUNK = 1024


def make_inputs(rng, shape):
    R, V = shape["R"], shape["V"]
    x = rng.standard_normal((R, V), dtype=np.float32)
    tail = V % CHUNK
    for r in range(R):
        top = np.float32(x[r].max() + 1.0)
        if r % 4 == 1 and tail:
            x[r, V - 1 - rng.integers(tail)] = top
        elif r % 4 == 2:
            a, b = rng.choice(V, size=2, replace=False)
            x[r, a] = x[r, b] = top
        elif r % 4 == 3 and V > 130:
            j = int(rng.integers(V - 130))
            x[r, j] = x[r, j + 1] = x[r, j + 129] = top
    return {"x": x.reshape(-1)}


def reference(inputs, shape):
    x = inputs["x"].reshape(shape["R"], shape["V"])
    return {"idx": np.argmax(x, axis=1).astype(np.int32)}


def naive(inputs, shape):
    R, V = shape["R"], shape["V"]
    xs = inputs["x"].tolist()
    out = []
    for r in range(R):
        best, where = None, -1
        for c in range(V):
            v = xs[r * V + c]
            if best is None or v > best:
                best, where = v, c
        out.append(where)
    return {"idx": np.array(out, dtype=np.int32)}
