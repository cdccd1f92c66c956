"""spmv_rows_even / spmv_rows_hubs (a data group): y = A x for a CSR matrix with
32 * rows nonzeros. Both members share this file; [data].generator picks the
distribution of row lengths, the one thing that differs.

- "even": lengths 32 + d and 32 - d for rows / 2 pairs, d uniform in
  [-half_width, half_width], rows shuffled (an odd row out gets 32).
- "hubs": hub_share of the nonzeros in hub rows of min(hub_len, nnz / 64)
  each (at least one), at random rows; every other row a length from a
  Pareto law P(L >= l) = (l / m)^-alpha truncated to [m, min(body_max,
  hub rows / 2)], floored, with m found by bisection so that the body holds
  the rest; then +1 on random rows so that the total is exactly 32 * rows.

Columns (both members, one rule): row r's L nonzeros lie in the window
[r - W/2, r + W/2) with W = max(32, 2L): nonzero j at r - W/2 + j s + u, s =
W // L, u uniform in [0, s), wrapped mod rows. So columns within a row are
distinct and ascending (except across the wrap), neighbouring rows gather
neighbouring parts of x in both members, and a hub row reads its window of
x with stride about 2. val and x are uniform in [-1, 1).

Statistics at the timing shape (rows = 2^22), computed once by running
make_inputs with np.random.default_rng(0) and numpy (np.percentile of the
row lengths np.diff(rowptr)); statistics of generated data, not GPU
measurements:
- even: every row 16-48, mean 32, p10 19, median 32, p90 45, max 48;
  lanes of a thread-per-row warp do useful work 67.5 % of the time (mean
  over max of 32 consecutive rows), 4-lane groups 72.7 %.
- hubs: 16 hub rows of 524,288 (8,388,608 nonzeros, 6.25 %); the other
  4,194,288 rows: mean 30.0, min 7, p10 7, median 12, p90 47, p99 314,
  p99.9 1,594, max 4,095; the longest 1 % of them hold 26.4 % of their
  nonzeros, rows of 1,024 or more 11.8 % of all nonzeros; thread-per-row
  lane use 8.1 %.
make_inputs takes about 9 s of CPU time at the timing shape (process time on
this shared 2-core machine; about 5 GB of memory at its peak).
"""
import numpy as np

MEAN = 32                    # nonzeros per row on average: computes says 32 * rows in all


def _lengths(rng, rows, nnz, data):
    """Row lengths summing to exactly nnz, drawn as [data] says."""
    if data["generator"] == "even":
        d = rng.integers(-data["half_width"], data["half_width"] + 1, rows // 2, dtype=np.int8)
        lengths = np.concatenate([MEAN + d, MEAN - d, np.full(rows % 2, MEAN, np.int8)])
        rng.shuffle(lengths)
        return lengths.astype(np.int64)
    if data["generator"] != "hubs":
        raise ValueError(f"reference.py: unknown [data] generator {data['generator']!r}; use 'even' or 'hubs'")
    hub_len = min(int(data["hub_len"]), nnz // 64)                      # its window of x, 2 hub_len wide, within rows
    hubs = max(1, int(nnz * data["hub_share"]) // hub_len)
    cap = min(int(data["body_max"]), max(1, hub_len // 2))
    alpha = float(data["alpha"])
    body_rows, body_nnz = rows - hubs, nnz - hubs * hub_len
    u = rng.random(body_rows, dtype=np.float32)

    def draw(m):                                                      # Pareto(alpha) on [m, cap], floored
        c = np.float32(1.0 - (m / cap) ** alpha)
        return np.minimum(np.floor(np.float32(m) * (1.0 - u * c) ** np.float32(-1.0 / alpha)), cap)

    lo, hi = 1.0, float(cap)                                          # the largest m whose lengths stay within the body
    if draw(lo).sum(dtype=np.float64) > body_nnz or draw(hi).sum(dtype=np.float64) < body_nnz:
        raise ValueError(f"reference.py: {body_rows} body rows of 1 to {cap} cannot hold {body_nnz} nonzeros; "
                         "use more rows (hub rows are at most nnz / 64 long, body rows half that)")
    for _ in range(36):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if draw(mid).sum(dtype=np.float64) <= body_nnz else (lo, mid)
    body = draw(lo).astype(np.int64)
    short = body_nnz - int(body.sum())                                # >= 0 and small: one more on random rows
    room = np.flatnonzero(body < cap)
    body[room[rng.choice(room.size, short, replace=False)]] += 1
    lengths = np.empty(rows, np.int64)
    is_hub = np.zeros(rows, bool)
    is_hub[rng.choice(rows, hubs, replace=False)] = True
    lengths[is_hub] = hub_len
    lengths[~is_hub] = body
    return lengths


def make_inputs(rng, shape, data):
    rows = shape["rows"]
    nnz = MEAN * rows
    lengths = _lengths(rng, rows, nnz, data)
    assert lengths.sum() == nnz and lengths.min() >= 1
    rowptr = np.zeros(rows + 1, np.int64)
    np.cumsum(lengths, out=rowptr[1:])
    width = np.maximum(32, 2 * lengths)
    step = (width // lengths).astype(np.int32)                        # 2 to 32
    # nonzero j of row r: r - W/2 + j * step + u, u uniform in [0, step) from 16 random bits
    col = np.repeat(step, lengths)
    u = rng.integers(0, 1 << 16, nnz, dtype=np.uint16).astype(np.int32)
    u *= col
    u >>= 16
    first = rowptr[:-1].astype(np.int32)
    col *= np.arange(nnz, dtype=np.int32) - np.repeat(first, lengths)   # j * step
    col += u
    del u
    col += np.repeat((np.arange(rows, dtype=np.int64) - width // 2).astype(np.int32), lengths)
    np.mod(col, rows, out=col)
    val = rng.random(nnz, dtype=np.float32) * 2 - 1
    x = rng.random(rows, dtype=np.float32) * 2 - 1
    return {"rowptr": rowptr.astype(np.int32), "col": col, "val": val, "x": x}


def _row_sums(inputs, shape, absolute):
    rows = shape["rows"]
    rowptr = inputs["rowptr"].astype(np.int64)
    terms = inputs["val"].astype(np.float64) * inputs["x"].astype(np.float64)[inputs["col"]]
    row = np.repeat(np.arange(rows), np.diff(rowptr))
    return np.bincount(row, weights=np.abs(terms) if absolute else terms, minlength=rows)


def reference(inputs, shape):
    return {"y": _row_sums(inputs, shape, absolute=False)}


def error_scale(inputs, shape):
    """sum over the row of |val * x[col]|: what fp32 sums in any order (and atomics) err relative to."""
    return {"y": _row_sums(inputs, shape, absolute=True)}


def naive(inputs, shape):
    rowptr, col = inputs["rowptr"].tolist(), inputs["col"].tolist()
    val, x = inputs["val"].astype(np.float64).tolist(), inputs["x"].astype(np.float64).tolist()
    y = []
    for r in range(shape["rows"]):
        s = 0.0
        for k in range(rowptr[r], rowptr[r + 1]):
            s += val[k] * x[col[k]]
        y.append(s)
    return {"y": np.array(y)}
