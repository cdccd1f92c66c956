"""The CPU emulator against small hand-written kernels (tests/fixtures/emu/).

Every expected value comes from NumPy on the same inputs; nothing here is a
GPU measurement. The kernels exercise what the correctness gate relies on:
indexing, tails, barriers, shared memory, shuffles, atomics, grid sync, and
the failures a GPU would hit (divergent barriers, out-of-bounds accesses).
"""
from __future__ import annotations

import shutil
import time
from pathlib import Path

import numpy as np
import pytest

from plugins.family.plan import BufferArg, ResolvedLaunch, ScalarArg, cdiv

pytestmark = pytest.mark.skipif(shutil.which("g++") is None, reason="g++ is not installed: the CPU emulator compiles kernels with it")

FIX = Path(__file__).parents[1] / "fixtures" / "emu"


def src(name: str) -> str:
    return (FIX / name).read_text()


def launch(kernel, grid, block, *args, shared_bytes=0, cooperative=False) -> ResolvedLaunch:
    g = tuple(grid) + (1,) * (3 - len(grid)) if isinstance(grid, tuple) else (grid, 1, 1)
    b = tuple(block) + (1,) * (3 - len(block)) if isinstance(block, tuple) else (block, 1, 1)
    return ResolvedLaunch(kernel, g, b, shared_bytes, tuple(args), cooperative)


def buf(name: str) -> BufferArg:
    return BufferArg(name)


def i32(name: str, v: int) -> ScalarArg:
    return ScalarArg(name, "int", v)


@pytest.fixture(scope="module")
def emu():
    from plugins.gate import emulate

    return emulate


@pytest.fixture
def rng():
    return np.random.default_rng(20261129)


# --------------------------------------------------------------------------- indexing


@pytest.mark.parametrize(
    "dims, block",
    [((1000, 1, 1), (128, 1, 1)), ((70, 37, 1), (32, 8, 1)), ((19, 11, 5), (8, 4, 2))],
    ids=["1d", "2d", "3d"],
)
def test_indexing_and_tails(emu, dims, block):
    nx, ny, nz = dims
    grid = tuple(cdiv(d, b) for d, b in zip(dims, block))
    n = nx * ny * nz
    bufs = {"pos": np.full(n, -1, np.int32), "hits": np.zeros(n, np.uint32)}
    got = emu.run_source(src("index3d.cu"), [launch("k0", grid, block, buf("pos"), buf("hits"),
                                                    i32("nx", nx), i32("ny", ny), i32("nz", nz))], bufs)
    z, y, x = np.meshgrid(np.arange(nz), np.arange(ny), np.arange(nx), indexing="ij")
    np.testing.assert_array_equal(got["pos"], (x + 1000 * y + 1000000 * z).reshape(-1))
    np.testing.assert_array_equal(got["hits"], np.ones(n, np.uint32))
    assert np.all(bufs["pos"] == -1), "the caller's arrays must not be modified"


def test_builtin_dims(emu):
    grid, block = (3, 2, 4), (5, 3, 2)
    nb = 3 * 2 * 4
    got = emu.run_source(src("index3d.cu"), [launch("k1", grid, block, buf("dims"))],
                         {"dims": np.zeros(nb * 6, np.uint32)})
    np.testing.assert_array_equal(got["dims"].reshape(nb, 6), np.tile(np.array(grid + block, np.uint32), (nb, 1)))


# --------------------------------------------------------------------------- shared memory and barriers


@pytest.mark.parametrize("h, w", [(1000, 1500), (64, 96), (33, 31)])
def test_transpose_through_shared_tile(emu, rng, h, w):
    x = rng.standard_normal((h, w)).astype(np.float32)
    got = emu.run_source(src("transpose.cu"),
                         [launch("k0", (cdiv(w, 32), cdiv(h, 32)), (32, 8), buf("in"), buf("out"), i32("h", h), i32("w", w))],
                         {"in": x.reshape(-1), "out": np.full(h * w, np.nan, np.float32)})
    np.testing.assert_array_equal(got["out"].reshape(w, h), x.T)


def test_missing_barrier_is_a_shared_memory_race(emu, rng):
    """Without __syncthreads a thread reads a tile entry another thread writes later: the race check names it."""
    h, w = 64, 96
    x = rng.standard_normal((h, w)).astype(np.float32)
    with pytest.raises(emu.EmuRace, match=r"kernel k1 \(launch 0\): shared-memory race \(write after read\) on __shared__ tile"):
        emu.run_source(src("transpose.cu"),
                       [launch("k1", (cdiv(w, 32), cdiv(h, 32)), (32, 8), buf("in"), buf("out"), i32("h", h), i32("w", w))],
                       {"in": x.reshape(-1), "out": np.zeros(h * w, np.float32)})


@pytest.mark.parametrize("kernel", ["k0", "k1"], ids=["function-scope", "file-scope"])
def test_dynamic_shared_memory(emu, rng, kernel):
    n, bs = 1000, 128
    x = rng.standard_normal(n).astype(np.float32)
    got = emu.run_source(src("dyn_smem.cu"), [launch(kernel, cdiv(n, bs), bs, buf("x"), buf("out"), i32("n", n), shared_bytes=bs * 4)],
                         {"x": x, "out": np.full(n, np.nan, np.float32)})
    padded = np.zeros(cdiv(n, bs) * bs, np.float32)
    padded[:n] = x
    np.testing.assert_array_equal(got["out"], padded.reshape(-1, bs)[:, ::-1].reshape(-1)[:n])


def test_dynamic_shared_memory_overrun_is_reported(emu, rng):
    x = rng.standard_normal(64).astype(np.float32)
    with pytest.raises(emu.EmuOutOfBounds, match=r"k2.*past the end of dynamic shared memory \(256 bytes"):
        emu.run_source(src("dyn_smem.cu"), [launch("k2", 1, 64, buf("x"), buf("out"), i32("n", 64), shared_bytes=256)],
                       {"x": x, "out": np.zeros(64, np.float32)})


def test_shared_declarations_per_template_instance(emu, rng):
    nb = 5
    x = rng.integers(-9, 10, nb * 64).astype(np.float32)  # small integers: every sum below is exact
    got = emu.run_source(src("shared_decls.cu"), [launch("k0", nb, 64, buf("x"), buf("out"), buf("count"))],
                         {"x": x, "out": np.full(nb * 64, np.nan, np.float32), "count": np.full(nb, -1, np.int32)})
    w = x.reshape(nb, 64).astype(np.float64)
    k = np.arange(64)
    p64 = w[:, (k + 1) % 64] - 10 * w[:, (k + 2) % 64]
    p16 = np.where(k < 16, w[:, (k + 1) % 16] - 10 * w[:, (k + 2) % 16], 0.0)
    np.testing.assert_array_equal(got["out"].reshape(nb, 64), p64 + 1000 * p16)
    np.testing.assert_array_equal(got["count"], (w > 0).sum(axis=1))


def test_file_scope_shared_works_but_not_cooperatively(emu, rng):
    x = rng.standard_normal(128).astype(np.float32)
    bufs = {"x": x, "out": np.zeros(128, np.float32)}
    got = emu.run_source(src("shared_decls.cu"), [launch("k1", 2, 64, buf("x"), buf("out"))], bufs)
    np.testing.assert_array_equal(got["out"], x.reshape(2, 64)[:, ::-1].reshape(-1))
    with pytest.raises(emu.EmuLaunchError, match=r"declares file-scope __shared__ \['gs'\]"):
        emu.run_source(src("shared_decls.cu"), [launch("k1", 2, 64, buf("x"), buf("out"), cooperative=True)], bufs)


def test_untranslatable_shared_declaration_is_named(emu):
    bad = 'extern "C" __global__ void k0(float* out) {\n    __shared__ float a[32], b[32];\n    out[0] = a[0] + b[0];\n}\n'
    with pytest.raises(emu.EmuSourceError, match=r"bad\.cu:2: cannot translate the shared declaration .*one array per statement"):
        emu.translate(bad, "bad.cu")


# --------------------------------------------------------------------------- warps


def test_warp_sums_xor_and_down(emu, rng):
    n = 4096
    x = rng.uniform(-1, 1, n).astype(np.float32)
    got = emu.run_source(src("warp.cu"), [launch("k0", n // 256, 256, buf("x"), buf("all")),
                                          launch("k1", n // 256, 256, buf("x"), buf("sums"))],
                         {"x": x, "all": np.full(n, np.nan, np.float32), "sums": np.full(n // 32, np.nan, np.float32)})
    want = x.astype(np.float64).reshape(-1, 32).sum(axis=1)
    np.testing.assert_allclose(got["sums"], want, rtol=0, atol=1e-5)
    allv = got["all"].reshape(-1, 32)
    np.testing.assert_allclose(allv[:, 0], want, rtol=0, atol=1e-5)
    assert np.all(allv == allv[:, :1]), "a butterfly leaves the same total in every lane"


def test_warp_scan_broadcast_ballot_and_width(emu, rng):
    n = 2048
    a = rng.integers(-1000, 1000, n).astype(np.int32)
    got = emu.run_source(src("warp.cu"), [launch("k2", n // 128, 128, buf("a"), buf("scan"), buf("bcast"), buf("ballot"), buf("sub"))],
                         {"a": a, "scan": np.zeros(n, np.int32), "bcast": np.zeros(n, np.int32),
                          "ballot": np.zeros(n // 32, np.uint32), "sub": np.zeros(n, np.int32)})
    w = a.reshape(-1, 32)
    np.testing.assert_array_equal(got["scan"].reshape(-1, 32), np.cumsum(w, axis=1))
    np.testing.assert_array_equal(got["bcast"].reshape(-1, 32), np.repeat(w[:, 5:6], 32, axis=1))
    bits = ((w & 1).astype(np.uint64) << np.arange(32, dtype=np.uint64)).sum(axis=1).astype(np.uint32)
    np.testing.assert_array_equal(got["ballot"], bits)
    # width 8: a lane whose xor partner falls outside its 8-lane segment gets its own value
    lane = np.arange(32)
    partner = lane ^ 9
    same_seg = (partner // 8) == (lane // 8)
    src_lane = np.where(same_seg, partner, lane)
    np.testing.assert_array_equal(got["sub"].reshape(-1, 32), w[:, src_lane])


def test_shuffle_with_exited_lane_is_reported(emu, rng):
    x = rng.standard_normal(64).astype(np.float32)
    with pytest.raises(emu.EmuLaunchError, match=r"__shfl_xor_sync with mask 0xffffffff, which names exited lane"):
        emu.run_source(src("warp.cu"), [launch("k3", 1, 64, buf("x"), buf("sums"))],
                       {"x": x, "sums": np.zeros(64, np.float32)}, timeout_s=20)


MIXED_OPS = r'''
extern "C" __global__ void k0(const float* __restrict__ x, float* __restrict__ sums)
{
    unsigned lane = threadIdx.x & 31;
    float v = x[threadIdx.x];
    if (lane < 16) v = __shfl_xor_sync(LOW_MASK, v, 1);
    else if (lane < MID_LANE) v = __shfl_xor_sync(HIGH_MASK, v, 1);
    else v = (float)__ballot_sync(HIGH_MASK, v > 0.0f);
    sums[threadIdx.x] = v;
}
'''


@pytest.mark.parametrize("low_mask, high_mask, mid_lane, words", [
    # the first lane checked names a lane at another op
    ("0xffffffffu", "0xffffffffu", 16,
     r"warp 0: lane 0 is at __shfl_xor_sync while lane 16, named in its mask 0xffffffff, is at __ballot_sync"),
    # lanes 0-15 agree among themselves; lane 16, with another mask and op, names a lane at another op
    ("0x0000ffffu", "0xffffffffu", 16,
     r"warp 0: lane 16 is at __ballot_sync while lane 0, named in its mask 0xffffffff, is at __shfl_xor_sync"),
    # lane 16 has the op lanes 0-15 checked, but another mask: it must be checked (a memo keyed on the op alone would not)
    ("0x0000ffffu", "0xffff0000u", 24,
     r"warp 0: lane 16 is at __shfl_xor_sync while lane 24, named in its mask 0xffff0000, is at __ballot_sync"),
], ids=["first-lane-checked", "later-lane-checked", "same-op-other-mask-checked"])
def test_lanes_at_different_warp_ops_are_reported(emu, rng, low_mask, high_mask, mid_lane, words):
    """resolve_warp skips a lane whose (mask, op) equals the last one it checked: a later lane
    whose pair differs is still checked, and the lane reported is the one the full check names."""
    x = rng.standard_normal(32).astype(np.float32)
    source = MIXED_OPS.replace("LOW_MASK", low_mask).replace("HIGH_MASK", high_mask).replace("MID_LANE", str(mid_lane))
    with pytest.raises(emu.EmuLaunchError, match=words):
        emu.run_source(source, [launch("k0", 1, 32, buf("x"), buf("sums"))],
                       {"x": x, "sums": np.zeros(32, np.float32)}, timeout_s=20)


# --------------------------------------------------------------------------- atomics


def test_atomics_histogram_sum_and_absmax(emu, rng):
    n = 100_003
    data = rng.integers(0, 256, n, dtype=np.uint8)
    x = rng.uniform(-1, 1, n).astype(np.float32)
    got = emu.run_source(src("atomics.cu"),
                         [launch("k0", cdiv(n, 256), 256, buf("data"), buf("bins"), buf("total"), buf("amax"), buf("x"),
                                 ScalarArg("n", "long long", n))],
                         {"data": data, "bins": np.zeros(256, np.uint32), "total": np.zeros(1, np.float32),
                          "amax": np.zeros(1, np.uint32), "x": x})
    np.testing.assert_array_equal(got["bins"], np.bincount(data, minlength=256).astype(np.uint32))
    assert got["bins"].sum() == n
    np.testing.assert_allclose(got["total"][0], x.astype(np.float64).sum(), rtol=0, atol=1e-6 * np.abs(x).sum() * 10)
    assert got["amax"].view(np.float32)[0] == np.abs(x).max()


# --------------------------------------------------------------------------- cooperative launches


def test_grid_sync_orders_the_phases(emu, rng):
    n = 1000
    x = rng.standard_normal(n).astype(np.float32)
    bufs = {"x": x, "a": np.full(n, np.nan, np.float32), "out": np.full(n, np.nan, np.float32)}
    args = (buf("x"), buf("a"), buf("out"), i32("n", n))
    a = 2 * x
    want = a + a[(np.arange(n) + 300) % n]
    got = emu.run_source(src("coop.cu"), [launch("k0", cdiv(n, 128), 128, *args, cooperative=True)], bufs)
    np.testing.assert_array_equal(got["out"], want)
    # without the grid barrier, blocks read neighbours that have not run yet
    racy = emu.run_source(src("coop.cu"), [launch("k1", cdiv(n, 128), 128, *args)], bufs)
    assert np.isnan(racy["out"]).any()


def test_grid_sync_needs_cooperative_launch(emu):
    n = 256
    with pytest.raises(emu.EmuLaunchError, match=r"grid.sync\(\) needs a cooperative launch"):
        emu.run_source(src("coop.cu"), [launch("k0", 2, 128, buf("x"), buf("a"), buf("out"), i32("n", n))],
                       {"x": np.ones(n, np.float32), "a": np.zeros(n, np.float32), "out": np.zeros(n, np.float32)})


def test_cooperative_grid_larger_than_the_gpu_is_refused(emu):
    n = 1024 * 64
    with pytest.raises(emu.EmuLaunchError, match=r"exceeds the 8192 threads that can be co-resident"):
        emu.run_source(src("coop.cu"), [launch("k0", 64, 1024, buf("x"), buf("a"), buf("out"), i32("n", n), cooperative=True)],
                       {"x": np.ones(n, np.float32), "a": np.zeros(n, np.float32), "out": np.zeros(n, np.float32)}, sm_count=4)


# --------------------------------------------------------------------------- what a GPU would get wrong


def test_divergent_barrier_raises_instead_of_hanging(emu, rng):
    n = 1000  # the last 128-thread block has 104 live threads and 24 that return early
    x = rng.standard_normal(n).astype(np.float32)
    t0 = time.perf_counter()
    with pytest.raises(emu.EmuLaunchError, match=r"block \(7,0,0\): 104 threads wait at __syncthreads while 24 have exited") as info:
        emu.run_source(src("faults.cu"), [launch("k0", cdiv(n, 128), 128, buf("x"), buf("out"), i32("n", n))],
                       {"x": x, "out": np.zeros(n, np.float32)}, timeout_s=20)
    assert not isinstance(info.value, emu.EmuTimeout)
    assert time.perf_counter() - t0 < 15


def test_write_past_the_end_names_kernel_and_buffer(emu, rng):
    n = 1024  # a multiple of 4 floats: the end of out abuts the guard page
    x = rng.standard_normal(n).astype(np.float32)
    with pytest.raises(emu.EmuOutOfBounds, match=r"out-of-bounds access in kernel k1 \(launch 0\) \(SIGSEGV\): past the end of buffer 'out' \(element 1024;"):
        emu.run_source(src("faults.cu"), [launch("k1", cdiv(n + 1, 128), 128, buf("x"), buf("out"), i32("n", n))],
                       {"x": x, "out": np.zeros(n, np.float32)})


def test_write_into_the_alignment_slack_is_caught(emu, rng):
    n = 1001  # out ends 12 bytes before the guard page (16-byte alignment): the canary sees it
    x = rng.standard_normal(n).astype(np.float32)
    with pytest.raises(emu.EmuOutOfBounds, match=r"kernel k1.*past the end of buffer 'out'"):
        emu.run_source(src("faults.cu"), [launch("k1", cdiv(n + 1, 128), 128, buf("x"), buf("out"), i32("n", n))],
                       {"x": x, "out": np.zeros(n, np.float32)})


def test_write_before_the_start_is_caught(emu, rng):
    n = 1000
    x = rng.standard_normal(n).astype(np.float32)
    with pytest.raises(emu.EmuOutOfBounds, match=r"kernel k3.*before the start of buffer 'out'"):
        emu.run_source(src("faults.cu"), [launch("k3", cdiv(n, 128), 128, buf("x"), buf("out"), i32("n", n))],
                       {"x": x, "out": np.zeros(n, np.float32)})


def test_write_to_const_input_is_caught(emu, rng):
    n = 1000
    x = rng.standard_normal(n).astype(np.float32)
    with pytest.raises(emu.EmuOutOfBounds, match=r"kernel k2.*a write to buffer 'x' \(element 999\), which the kernel declares const"):
        emu.run_source(src("faults.cu"), [launch("k2", cdiv(n, 128), 128, buf("x"), buf("out"), i32("n", n))],
                       {"x": x, "out": np.zeros(n, np.float32)})


def test_endless_loop_times_out(emu):
    with pytest.raises(emu.EmuTimeout, match=r"kernel k4 \(launch 0\) did not finish within 1 s.*block \(0,0,0\), thread \(0,0,0\)"):
        emu.run_source(src("faults.cu"), [launch("k4", 1, 32, buf("x"), buf("out"), i32("n", 32))],
                       {"x": np.zeros(32, np.float32), "out": np.zeros(32, np.float32)}, timeout_s=1)


def test_stack_overflow_is_reported(emu):
    with pytest.raises(emu.EmuOutOfBounds, match=r"kernel k5.*fiber stack overflow"):
        emu.run_source(src("faults.cu"), [launch("k5", 1, 32, buf("x"), buf("out"), i32("n", 32))],
                       {"x": np.ones(32, np.float32), "out": np.zeros(32, np.float32)}, timeout_s=20)


def test_warp_split_between_syncwarp_and_syncthreads_is_reported(emu):
    with pytest.raises(emu.EmuLaunchError, match=r"warp 0 lane 0 waits at __syncwarp \(mask 0xffffffff\) but lane 16 is at __syncthreads"):
        emu.run_source(src("faults.cu"), [launch("k6", 1, 64, buf("x"), buf("out"), i32("n", 64))],
                       {"x": np.ones(64, np.float32), "out": np.zeros(64, np.float32)}, timeout_s=20)


def test_plan_errors_name_the_problem(emu):
    bufs = {"x": np.zeros(8, np.float32), "out": np.zeros(8, np.int32)}
    with pytest.raises(emu.EmuLaunchError, match=r"parameter out is float\* but buffer 'out' holds int32"):
        emu.run_source(src("vec.cu"), [launch("k0", 1, 32, buf("x"), buf("out"), i32("n", 8))], bufs)
    with pytest.raises(emu.EmuLaunchError, match=r"defines no kernel 'k9'"):
        emu.run_source(src("vec.cu"), [launch("k9", 1, 32, buf("x"), buf("out"), i32("n", 8))], bufs)
    with pytest.raises(emu.EmuLaunchError, match=r"2048 threads per block exceed 1024"):
        emu.run_source(src("vec.cu"), [launch("k0", 1, (64, 32), buf("x"), buf("x"), i32("n", 8))], bufs)


def test_compile_error_names_the_file(emu):
    bad = 'extern "C" __global__ void k0(float* out) { out[0] = undefined_name; }\n'
    with pytest.raises(emu.EmuCompileError, match=r"bad\.cu.*undefined_name"):
        emu.run_source(bad, [launch("k0", 1, 1, buf("out"))], {"out": np.zeros(1, np.float32)}, name="bad.cu")


# --------------------------------------------------------------------------- vectors and scalar types


@pytest.mark.parametrize("n", [4096, 1003])
def test_float4_with_tail(emu, rng, n):
    x = rng.standard_normal(n).astype(np.float32)
    got = emu.run_source(src("vec.cu"), [launch("k0", cdiv(n // 4, 128) or 1, 128, buf("x"), buf("out"), i32("n", n))],
                         {"x": x, "out": np.full(n, np.nan, np.float32)})
    np.testing.assert_array_equal(got["out"], 2 * x)


def test_long_long_and_unsigned_char_parameters(emu, rng):
    n = 777
    b = rng.integers(0, 256, n, dtype=np.uint8)
    offset, shift, scale = 2**40 + 3, 200, 3_000_000_000
    got = emu.run_source(src("vec.cu"),
                         [launch("k1", cdiv(n, 256), 256, buf("b"), buf("wide"), buf("narrow"), ScalarArg("n", "long long", n),
                                 ScalarArg("offset", "long long", offset), ScalarArg("shift", "unsigned char", shift),
                                 ScalarArg("scale", "unsigned int", scale))],
                         {"b": b, "wide": np.zeros(n, np.int64), "narrow": np.zeros(n, np.uint8)})
    np.testing.assert_array_equal(got["wide"], offset + np.arange(n, dtype=np.int64) * scale)
    np.testing.assert_array_equal(got["narrow"], (b.astype(np.int64) + shift).astype(np.uint8))
    with pytest.raises(emu.EmuLaunchError, match=r"shift = 300 does not fit unsigned char"):
        emu.run_source(src("vec.cu"),
                       [launch("k1", 1, 32, buf("b"), buf("wide"), buf("narrow"), ScalarArg("n", "long long", 1),
                               ScalarArg("offset", "long long", 0), ScalarArg("shift", "unsigned char", 300),
                               ScalarArg("scale", "unsigned int", 1))],
                       {"b": b, "wide": np.zeros(n, np.int64), "narrow": np.zeros(n, np.uint8)})


# --------------------------------------------------------------------------- the portable switch, speed


def test_ucontext_fallback_gives_the_same_answers(emu, rng):
    """The portable fiber switch (used off x86-64) on the barrier and shuffle kernels."""
    h, w = 40, 70
    x = rng.standard_normal((h, w)).astype(np.float32)
    got = emu.run_source(src("transpose.cu"),
                         [launch("k0", (cdiv(w, 32), cdiv(h, 32)), (32, 8), buf("in"), buf("out"), i32("h", h), i32("w", w))],
                         {"in": x.reshape(-1), "out": np.full(h * w, np.nan, np.float32)}, defines=("-DEMU_USE_UCONTEXT",))
    np.testing.assert_array_equal(got["out"].reshape(w, h), x.T)
    v = rng.uniform(-1, 1, 512).astype(np.float32)
    got = emu.run_source(src("warp.cu"), [launch("k1", 2, 256, buf("x"), buf("sums"))],
                         {"x": v, "sums": np.zeros(16, np.float32)}, defines=("-DEMU_USE_UCONTEXT",))
    np.testing.assert_allclose(got["sums"], v.astype(np.float64).reshape(-1, 32).sum(axis=1), rtol=0, atol=1e-5)


def test_barrier_heavy_launch_counts_and_speed(emu, rng, caplog):
    """256 K threads through 33 barriers each: every thread resumes exactly 34 times."""
    src_text = """
extern "C" __global__ void k0(const float* __restrict__ x, float* __restrict__ out, long long n, float lo, float hi)
{
    __shared__ float tile[32][32];
    const long long g = (long long)blockIdx.x * 1024 + threadIdx.y * 32 + threadIdx.x;
    float v = 0.0f;
    if (g < n) v = x[g];
    tile[threadIdx.x][threadIdx.y] = v;
    __syncthreads();
    for (int it = 0; it < 32; ++it) {
        v = fminf(fmaxf(tile[threadIdx.x][threadIdx.y], lo), hi);
        __syncthreads();
    }
    if (g < n) out[g] = v;
}
"""
    n = 1 << 18
    x = rng.standard_normal(n).astype(np.float32)
    stats: list = []
    got = emu.run_source(src_text, [launch("k0", n // 1024, (32, 32), buf("x"), buf("out"), ScalarArg("n", "long long", n),
                                           ScalarArg("lo", "float", -0.5), ScalarArg("hi", "float", 0.5))],
                         {"x": x, "out": np.full(n, np.nan, np.float32)}, stats=stats)
    np.testing.assert_array_equal(got["out"], np.clip(x, -0.5, 0.5))
    (s,) = stats
    assert s.threads == n and s.fiber_entries == n * 34
    # generous bound (about 0.1 s here): a scheduler that degrades to syscalls per switch would blow it
    assert s.emulated_s < 10, f"{s.emulated_s:.2f} s for {n} threads x 33 barriers"


# --------------------------------------------------------------------------- the executor behind the gate


def test_executor_gates_a_small_family(emu, tmp_path):
    """EmuExecutor through plugins.gate.check on a family built here: the start passes, the wrong variant is rejected."""
    from plugins.family.cuda_source import kernel_signatures
    from plugins.gate.check import gate_candidate
    from plugins.family.manifest import Buffer, Candidate, Family, Launch, Tolerance

    fam_dir = FIX / "gatefam"
    good = (fam_dir / "kernel.cu").read_text()
    wrong = good.replace("i < n", "i < n - 1")
    plan = (Launch("k0", ("cdiv(n, 256)",), (256,), 0, ("x", "out", "n", "a")),)

    def cand(cid, role, text):
        return Candidate(cid, role, fam_dir / f"{cid}.cu", text, plan, (), "", kernel_signatures(text))

    start = cand("start", "start", good)
    bad = cand("tail", "wrong", wrong)
    fam = Family(
        name="gatefam", path=fam_dir, computes="out = a * x", bound="memory", constraints=(),
        timing={"n": 1 << 20}, gate=({"n": 1000}, {"n": 4099}), tiny=({"n": 5},), params={"a": 1.5},
        buffers=(Buffer("x", "float32", "n", "input"), Buffer("out", "float32", "n", "output", Tolerance("exact"))),
        start=start, rewrites=(), wrong=(bad,), intended_winner="", intended_reasoning="",
    )
    ex = emu.EmuExecutor(sm_count=4)
    ok = gate_candidate(fam, start, ex, seeds=(1, 2, 3))
    assert ok.passed and ok.as_expected and ok.executor == "cpu-emulator", ok.reason
    rejected = gate_candidate(fam, bad, ex, seeds=(1, 2, 3))
    assert not rejected.passed and rejected.as_expected
    assert "NaN" in rejected.reason


def test_each_reference_runs_once_per_family_shape_and_seed(tmp_path):
    """Candidates of one family share the references of their seeds; each gets buffers of its own,
    and the kept outputs cannot be written."""
    from plugins.cache.work import COUNTS
    from plugins.gate.check import family_seeds, make_buffers
    from plugins.family.manifest import load_family

    fam = load_family(Path(__file__).parents[1] / "fixtures" / "items" / "synth_scale")
    assert family_seeds("synth_scale") == family_seeds("synth_scale") and len(family_seeds("synth_scale")) == 3
    shape, seed = fam.shapes("gate")[0], 1234567
    before = COUNTS["reference"]
    first, expected, _ = make_buffers(fam, shape, seed)
    for arr in first.values():
        arr[:] = 0  # a run writes its buffers
    second, again, _ = make_buffers(fam, shape, seed)
    assert COUNTS["reference"] == before + 1
    inputs = [b.name for b in fam.buffers if b.role == "input"]
    assert any(second[k].any() for k in inputs) and all(second[k] is not first[k] for k in second)
    out = next(iter(again.values()))
    with pytest.raises(ValueError):
        out[...] = 0
    make_buffers(fam, shape, seed + 1)
    assert COUNTS["reference"] == before + 2


def test_precompiled_prelude_builds_the_same_library(emu, tmp_path, monkeypatch):
    """The prelude PCH is speed only: the kernel library is byte-identical without it, and g++ used it
    (-Winvalid-pch would warn; a build counts one PCH per flag set)."""
    from plugins.cache.work import COUNTS
    from plugins.family.cuda_source import kernel_signatures

    text = src("index3d.cu")
    sigs = kernel_signatures(text)
    before = COUNTS["emu_pch_build"]
    lib, _ = emu.build(text, sigs, cache_dir=tmp_path)
    assert COUNTS["emu_pch_build"] == before + 1 and list(tmp_path.glob("pch-*/cuda_emu.h.gch"))
    with_pch = lib.read_bytes()
    lib.unlink()  # the same folder again (the debug line table names the source's path), without the PCH
    monkeypatch.setenv("SPARKTRACE_NO_PCH", "1")
    again, _ = emu.build(text, sigs, cache_dir=tmp_path)
    assert again == lib and again.read_bytes() == with_pch
    assert COUNTS["emu_pch_build"] == before + 1
