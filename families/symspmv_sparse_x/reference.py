"""symspmv_sparse_x / symspmv_dense_x: y = A x for a symmetric sparse A (a data group).

The matrix is the same rule in both members (and the same draw for a given seed):
block diagonal in blocks of BLOCK = 256 consecutive vertices (the last block holds the
n % 256 left over), each block a random deg-regular multigraph, i.e. a batch of small
graphs. Each of deg rounds draws a random perfect matching of every block's vertices
(the block in a random order, sorted by 24 random bits per vertex with rare ties left in
index order, then consecutive pairs); a matched pair {u, v} gets one weight w, |w|
uniform in [0.5, 1.5) with a random sign, stored in row u as (v, w) and in row v as
(u, w); in a block of odd size the unmatched vertex gets a self-loop (u, w) that round.
Row u's k-th entry is its partner in round k, so rowptr = deg * arange(n + 1), and A is
exactly symmetric (a pair met twice is two entries; both are summed).

What differs is x ([data], generator "density"): exactly round(density * n) nonzero
entries at uniformly random positions, |x| uniform in [0.5, 1.5) with a random sign;
every other entry exactly 0.0.

Statistics of the generated data at the timing shape (n = 2^23, deg = 16), computed by
running make_inputs (seeds 0 and 1 for the sparse member, seed 0 for the dense one) and
counting (generated data, not GPU measurements; make_inputs took about 10 s of CPU there):
- symspmv_sparse_x (density 0.08): 671,089 nonzero x (8.0000 %); per 32-column warp 2.56
  nonzero on average, 6.9 % of warps with none, p99 7, max 11; the rows a push walks hold
  10,737,424 of the 134,217,728 nonzeros (8.0 %).
- symspmv_dense_x (density 0.90): 7,549,747 nonzero x (90.0000 %); per warp 28.8 on
  average, p99 32, min 19; a push walks 120,795,952 nonzeros (90.0 %).
- both: every column of a row lies in the row's 256-block; no diagonal entries (every block
  is full and even); 0.46 repeated partners per row on average (a pair matched in two rounds).
"""
import numpy as np

BLOCK = 256


def _block_orders(rng, full):
    """A random order of each of `full` blocks of BLOCK vertices, as vertex ids: every block's
    0..255 sorted by 24 random key bits (ties, about 0.2 % of blocks, keep index order)."""
    keys = rng.integers(0, 1 << 24, (full, BLOCK), dtype=np.uint32) << np.uint32(8)
    keys |= np.arange(BLOCK, dtype=np.uint32)
    keys.sort(axis=1)
    return ((keys & np.uint32(BLOCK - 1)).astype(np.int32) + BLOCK * np.arange(full, dtype=np.int32)[:, None]).reshape(-1)


def _weights(rng, size):
    """|w| uniform in [0.5, 1.5) with a random sign, from one uniform draw in [-1, 1)."""
    t = rng.random(size, dtype=np.float32) * np.float32(2) - np.float32(1)
    return np.copysign(np.float32(0.5) + np.abs(t), t).astype(np.float32)


def _matrix(rng, n, deg):
    """col and val (deg entries per row, row-major) of the block-diagonal matching graph."""
    full, rest = divmod(n, BLOCK)
    col = np.empty((deg, n), np.int32)           # round-major while drawing, transposed at the end
    val = np.empty((deg, n), np.float32)
    for k in range(deg):
        order = _block_orders(rng, full)
        if rest:
            order = np.concatenate([order, full * BLOCK + rng.permutation(rest).astype(np.int32)])
        # consecutive pairs inside each block (full blocks are even; a partial block of odd
        # size leaves its last vertex alone, with a self-loop)
        u, v = order[0:n - 1:2][: n // 2], order[1::2][: n // 2]
        w = _weights(rng, u.size)
        col[k, u], col[k, v] = v, u
        val[k, u], val[k, v] = w, w
        if rest % 2:
            col[k, order[-1]] = order[-1]
            val[k, order[-1]] = _weights(rng, 1)[0]
    return np.ascontiguousarray(col.T).reshape(-1), np.ascontiguousarray(val.T).reshape(-1)


def make_inputs(rng, shape, data):
    n, deg = shape["n"], shape["deg"]
    if data.get("generator") != "density" or not 0.0 < float(data.get("density", 0.0)) <= 1.0:
        raise ValueError(f"[data] must be generator = \"density\" with 0 < density <= 1, got {dict(data)}")
    col, val = _matrix(rng, n, deg)
    k = int(round(float(data["density"]) * n))
    x = np.zeros(n, np.float32)
    pos = rng.permutation(n)[:k]
    x[pos] = _weights(rng, k)
    rowptr = (deg * np.arange(n + 1, dtype=np.int64)).astype(np.int32)
    return {"rowptr": rowptr, "col": col, "val": val, "x": x}


def _terms(inputs, shape):
    n, deg = shape["n"], shape["deg"]
    x = inputs["x"].astype(np.float64)
    return inputs["val"].astype(np.float64).reshape(n, deg) * x[inputs["col"].astype(np.int64)].reshape(n, deg)


def reference(inputs, shape):
    """Pull: y[r] = sum over row r's entries of val * x[col]."""
    return {"y": _terms(inputs, shape).sum(axis=1)}


def error_scale(inputs, shape):
    """sum over row r of |val| |x[col]| (what fp32 accumulation in any order is relative to),
    plus 1e-3 of the row's sum of |val|: a row whose entries of x are all zero (about a
    quarter of the rows at density 0.08) keeps a positive scale and must come out within
    about 1e-8 of its weights of 0."""
    n, deg = shape["n"], shape["deg"]
    weights = np.abs(inputs["val"].astype(np.float64)).reshape(n, deg).sum(axis=1)
    return {"y": np.abs(_terms(inputs, shape)).sum(axis=1) + 1e-3 * weights}


def naive(inputs, shape):
    """Push, by plain loops: row j's entries scattered as column j (holds because A is symmetric)."""
    n = shape["n"]
    rowptr, col = inputs["rowptr"].tolist(), inputs["col"].tolist()
    val, x = inputs["val"].astype(np.float64).tolist(), inputs["x"].astype(np.float64).tolist()
    y = [0.0] * n
    for j in range(n):
        for k in range(rowptr[j], rowptr[j + 1]):
            y[col[k]] += val[k] * x[j]
    return {"y": np.array(y)}
