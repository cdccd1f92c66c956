"""bytehist_spread / bytehist_zero (a data group): hist[b] = sum of v[i] over the
inputs whose uint8 code x[i] is b, 256 fp32 bins. Both members share this file;
[data].generator picks how the codes spread, the one thing that differs.

- "spread": codes uniform over 0..255 (an equal-mass codebook: every code
  equally likely).
- "zero_point": code 0 with probability p_zero (ReLU outputs at the zero
  point), otherwise 1 + min(254, floor(|N(0, sigma)|)).
Values v are uniform in [-1, 1) in both members, independent of the codes.

Statistics at the timing shape (n = 2^27), computed once by running
make_inputs with np.random.default_rng(0) and counting in numpy (statistics of
generated data, not GPU measurements); "per warp" is over the first 2^20
aligned groups of 32 consecutive inputs, as one warp instruction of the start
sees them:
- spread: every code 0.389-0.392 % of inputs; per warp 30.1 distinct codes
  on average (min 22), the most lanes on one code 1.9 on average (max 6),
  the most lanes on one of the 32 shared-memory banks (code % 32) 3.5 on
  average (p99 6, max 9).
- zero_point: code 0 for 92.0 % of inputs, codes 1-40 for 5.5 %, codes above
  100 for 0.1 %; per warp 3.5 distinct codes on average (p99 7, max 13), 29.4
  lanes on code 0, the most lanes on one bank 29.5 on average (min 20).
make_inputs takes about 3.5 s of CPU time at the timing shape (process time on this
shared 2-core machine).
"""
import numpy as np


def _codes(rng, n, data):
    if data["generator"] == "spread":
        return rng.integers(0, 256, n, dtype=np.uint8)
    if data["generator"] != "zero_point":
        raise ValueError(f"reference.py: unknown [data] generator {data['generator']!r}; use 'spread' or 'zero_point'")
    nonzero = rng.random(n, dtype=np.float32) >= np.float32(data["p_zero"])
    mag = np.abs(rng.standard_normal(int(nonzero.sum()), dtype=np.float32)) * np.float32(data["sigma"])
    x = np.zeros(n, np.uint8)
    x[nonzero] = 1 + np.minimum(254, mag).astype(np.uint8)
    return x


def make_inputs(rng, shape, data):
    n = shape["n"]
    x = _codes(rng, n, data)
    v = rng.random(n, dtype=np.float32) * 2 - 1
    return {"x": x, "v": v}


def reference(inputs, shape):
    return {"hist": np.bincount(inputs["x"], weights=inputs["v"].astype(np.float64), minlength=256)}


def error_scale(inputs, shape):
    """sum of |v| per bin, what fp32 sums in any order (and atomics) err relative to, plus 1 (the
    largest |v|) so that a bin no input reaches still has a scale: rtol * 1 is far below any one value
    a wrong variant loses."""
    return {"hist": np.bincount(inputs["x"], weights=np.abs(inputs["v"].astype(np.float64)), minlength=256) + 1.0}


def naive(inputs, shape):
    s = [0.0] * 256
    for b, w in zip(inputs["x"].tolist(), inputs["v"].astype(np.float64).tolist()):
        s[b] += w
    return {"hist": np.array(s)}
