"""Clusters, ticket order and deadlocks in the CPU emulator (tests/fixtures/emu/cluster.cu).

Every CTA of a cluster runs concurrently (the emulator reads __cluster_dims__ from the
source); cluster.sync() is a barrier over all their threads; map_shared_rank reaches the
other blocks' shared memory, and touching the shared memory of a block that has already
exited is a named error. Blocks outside clusters run one at a time, so a single-pass scan
that takes its tile from an atomic ticket finds every predecessor done, while one that
waits on blockIdx - 1 spins and is stopped by the time limit. A wait that can never be
satisfied is reported at once instead of hanging."""
from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

from plugins.family.plan import BufferArg, ResolvedLaunch, ScalarArg

pytestmark = pytest.mark.skipif(shutil.which("g++") is None, reason="g++ is not installed: the CPU emulator compiles kernels with it")

SRC = (Path(__file__).parents[1] / "fixtures" / "emu" / "cluster.cu").read_text()


def run(kernel, grid, block, args, buffers, timeout_s=60.0):
    from plugins.gate.emulate import run_source

    g = tuple(grid) + (1,) * (3 - len(grid))
    return run_source(SRC, [ResolvedLaunch(kernel, g, (block, 1, 1), 0, tuple(args), False)], buffers,
                      name="cluster.cu", timeout_s=timeout_s)


def i32(name, v):
    return ScalarArg(name, "int", v)


def k0_inputs(nb):
    x = np.random.default_rng(2).integers(-8, 9, nb * 256).astype(np.float32)  # integers: every sum is exact
    return x, {"x": x, "out": np.full(nb * 256, np.nan, np.float32), "info": np.zeros(4 * nb, np.uint32)}


def test_cluster_blocks_share_memory_and_know_their_ranks():
    nb = 12
    x, bufs = k0_inputs(nb)
    got = run("k0", (nb,), 256, [BufferArg("x"), BufferArg("out"), BufferArg("info"), i32("resync", 1)], bufs)
    totals = x.reshape(nb // 4, 4 * 256).sum(axis=1)
    np.testing.assert_array_equal(got["out"].reshape(nb // 4, 4 * 256), x.reshape(nb // 4, 4 * 256) + totals[:, None])
    info = got["info"].reshape(nb, 4)
    np.testing.assert_array_equal(info[:, 0], np.arange(nb) % 4)  # block_rank
    assert np.all(info[:, 1] == 4) and np.all(info[:, 2] == 4)  # num_blocks, dim_blocks().x
    np.testing.assert_array_equal(info[:, 3], np.arange(nb) % 4)  # block_index().x


def test_reading_an_exited_blocks_shared_memory_is_named():
    from plugins.gate.emulate import EmuOutOfBounds

    _, bufs = k0_inputs(4)
    with pytest.raises(EmuOutOfBounds, match=r"shared memory of a block of the cluster that has already exited.*cluster.sync\(\) before exit"):
        run("k0", (4,), 256, [BufferArg("x"), BufferArg("out"), BufferArg("info"), i32("resync", 0)], bufs)


def test_two_dimensional_cluster_with_split_arrive_and_wait():
    gx, gy = 4, 2
    got = run("k1", (gx, gy), 64, [BufferArg("info")], {"info": np.zeros(5 * gx * gy, np.uint32)})
    info = got["info"].reshape(gy, gx, 5)
    by, bx = np.meshgrid(np.arange(gy), np.arange(gx), indexing="ij")
    rank = (bx % 2) + 2 * (by % 2)
    np.testing.assert_array_equal(info[..., 0], rank)
    np.testing.assert_array_equal(info[..., 1], bx % 2)
    np.testing.assert_array_equal(info[..., 2], by % 2)
    assert np.all(info[..., 3] == 2)
    # the partner of rank r is r ^ 1: the other block of the same row of the cluster
    partner_x = bx ^ 1
    np.testing.assert_array_equal(info[..., 4], 100 * partner_x + by)


def test_cluster_sync_with_exited_threads_is_a_reported_deadlock():
    from plugins.gate.emulate import EmuLaunchError, EmuTimeout

    with pytest.raises(EmuLaunchError, match=r"no thread can make progress.*200 wait at cluster.sync\(\); 56 have exited") as info:
        run("k2", (2,), 256, [BufferArg("out"), i32("live", 200)], {"out": np.zeros(512, np.float32)}, timeout_s=30)
    assert not isinstance(info.value, EmuTimeout)


def test_grid_must_be_a_multiple_of_the_cluster():
    from plugins.gate.emulate import EmuLaunchError

    with pytest.raises(EmuLaunchError, match=r"grid \(6, 1, 1\) is not a multiple of __cluster_dims__\(4, 1, 1\)"):
        _, bufs = k0_inputs(6)
        run("k0", (6,), 256, [BufferArg("x"), BufferArg("out"), BufferArg("info"), i32("resync", 1)], bufs)


def scan_buffers(n, nb):
    x = np.random.default_rng(4).integers(0, 16, n).astype(np.int32)
    return x, {"x": x, "y": np.full(n, -1, np.int32), "ticket": np.zeros(1, np.uint32), "flags": np.zeros(nb, np.uint64)}


def test_ticket_ordered_single_pass_scan_never_spins():
    n = 256 * 9 + 100
    nb = -(-n // 256)
    x, bufs = scan_buffers(n, nb)
    got = run("k3", (nb,), 256, [BufferArg("x"), BufferArg("y"), BufferArg("ticket"), BufferArg("flags"), i32("n", n), i32("by_index", 0)], bufs)
    np.testing.assert_array_equal(got["y"], np.cumsum(x))
    assert got["ticket"][0] == nb


def test_waiting_on_blockidx_order_hangs_and_the_time_limit_says_so():
    from plugins.gate.emulate import EmuTimeout

    n = 256 * 9
    x, bufs = scan_buffers(n, 9)
    with pytest.raises(EmuTimeout, match=r"did not finish within 2 s.*spin-wait on another block"):
        run("k3", (9,), 256, [BufferArg("x"), BufferArg("y"), BufferArg("ticket"), BufferArg("flags"), i32("n", n), i32("by_index", 1)],
            bufs, timeout_s=2)


def test_barrier_that_can_never_complete_is_reported_not_hung():
    from plugins.gate.emulate import EmuLaunchError

    with pytest.raises(EmuLaunchError, match=r"no thread can make progress.*64 wait at cuda::barrier::wait"):
        run("k4", (1,), 64, [BufferArg("out")], {"out": np.zeros(64, np.float32)}, timeout_s=30)


def test_cluster_along_y_maps_arrays_and_elements():
    got = run("k5", (1, 8), 64, [BufferArg("out")], {"out": np.zeros(8 * 64, np.float32)})
    neighbour = (np.arange(8) % 4 + 1) % 4
    np.testing.assert_array_equal(got["out"].reshape(8, 64), np.repeat(12.0 * neighbour[:, None], 64, axis=1))
