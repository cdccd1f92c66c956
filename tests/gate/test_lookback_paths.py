"""scan_lookback's single-pass option on look-back states the emulated gate never reaches.

Why: the emulator runs blocks one at a time in ticket order, so a tile's
predecessors have always published their inclusive prefix and the look-back
stops at the first window. Here the ticket starts at tile k and tiles 0..k-1
are pre-published with a chosen mix of aggregate (flag 1) and inclusive
(flag 2) status words, as a GPU run would leave them mid-flight; one block
must then walk back over aggregates, across 32-tile windows, to the nearest
inclusive prefix. Expected values are NumPy prefix sums of the same inputs.
The last test proves the family's gate shapes do reach that walk: its wrong
variant window_dropped.cu fails there, and only through the window walk.
"""
from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

from plugins.family.plan import BufferArg, ResolvedLaunch, ScalarArg

pytestmark = pytest.mark.skipif(shutil.which("g++") is None, reason="g++ is not installed: the CPU emulator compiles kernels with it")

FAMILY = Path(__file__).parents[2] / "families" / "scan_lookback"
TILE = 8192
THREADS = 512

# (tile index k the block gets, which predecessors hold an inclusive prefix)
CASES = {
    "aggregates_back_to_tile_0": (40, lambda t: t == 0),
    "sparse_prefixes": (70, lambda t: t % 23 == 0),
    "no_prefix_at_all": (5, lambda t: False),
    "prefix_in_second_window": (33, lambda t: t == 1),
    "prefix_at_window_edge": (64, lambda t: t == 31),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_lookback_walks_to_nearest_prefix(case):
    from plugins.gate.emulate import run_source

    k, has_prefix = CASES[case]
    n = (k + 1) * TILE - 100  # the block's own tile is partial
    rng = np.random.default_rng(k)
    x = rng.integers(0, 16, n, dtype=np.int32)
    padded = np.zeros((k + 1) * TILE, np.int64)
    padded[:n] = x
    tile_sums = padded.reshape(-1, TILE).sum(axis=1)
    inclusive = np.cumsum(tile_sums)
    state = np.zeros(k + 1, np.uint64)
    for t in range(k):
        flag, value = (2, inclusive[t]) if has_prefix(t) else (1, tile_sums[t])
        state[t] = (flag << 32) | int(value)
    launch = ResolvedLaunch(
        "k0", (1, 1, 1), (THREADS, 1, 1), 0,
        (BufferArg("x"), BufferArg("y"), BufferArg("state"), BufferArg("ticket"), ScalarArg("n", "int", n)), False,
    )
    out = run_source((FAMILY / "rewrites" / "lookback.cu").read_text(), [launch],
                     {"x": x, "y": np.full(n, -1, np.int32), "state": state, "ticket": np.array([k], np.uint32)},
                     name="families/scan_lookback/rewrites/lookback.cu")
    want = np.cumsum(x.astype(np.int64))[k * TILE:].astype(np.int32)
    np.testing.assert_array_equal(out["y"][k * TILE:], want)
    published = int(out["state"][k])
    assert published >> 32 == 2, f"tile {k} published flag {published >> 32}, not an inclusive prefix"
    assert published & 0xFFFFFFFF == int(inclusive[k])
    assert np.all(out["y"][: k * TILE] == -1), "the block wrote outside its own tile"


# -- wrong/window_dropped.cu: proof that the family's gate reaches the multi-window walk ------

WRONG = FAMILY / "wrong" / "window_dropped.cu"
DEFECT = "p && lane <= first ?"
FIXED = "lane <= first ?"
COUNT_AT = "                if (p) break;"


def _big_gate_n() -> int:
    """The family's gate shape with at least 70 tiles (tiles 33 and later must cross a window)."""
    from plugins.family.manifest import load_family

    ns = [int(s["n"]) for s in load_family(FAMILY).shapes("gate") if -(-int(s["n"]) // TILE) >= 70]
    assert ns, "scan_lookback has no gate shape of 70 or more tiles: the multi-window look-back goes unchecked"
    return ns[0]


def _run_plan(source: str, n: int, counter: bool):
    from plugins.gate.emulate import run_source

    nt = -(-n // TILE)
    args = [BufferArg("x"), BufferArg("y"), BufferArg("state"), BufferArg("ticket"), ScalarArg("n", "int", n)]
    if counter:
        args.append(BufferArg("hops"))
    launch = ResolvedLaunch("k0", (nt, 1, 1), (THREADS, 1, 1), 0, tuple(args), False)
    x = np.random.default_rng(n).integers(0, 16, n, dtype=np.int32)
    bufs = {"x": x, "y": np.full(n, -1, np.int32), "state": np.zeros(nt, np.uint64), "ticket": np.zeros(1, np.uint32)}
    if counter:
        bufs["hops"] = np.zeros(1, np.uint32)
    out = run_source(source, [launch], bufs, name="families/scan_lookback/wrong/window_dropped.cu")
    return x, out


def test_window_dropped_fails_only_through_the_window_walk():
    """With its defect undone (and a counter of windows crossed) the variant passes on the
    family's big gate shape after crossing the expected number of 32-tile windows; as committed
    it is wrong exactly from tile 33 on, the first tile whose look-back crosses a window."""
    src = WRONG.read_text()
    assert src.count(DEFECT) == 1 and src.count(COUNT_AT) == 1
    n = _big_gate_n()
    nt = -(-n // TILE)

    fixed = src.replace(DEFECT, FIXED).replace(COUNT_AT, "                if (!p && lane == 0) atomicAdd(hops, 1u);\n" + COUNT_AT)
    fixed = fixed.replace("unsigned int* __restrict__ ticket, int n)", "unsigned int* __restrict__ ticket, int n,\n                              unsigned int* __restrict__ hops)")
    assert "hops)" in fixed
    x, out = _run_plan(fixed, n, counter=True)
    want = np.cumsum(x.astype(np.int64)).astype(np.int32)
    np.testing.assert_array_equal(out["y"], want)
    crossings = sum(max(0, -(-(b - 32) // 32)) for b in range(1, nt))
    assert crossings > 0 and int(out["hops"][0]) == crossings

    x, out = _run_plan(src, n, counter=False)
    want = np.cumsum(x.astype(np.int64)).astype(np.int32)
    np.testing.assert_array_equal(out["y"][: 33 * TILE], want[: 33 * TILE])
    assert np.all(out["y"][33 * TILE:] != want[33 * TILE:]), "the defect shows in every tile from 33 on"
