"""shade_coherent / shade_mixed (one data group): per-element material shading.

out[4i:4i+4] = shade_m(hit[4i:4i+4]) for m = mat[i]: eight fixed fp32 recurrences,
material m running K_m passes of four updates s.c = a*s.c + (b*(s.p*s.q) + off)
(each an fmaf of an fmaf in the CUDA source). Every update has a + |b| + |off| <= 0.99,
so a state inside [-1, 1]^4 stays there and the map is contractive enough that the
fp32 result stays within about 2e-7 of this float64 reference (a float32 simulation
of the fused updates over 10^6 uniform inputs, run once by the builder: at most
1.6e-7); the tolerance is elementwise 1e-5. Two materials' results differ by at
least 0.03 on every one of 10^5 inputs, so a material mix-up always shows.

The members differ only in `[data]`, i.e. in how make_inputs lays out mat:
- generator "long_runs" (shade_coherent): runs of one material whose lengths are
  geometric with mean L = max(1, min(mean_run, n / min_runs)), the material of each
  run uniform over 0..7; min_runs keeps many runs at the gate's small n.
- generator "iid" (shade_mixed): every element's material uniform over 0..7.
hit is uniform in [-1, 1) in both, drawn first from the same rng, so at one seed the
members share hit and differ only in mat.

Statistics of the hidden property at the timing shape (n = 2^25), computed by the
builder by running make_inputs with seed 20260101 (the slip's seed), splitting mat into
maximal runs of one material, and counting the distinct materials in each aligned
group of 32 consecutive elements (one warp of a one-thread-per-element launch):
- long_runs: 14,356 maximal runs (L = 2048; adjacent generated runs share a material one
  time in eight, so the mean is about 2048 * 8/7), length mean 2,337, median 1,618,
  p99 10,811, max 20,097; materials per warp mean 1.013, 98.7 % of warps see one
  material, max 3; material shares 12.1-13.2 %.
- iid: materials per warp mean 7.888 (the expectation 8 (1 - (7/8)^32) = 7.89),
  89.1 % of warps see all eight, min 5; material shares 12.49-12.51 %.
make_inputs takes about 6-7 s at this shape on one core of the build machine.
"""
import numpy as np

# (K, ((a, b, off, p, q) for components x, y, z, w)): material m's recurrence,
# the same constants as the CUDA source's shade0 ... shade7 (rounded to fp32 below).
MATERIALS = (
    (12, ((0.85, 0.08, -0.03, 2, 3), (0.87, -0.07, 0.02, 1, 2), (0.85, -0.07, 0.03, 1, 3), (0.88, 0.05, -0.03, 0, 1))),
    (20, ((0.85, 0.06, 0.02, 1, 1), (0.89, -0.08, -0.02, 0, 2), (0.84, -0.05, -0.03, 2, 2), (0.91, 0.05, 0.01, 2, 3))),
    (14, ((0.84, -0.07, -0.02, 1, 2), (0.87, 0.04, 0.01, 3, 3), (0.86, -0.04, -0.05, 0, 0), (0.84, 0.07, 0.01, 1, 1))),
    (24, ((0.91, 0.05, -0.02, 1, 2), (0.87, 0.04, 0.01, 1, 3), (0.87, 0.07, -0.04, 2, 3), (0.88, -0.07, 0.04, 0, 0))),
    (10, ((0.90, 0.04, -0.02, 2, 3), (0.84, -0.07, -0.02, 0, 3), (0.88, 0.04, -0.02, 0, 0), (0.84, 0.04, 0.04, 3, 3))),
    (18, ((0.91, -0.04, -0.03, 0, 2), (0.84, -0.07, 0.04, 3, 3), (0.90, 0.05, -0.02, 2, 2), (0.85, 0.06, -0.02, 2, 3))),
    (16, ((0.86, 0.07, 0.03, 3, 3), (0.85, -0.05, -0.01, 1, 2), (0.85, 0.07, 0.04, 0, 1), (0.87, -0.07, -0.02, 2, 2))),
    (22, ((0.85, 0.06, 0.04, 1, 3), (0.90, 0.06, -0.01, 3, 3), (0.88, -0.06, -0.02, 1, 2), (0.89, 0.06, -0.03, 2, 3))),
)
N_MATERIALS = len(MATERIALS)


def _f32(v):
    """A source literal such as 0.85f, as the GPU holds it."""
    return float(np.float32(v))


def _materials(rng, n, data):
    gen = data.get("generator")
    if gen == "iid":
        return rng.integers(0, N_MATERIALS, n, dtype=np.uint8)
    if gen == "long_runs":
        mean = max(1.0, min(float(data["mean_run"]), n / float(data["min_runs"])))
        k = int(1.5 * n / mean) + 64
        lengths = rng.geometric(1.0 / mean, size=k)
        while int(lengths.sum()) < n:  # practically never: k runs cover 1.5 n on average
            lengths = np.concatenate([lengths, rng.geometric(1.0 / mean, size=k)])
        ids = rng.integers(0, N_MATERIALS, lengths.size, dtype=np.uint8)
        return np.repeat(ids, lengths)[:n]
    raise ValueError(f"families/shade_*/family.toml: [data] generator {gen!r} is not 'long_runs' or 'iid'")


def make_inputs(rng, shape, data):
    n = int(shape["n"])
    hit = rng.random(4 * n, dtype=np.float32) * np.float32(2.0) - np.float32(1.0)
    return {"mat": _materials(rng, n, data), "hit": hit}


def _shade(m, s):
    """Material m's recurrence on a (4, k) float64 state."""
    K, comps = MATERIALS[m]
    s = s.copy()
    coef = [(_f32(a), _f32(b), _f32(off), p, q) for a, b, off, p, q in comps]
    for _ in range(K):
        for c, (a, b, off, p, q) in enumerate(coef):
            s[c] = a * s[c] + (b * (s[p] * s[q]) + off)
    return s


def reference(inputs, shape):
    mat = np.asarray(inputs["mat"])
    hit = np.asarray(inputs["hit"], dtype=np.float64).reshape(-1, 4)
    out = np.empty_like(hit)
    for m in range(N_MATERIALS):
        sel = mat == m
        if sel.any():
            out[sel] = _shade(m, hit[sel].T.copy()).T
    return {"out": out.reshape(-1)}


def naive(inputs, shape):
    mat = inputs["mat"].tolist()
    hit = np.asarray(inputs["hit"], dtype=np.float64).tolist()
    out = []
    for i, m in enumerate(mat):
        K, comps = MATERIALS[m]
        s = hit[4 * i:4 * i + 4]
        for _ in range(K):
            for c, (a, b, off, p, q) in enumerate(comps):
                s[c] = _f32(a) * s[c] + (_f32(b) * (s[p] * s[q]) + _f32(off))
        out.extend(s)
    return {"out": np.array(out)}
