"""forest_shallow / forest_mid / forest_deep (one data group): roots of a forest (exact).

root[i] = the node reached from i by following parent until a node is its own parent.
Node numbers are a random permutation in every member, so every step lands at a
random place in memory. The members differ only in `[data]`:
- generator "stars" (shallow): one root per `per_root` nodes; of the other nodes a
  share `second` point to a random non-root node of depth 1, the rest to a random
  root (depth at most 2);
- generator "lines" (mid, deep): the permutation cut into paths of `length` nodes
  (the last one shorter when length does not divide n), each node's parent the one
  before it on its path, the first node its own parent (depth = position, at most
  length - 1).
At the timing shape (n = 2^25) the depths are, by construction: shallow 2^17 roots,
about 70 % depth 1 and 30 % depth 2 (mean 1.29); mid uniform on 0..15 (mean 7.5);
deep uniform on 0..255 (mean 127.5). make_inputs takes a few seconds at that shape.
"""
import numpy as np


def make_inputs(rng, shape, data):
    n = int(shape["n"])
    perm = rng.permutation(n).astype(np.int64)
    parent = np.empty(n, dtype=np.int64)
    gen = data.get("generator")
    if gen == "lines":
        pos = np.arange(n) % int(data["length"])
        prev = np.arange(n) - 1
        prev[pos == 0] = np.arange(n)[pos == 0]
        parent[perm] = perm[prev]
    elif gen == "stars":
        r = max(1, n // int(data["per_root"]))
        roots, rest = perm[:r], perm[r:]
        second = rng.random(rest.size) < float(data["second"])
        ones, twos = rest[~second], rest[second]
        if ones.size == 0:
            ones, twos = twos[:1], twos[1:]
        parent[roots] = roots
        parent[ones] = roots[rng.integers(0, r, ones.size)]
        parent[twos] = ones[rng.integers(0, ones.size, twos.size)]
    else:
        raise ValueError(f"families/forest_*/family.toml: [data] generator {gen!r} is neither 'lines' nor 'stars'")
    return {"parent": parent.astype(np.int32)}


def reference(inputs, shape):
    root = np.asarray(inputs["parent"], dtype=np.int64)
    while True:
        nxt = root[root]
        if np.array_equal(nxt, root):
            return {"root": root}
        root = nxt


def naive(inputs, shape):
    parent = inputs["parent"].tolist()
    out = []
    for i in range(len(parent)):
        y = i
        while parent[y] != y:
            y = parent[y]
        out.append(y)
    return {"root": np.array(out, dtype=np.int64)}
