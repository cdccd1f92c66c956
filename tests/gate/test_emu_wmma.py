"""WMMA in the CPU emulator (tests/fixtures/emu/wmma.cu): bf16 and fp16 fragments with fp32
accumulators, row- and column-major operands and accumulators, elementwise fragment math,
and the two ways a kernel can depend on what CUDA leaves unspecified. References are NumPy
float64 products of the same rounded inputs."""
from __future__ import annotations

import shutil
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

from plugins.family.plan import BufferArg, ResolvedLaunch, ScalarArg

pytestmark = pytest.mark.skipif(shutil.which("g++") is None, reason="g++ is not installed: the CPU emulator compiles kernels with it")

SRC = (Path(__file__).parents[1] / "fixtures" / "emu" / "wmma.cu").read_text()
BF16 = ml_dtypes.bfloat16


def run(kernel, grid, block, args, buffers):
    from plugins.gate.emulate import run_source

    g = tuple(grid) + (1,) * (3 - len(grid))
    return run_source(SRC, [ResolvedLaunch(kernel, g, (block, 1, 1), 0, tuple(args), False)], buffers, name="wmma.cu")


def i32(name, v):
    return ScalarArg(name, "int", v)


def test_bf16_gemm_from_global_memory():
    rng = np.random.default_rng(11)
    m, n, k = 48, 32, 80
    a = rng.standard_normal(m * k, dtype=np.float32).astype(BF16)
    b = rng.standard_normal(k * n, dtype=np.float32).astype(BF16)
    got = run("k0", (cdiv(m * n // 256, 4),), 128, [BufferArg("a"), BufferArg("b"), BufferArg("c"), i32("m", m), i32("n", n), i32("k", k)],
              {"a": a, "b": b, "c": np.full(m * n, np.nan, np.float32)})
    want = a.astype(np.float64).reshape(m, k) @ b.astype(np.float64).reshape(k, n)
    # computed in double and rounded once to float: within one float ulp of the exact product
    np.testing.assert_allclose(got["c"].reshape(m, n), want, rtol=1.2e-7, atol=1e-6)


def cdiv(a, b):
    return -(-a // b)


def test_fp16_col_major_operands_accumulator_load_and_elementwise_scaling():
    rng = np.random.default_rng(12)
    m, n, k = 32, 48, 48
    alpha, beta = 0.75, -1.5
    a = rng.standard_normal(m * k, dtype=np.float32).astype(np.float16)
    bt = rng.standard_normal(n * k, dtype=np.float32).astype(np.float16)
    c = rng.standard_normal(n * m, dtype=np.float32)
    got = run("k1", (n // 16, m // 16), 32,
              [BufferArg("a"), BufferArg("bt"), BufferArg("c"), BufferArg("d"), i32("m", m), i32("n", n), i32("k", k),
               ScalarArg("alpha", "float", alpha), ScalarArg("beta", "float", beta)],
              {"a": a, "bt": bt, "c": c, "d": np.full(m * n, np.nan, np.float32)})
    ab = a.astype(np.float64).reshape(m, k) @ bt.astype(np.float64).reshape(n, k).T
    want = alpha * ab + beta * c.astype(np.float64).reshape(n, m).T
    np.testing.assert_allclose(got["d"].reshape(m, n), want, rtol=1e-6, atol=1e-5)


def test_layout_dependent_fragment_edit_is_refused():
    from plugins.gate.emulate import EmuLaunchError

    a = np.ones(256, np.float16)
    with pytest.raises(EmuLaunchError, match=r"holds two different values for one matrix element.*unspecified"):
        run("k2", (1,), 32, [BufferArg("a"), BufferArg("c")], {"a": a, "c": np.zeros(256, np.float32)})


def test_reading_another_lanes_stored_elements_needs_syncwarp():
    """store_matrix_sync converges the warp but orders nothing: reading other lanes' elements races."""
    from plugins.gate.emulate import EmuRace

    a = np.ones(256, np.float16)
    with pytest.raises(EmuRace, match=r"kernel k3 \(launch 0\): shared-memory race .* on __shared__ out"):
        run("k3", (1,), 32, [BufferArg("a"), BufferArg("c")], {"a": a, "c": np.zeros(256, np.float32)})


def test_misaligned_wmma_pointer_and_partial_warp_are_refused():
    from plugins.gate.emulate import EmuLaunchError

    m, n, k = 16, 16, 16
    a = np.ones(m * k + 8, np.float32).astype(BF16)
    bufs = {"a": a, "b": np.ones(k * n, np.float32).astype(BF16), "c": np.zeros(m * n, np.float32)}
    args = [BufferArg("a"), BufferArg("b"), BufferArg("c"), i32("m", m), i32("n", n), i32("k", k)]
    with pytest.raises(EmuLaunchError, match=r"WMMA needs whole warps, and warp 0 of this 16-thread block has only 16"):
        run("k0", (1,), 16, args, bufs)
    with pytest.raises(EmuLaunchError, match=r"ldm = 20 elements \(40 bytes\) is not a multiple of 16 bytes"):
        run("k0", (1,), 32, [BufferArg("a"), BufferArg("b"), BufferArg("c"), i32("m", m), i32("n", n), i32("k", 20)],
            {**bufs, "a": np.ones(16 * 20, np.float32).astype(BF16)})
