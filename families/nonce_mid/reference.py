"""nonce_easy / nonce_mid / nonce_hard (one data group): hashcash nonce search (exact).

nonce[i] = the smallest c >= 0 with clz(hash2(mix(key[i]), c)) >= d[i], where mix is the
32-bit finaliser of the CUDA source and hash2 applies it twelve times (round r adds
0x9e3779b9 * r first); all arithmetic is uint32 and wraps. The number of tries is
geometric with success probability 2^-d: the difficulty sets the work.

The members differ only in `[data]`: generator "levels" draws each d[i] uniformly from
the list `d` ([0, 1] easy, [3, 4] mid, [6] hard). key is uniform over uint32 in all three,
drawn first from the same rng, so at one seed the members share key.

Statistics of the hidden property at the timing shape (n = 2^23), computed by the builder
by running make_inputs and this reference with seed 20260101 (the slip's seed) and
counting tries = nonce + 1 per item, and the largest tries in each aligned group of 32
items (one warp of a one-thread-per-item launch):
- easy (d in {0, 1}): d = 0 for 49.97 % of items; tries mean 1.500, median 1, p99 6,
  max 24; largest tries per 32 items mean 5.35, median 5, max 24.
- mid (d in {3, 4}): tries mean 12.01, median 8, p99 61, max 246; largest per 32
  items mean 53.4, median 50, max 246.
- hard (d = 6): tries mean 64.02, median 45, p99 293, max 980; largest per 32 items
  mean 258.4, median 244, max 980.
The per-32 means agree with the exact order statistics E[max of 32 geometric tries]
(5.36, 53.3, 258.2) that family.toml's reasoning uses. make_inputs takes under 1 s at
this shape; the reference 5 s (easy) to 150 s (hard) on one core of the build machine
(it is run on gate and tiny shapes only).
"""
import numpy as np

MASK = 0xFFFFFFFF
GOLDEN = 0x9E3779B9
ROUNDS = 12


def make_inputs(rng, shape, data):
    n = int(shape["n"])
    if data.get("generator") != "levels":
        raise ValueError(f"families/nonce_*/family.toml: [data] generator {data.get('generator')!r} is not 'levels'")
    key = rng.integers(0, 2**32, n, dtype=np.uint32)
    levels = np.asarray(data["d"], dtype=np.uint8)
    return {"key": key, "d": levels[rng.integers(0, levels.size, n)]}


def _mix(h):
    h = h ^ (h >> np.uint32(16))
    h = h * np.uint32(0x7FEB352D)
    h = h ^ (h >> np.uint32(15))
    h = h * np.uint32(0x846CA68B)
    return h ^ (h >> np.uint32(16))


def _hash2(hk, c):
    h = hk ^ c
    for r in range(ROUNDS):
        h = _mix(h + np.uint32((GOLDEN * r) & MASK))
    return h


def _ok(h, d):
    """clz(h) >= d, for uint32 h and d in 0..32."""
    return (h.astype(np.uint64) >> (32 - d.astype(np.uint64))) == 0


def reference(inputs, shape):
    hk = _mix(np.asarray(inputs["key"], dtype=np.uint32))
    d = np.asarray(inputs["d"])
    nonce = np.zeros(hk.size, dtype=np.int64)
    todo = np.arange(hk.size)
    c = 0
    with np.errstate(over="ignore"):
        while todo.size:
            ok = _ok(_hash2(hk[todo], np.uint32(c)), d[todo])
            nonce[todo[ok]] = c
            todo = todo[~ok]
            c += 1
    return {"nonce": nonce}


def _mix_int(h):
    h ^= h >> 16
    h = (h * 0x7FEB352D) & MASK
    h ^= h >> 15
    h = (h * 0x846CA68B) & MASK
    return h ^ (h >> 16)


def _clz(h):
    return 32 - h.bit_length()


def naive(inputs, shape):
    out = []
    for key, d in zip(inputs["key"].tolist(), inputs["d"].tolist()):
        hk = _mix_int(key)
        c = 0
        while True:
            h = hk ^ c
            for r in range(ROUNDS):
                h = _mix_int((h + GOLDEN * r) & MASK)
            if _clz(h) >= d:
                break
            c += 1
        out.append(c)
    return {"nonce": np.array(out, dtype=np.int64)}
