"""segsort_jitter / segsort_random: sort each 512-key fp32 segment ascending (a data group).

Both members draw an offset o_s uniform in [0, 1e4) per segment, then its 512 keys in
float64, rounded once to float32:
- generator "jitter" (parameter jitter = a): key[s, i] = o_s + i + U(-a, a), keys that were
  in order and moved a little (a re-sort of last frame's depths or timestamps);
- generator "uniform" (parameter span = w): key[s, i] = o_s + U(0, w), no order at all.
Every key is finite, none is -0.0; equal keys (rare after rounding) are equal floats, so
any order of them gives the same output.

Statistics of the generated data at the timing shape (segs = 2^17), computed by running
make_inputs with seed 0 and counting per segment (generated data, not GPU measurements;
make_inputs took about 2 s of CPU there; the counts come from the first 4,096 (jitter) or
512 (uniform) segments, by pairwise comparison and by running odd-even transposition in NumPy):
- segsort_jitter (jitter 3): inversions per segment mean 390 (0.76 per key), max 439;
  |rank - i| at most 5; bubble passes with the early exit (the last one swaps nothing)
  mean 5.35, max 6; odd-even rounds with two quiet ones at the end mean 7.4, max 8.
- segsort_random (span 512): inversions per segment mean 65,412 (128 per key), max 71,602;
  bubble passes mean 485, p99 510, max 512; odd-even rounds mean 495, p99 512, max 513.
- both: at least 509 distinct keys in every sampled segment (a few equal pairs after rounding).
"""
import numpy as np

SEG = 512


def make_inputs(rng, shape, data):
    segs = shape["segs"]
    offset = rng.uniform(0.0, 1e4, (segs, 1))
    gen = data.get("generator")
    if gen == "jitter":
        a = float(data["jitter"])
        keys = offset + np.arange(SEG) + rng.uniform(-a, a, (segs, SEG))
    elif gen == "uniform":
        keys = offset + rng.uniform(0.0, float(data["span"]), (segs, SEG))
    else:
        raise ValueError(f'[data] generator must be "jitter" (with jitter) or "uniform" (with span), got {dict(data)}')
    return {"in": keys.astype(np.float32).reshape(-1)}


def reference(inputs, shape):
    return {"out": np.sort(inputs["in"].reshape(shape["segs"], SEG), axis=1).reshape(-1)}


def naive(inputs, shape):
    """Plain insertion sort of each segment."""
    keys = inputs["in"].tolist()
    out = []
    for s in range(shape["segs"]):
        seg = []
        for v in keys[s * SEG:(s + 1) * SEG]:
            j = len(seg)
            while j > 0 and seg[j - 1] > v:
                j -= 1
            seg.insert(j, v)
        out.extend(seg)
    return {"out": np.array(out, np.float32)}
