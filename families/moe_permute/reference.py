"""moe_permute: top-2-of-8 token permutation (exact).

Routing: per token, the top two of 8 Gumbel-perturbed expert scores with
uneven expert weights, so the two experts are distinct, slot 0 holds the
higher score, and the expert segments differ in size.
Outputs: Xp (token rows grouped by expert, by token within an expert),
offsets (first destination row of each expert, and 2T), rows (the token of
each destination row) and dst (the destination row of each token's slot).
"""
import ml_dtypes
import numpy as np

E = 8


def make_inputs(rng, shape):
    T, H = shape["T"], shape["H"]
    weight = np.log(rng.uniform(0.5, 2.0, E))
    score = weight + rng.gumbel(size=(T, E))
    top2 = np.argsort(-score, axis=1)[:, :2]
    x = rng.standard_normal((T, H), dtype=np.float32).astype(ml_dtypes.bfloat16)
    return {"ids": top2.astype(np.int32).reshape(-1), "X": x.reshape(-1)}


def reference(inputs, shape):
    T, H = shape["T"], shape["H"]
    ids = inputs["ids"].astype(np.int64)
    token = np.repeat(np.arange(T), 2)
    order = np.lexsort((token, ids))          # by expert, then token (then slot)
    dst = np.empty(2 * T, np.int32)
    dst[order] = np.arange(2 * T)
    rows = token[order].astype(np.int32)
    offsets = np.concatenate([[0], np.cumsum(np.bincount(ids, minlength=E))]).astype(np.int32)
    x = inputs["X"].reshape(T, H).astype(np.float64)
    return {"Xp": x[rows].reshape(-1), "offsets": offsets, "rows": rows, "dst": dst}


def naive(inputs, shape):
    T, H = shape["T"], shape["H"]
    ids = inputs["ids"].tolist()
    xs = inputs["X"].astype(np.float64).tolist()
    rows, dst, offsets, xp = [], [0] * (2 * T), [], []
    for e in range(E):
        offsets.append(len(rows))
        for t in range(T):
            for s in range(2):
                if ids[2 * t + s] == e:
                    dst[2 * t + s] = len(rows)
                    rows.append(t)
                    xp.extend(xs[t * H:(t + 1) * H])
    offsets.append(len(rows))
    return {"Xp": np.array(xp), "offsets": np.array(offsets, np.int32),
            "rows": np.array(rows, np.int32), "dst": np.array(dst, np.int32)}
