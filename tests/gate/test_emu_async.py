"""Asynchronous copies in the CPU emulator (tests/fixtures/emu/async.cu): every API is performed
at its wait, never at the call, so the correct kernels pass and a kernel that reads a staged
tile before its wait (or refills a slot others still read) reads 0xff poison, every time."""
from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

from plugins.family.plan import BufferArg, ResolvedLaunch, ScalarArg

pytestmark = pytest.mark.skipif(shutil.which("g++") is None, reason="g++ is not installed: the CPU emulator compiles kernels with it")

SRC = (Path(__file__).parents[1] / "fixtures" / "emu" / "async.cu").read_text()
NT, NB = 5, 3  # tiles per block, blocks


def run(kernel, scalars=(), grid=NB, block=64, n=NB * NT * 256, extra=None, timeout_s=60.0):
    from plugins.gate.emulate import run_source

    rng = np.random.default_rng(5)
    x = rng.standard_normal(n + 256, dtype=np.float32)  # slack so shifted reads stay inside
    bufs = {"x": x, "out": np.full(n, np.nan, np.float32), **(extra or {})}
    names = ["x", "key", "out", "count", "groups"] if kernel == "k7" else ["x", "out"]
    args = [BufferArg(b) for b in names] + [ScalarArg(k, "int", v) for k, v in scalars]
    got = run_source(SRC, [ResolvedLaunch(kernel, (grid, 1, 1), (block, 1, 1), 0, tuple(args), False)], bufs,
                     name="async.cu", timeout_s=timeout_s)
    return x, got


def test_pipeline_primitives_ring_waits_for_the_tile_it_reads():
    x, got = run("k0", [("ntiles", NT), ("lag", 2), ("resync", 1)])
    np.testing.assert_array_equal(got["out"], 2 * x[: NB * NT * 256])


def test_pipeline_primitives_reading_a_tile_still_in_flight_reads_poison():
    _, got = run("k0", [("ntiles", NT), ("lag", 3), ("resync", 1)])
    tiles = got["out"].reshape(NB, NT, 256)
    assert np.isnan(tiles).all(axis=2).any(), "a tile read before its wait is entirely poison"


def test_refilling_a_slot_before_every_reader_is_done_reads_poison():
    _, got = run("k0", [("ntiles", NT), ("lag", 2), ("resync", 0)])
    assert np.isnan(got["out"]).any(), "the copy into a slot poisons it while the other warp still reads it"


def test_thread_scope_cuda_pipeline():
    x, got = run("k1", [("ntiles", NT)])
    np.testing.assert_array_equal(got["out"], 3 * x[: NB * NT * 256])


def test_block_scope_cuda_pipeline_and_its_early_read():
    x, got = run("k2", [("ntiles", NT), ("early", 0)])
    np.testing.assert_array_equal(got["out"], 4 * x[: NB * NT * 256])
    _, early = run("k2", [("ntiles", NT), ("early", 1)])
    assert np.isnan(early["out"]).any()


def test_barrier_bulk_copy_waits_and_checks_alignment():
    from plugins.gate.emulate import EmuLaunchError

    x, got = run("k3", [("shift", 0), ("early", 0)], n=NB * 256)
    np.testing.assert_array_equal(got["out"], 5 * x[: NB * 256])
    _, early = run("k3", [("shift", 0), ("early", 1)], n=NB * 256)
    assert np.isnan(early["out"]).all(), "every element was read after arrive() but before wait()"
    x, shifted = run("k3", [("shift", 4), ("early", 0)], n=NB * 256)  # 16 bytes: still aligned
    np.testing.assert_array_equal(shifted["out"], 5 * np.concatenate([x[b * 256 + 4: b * 256 + 260] for b in range(NB)]))
    with pytest.raises(EmuLaunchError, match=r"aligned_size_t<16> promises 16-byte alignment, but the source .* is not 16-byte aligned"):
        run("k3", [("shift", 1), ("early", 0)], n=NB * 256)


def test_cooperative_groups_memcpy_async_and_wait():
    x, got = run("k4", n=NB * 256)
    np.testing.assert_array_equal(got["out"], 6 * x[: NB * 256])


def test_bulk_store_from_shared_memory_and_exit_without_wait():
    from plugins.gate.emulate import EmuLaunchError

    x, got = run("k5", [("wait", 1)], n=NB * 256)
    np.testing.assert_array_equal(got["out"], 7 * x[: NB * 256])
    with pytest.raises(EmuLaunchError, match=r"exits with 1 bulk copies .* not waited for"):
        run("k5", [("wait", 0)], n=NB * 256)


@pytest.mark.parametrize("arrive_first", [0, 1], ids=["copy-then-arrive", "arrive-then-copy"])
def test_transaction_count_barrier_and_its_mismatches(arrive_first):
    from plugins.gate.emulate import EmuLaunchError, EmuTimeout

    x, got = run("k6", [("tx", 1024), ("arrive_first", arrive_first)], n=NB * 256)
    np.testing.assert_array_equal(got["out"], 8 * x[: NB * 256])
    with pytest.raises(EmuLaunchError, match=r"no thread can make progress.*wait at cuda::barrier::wait") as info:
        run("k6", [("tx", 2048), ("arrive_first", arrive_first)], n=NB * 256)  # more bytes declared than copied: a hang
    assert not isinstance(info.value, EmuTimeout)
    with pytest.raises(EmuLaunchError, match=r"copies carry 1024 transaction bytes but only 512 were declared"):
        run("k6", [("tx", 512), ("arrive_first", arrive_first)], n=NB * 256)


def test_annotated_ptr_atomic_ref_and_match_any():
    n = 200
    keys = (np.arange(n) * 7 % 5).astype(np.int32)
    extra = {"key": keys, "count": np.zeros(1, np.uint32), "groups": np.zeros(n, np.uint32)}
    x, got = run("k7", [("n", n)], grid=7, block=32, n=n, extra=extra)
    np.testing.assert_array_equal(got["out"], 9 * x[:n])
    assert got["count"][0] == n
    padded = np.concatenate([keys, np.full(7 * 32 - n, -1, np.int32)]).reshape(7, 32)
    want = [(int(((padded[w] == padded[w][l]) * (1 << np.arange(32, dtype=np.uint64))).sum())) for w in range(7) for l in range(32)]
    np.testing.assert_array_equal(got["groups"], np.array(want, np.uint64)[:n].astype(np.uint32))
