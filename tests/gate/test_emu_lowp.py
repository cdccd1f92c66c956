"""bf16, fp16 and fp8 in the CPU emulator, bit for bit (tests/fixtures/emu/lowp.cu).

Conversions are checked against ml_dtypes and NumPy (both round float32 once,
to nearest even) over every representable value of each format, every
midpoint between neighbours and the floats next to each midpoint, plus random
bit patterns across all exponents. Arithmetic is checked against exact
results rounded once in NumPy (and exact rationals for ties that double
precision alone cannot see). Nothing here is a GPU measurement.
"""
from __future__ import annotations

import shutil
from fractions import Fraction
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

from plugins.family.plan import BufferArg, ResolvedLaunch, ScalarArg

pytestmark = [
    pytest.mark.skipif(shutil.which("g++") is None, reason="g++ is not installed: the CPU emulator compiles kernels with it"),
    # NaN and overflow casts in the references are deliberate
    pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning"),
    pytest.mark.filterwarnings("ignore:overflow encountered:RuntimeWarning"),
]

SRC = (Path(__file__).parents[1] / "fixtures" / "emu" / "lowp.cu").read_text()
BF16, E4M3 = np.dtype(ml_dtypes.bfloat16), np.dtype(ml_dtypes.float8_e4m3fn)


def run(kernel, args, buffers, grid=64, block=256):
    from plugins.gate.emulate import run_source

    launch = ResolvedLaunch(kernel, (grid, 1, 1), (block, 1, 1), 0, tuple(args), False)
    return run_source(SRC, [launch], buffers, name="lowp.cu")


def i32(name, v):
    return ScalarArg(name, "int", v)


def _neighbours_and_midpoints(values: np.ndarray) -> np.ndarray:
    """Every finite value of a format, the midpoints between neighbours, and the floats just off each midpoint."""
    v = np.unique(values[np.isfinite(values)].astype(np.float64))
    mid = ((v[:-1] + v[1:]) / 2).astype(np.float32)  # exact: a few bits more than the format
    assert np.all(mid.astype(np.float64) == (v[:-1] + v[1:]) / 2)
    up, down = np.nextafter(mid, np.float32(np.inf)), np.nextafter(mid, np.float32(-np.inf))
    return np.concatenate([v.astype(np.float32), mid, up, down])


@pytest.fixture(scope="module")
def floats():
    rng = np.random.default_rng(20261201)
    every16 = np.arange(1 << 16, dtype=np.uint16)
    every8 = np.arange(1 << 8, dtype=np.uint8)
    parts = [
        _neighbours_and_midpoints(every16.view(BF16).astype(np.float64)),
        _neighbours_and_midpoints(every16.view(np.float16).astype(np.float64)),
        _neighbours_and_midpoints(every8.view(E4M3).astype(np.float64)),
        rng.integers(0, 1 << 32, 200_000, dtype=np.uint64).astype(np.uint32).view(np.float32),  # every exponent
        np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 448, 464, -464, 463.99997, 480, 1e30, -1e30, 65504, 65520,
                  65519.996, 1e-45, -1e-45, 1.1754942e-38, 2.0**-9, 2.0**-10, 3 * 2.0**-10, 2.0**-24, 2.0**-25], np.float32),
    ]
    x = np.concatenate(parts).astype(np.float32)
    return x[: len(x) // 2 * 2]


def _same_bits(got: np.ndarray, want: np.ndarray, what: str) -> None:
    """Equal bit patterns, except that any NaN matches any NaN (payloads are not compared)."""
    g, w = got.astype(np.float64), want.astype(np.float64)
    nan_g, nan_w = np.isnan(g), np.isnan(w)
    assert np.array_equal(nan_g, nan_w), f"{what}: NaN where the reference has none (or the reverse) at {np.flatnonzero(nan_g != nan_w)[:5]}"
    u = np.dtype(f"u{got.dtype.itemsize}")
    bad = ~nan_w & (got.view(u) != want.view(u))
    if bad.any():
        i = np.flatnonzero(bad)[:5]
        pytest.fail(f"{what}: {bad.sum()} of {bad.size} differ; first {i}: got bits {got.view(u)[i]}, want {want.view(u)[i]}", pytrace=False)


def test_scalar_conversions_are_bit_exact(floats):
    x = floats
    n = x.size
    got = run("k0", [BufferArg("x"), BufferArg("bf"), BufferArg("hf"), BufferArg("q8"), BufferArg("back"), i32("n", n)],
              {"x": x, "bf": np.zeros(n, BF16), "hf": np.zeros(n, np.float16), "q8": np.zeros(n, E4M3),
               "back": np.zeros(3 * n, np.float32)})
    want_bf = x.astype(BF16)
    want_hf = x.astype(np.float16)
    want_q8 = np.clip(x, -448, 448).astype(E4M3)  # satfinite: overflow and infinity go to +-448
    _same_bits(got["bf"], want_bf, "__float2bfloat16_rn")
    _same_bits(got["hf"], want_hf, "__float2half_rn")
    _same_bits(got["q8"], want_q8, "__nv_fp8_e4m3(float)")
    back = got["back"].reshape(n, 3)
    _same_bits(back[:, 0].copy(), want_bf.astype(np.float32), "__bfloat162float")
    _same_bits(back[:, 1].copy(), want_hf.astype(np.float32), "__half2float")
    _same_bits(back[:, 2].copy(), want_q8.astype(np.float32), "float(__nv_fp8_e4m3)")
    # the cases the harness relies on: 448 stays 448, just past it saturates, never NaN
    q = got["q8"].view(np.uint8)
    for value, code in ((448.0, 0x7E), (464.0, 0x7E), (1e30, 0x7E), (-np.inf, 0xFE), (2.0**-9, 0x01), (3 * 2.0**-10, 0x02)):
        assert q[np.flatnonzero(x == np.float32(value))[0]] == code, value


def test_packed_conversions_are_bit_exact(floats):
    x = floats
    n = x.size
    got = run("k1", [BufferArg("x"), BufferArg("q2"), BufferArg("h2"), BufferArg("qh"), BufferArg("b2"), i32("npairs", n // 2)],
              {"x": x, "q2": np.zeros(n, np.uint8), "h2": np.zeros(n, np.float16), "qh": np.zeros(n, np.uint8),
               "b2": np.zeros(n, BF16)})
    q8 = np.clip(x, -448, 448).astype(E4M3)
    _same_bits(got["q2"].view(E4M3), q8, "__nv_cvt_float2_to_fp8x2 (element order: .x in the low byte)")
    _same_bits(got["h2"], q8.astype(np.float32).astype(np.float16), "__nv_cvt_fp8x2_to_halfraw2 (exact)")
    via_half = np.clip(x.astype(np.float16).astype(np.float32), -448, 448).astype(E4M3)
    _same_bits(got["qh"].view(E4M3), via_half, "__nv_fp8x2_e4m3(__half2)")
    _same_bits(got["b2"], x.astype(BF16), "__floats2bfloat162_rn")


def _round_once(v: np.ndarray, mbits: int, emin: int, maxfinite: float) -> np.ndarray:
    """Exact float64 values rounded once to a binary format (nearest, ties to even)."""
    a = np.abs(v)
    _, ex = np.frexp(a)
    quantum = np.ldexp(1.0, np.maximum(ex - 1, emin) - mbits)
    r = np.rint(a / quantum) * quantum
    r = np.where(r > maxfinite, np.inf, r)
    return np.copysign(r, v)


def _random_values(rng, dtype, n, emax):
    """Random values of a 16-bit format with exponents in [-emax, emax] and random signs."""
    mant = rng.integers(0, 1 << 12, n) / 4096.0
    v = np.ldexp(1 + mant, rng.integers(-emax, emax + 1, n)) * rng.choice([-1.0, 1.0], n)
    return v.astype(np.float32).astype(dtype)


def test_bf16x2_and_half_arithmetic_round_once():
    rng = np.random.default_rng(7)
    n = 40_000
    a, b, c = (_random_values(rng, BF16, n, 8) for _ in range(3))
    ha, hb, hc = (_random_values(rng, np.float16, n, 6) for _ in range(3))
    # ties that only the exact sum decides: 3 * (1 + 2^-7) is halfway between two bf16 values
    tie = np.array([3.0, 1 + 2.0**-7], np.float64)
    extra = [(tie[0], tie[1], 2.0**-60), (tie[0], tie[1], -2.0**-60), (tie[0], tie[1], 0.0), (-tie[0], tie[1], 2.0**-60)]
    for k, (x, y, z) in enumerate(extra):
        a[k], b[k], c[k] = x, y, z
    got = run("k2", [BufferArg(s) for s in ("a", "b", "c", "ha", "hb", "hc", "d", "hd")] + [i32("npairs", n // 2)],
              {"a": a, "b": b, "c": c, "ha": ha, "hb": hb, "hc": hc, "d": np.zeros(3 * n, BF16), "hd": np.zeros(n, np.float16)})
    A, B, C = (v.astype(np.float64) for v in (a, b, c))
    bf = dict(mbits=7, emin=-126, maxfinite=float(ml_dtypes.finfo(BF16).max))
    d = got["d"].astype(np.float64).reshape(3, n)
    np.testing.assert_array_equal(d[0][len(extra):], _round_once(A * B + C, **bf)[len(extra):], "__hfma2 (bf16)")
    np.testing.assert_array_equal(d[1], _round_once(A * B, **bf), "__hmul2 (bf16)")
    np.testing.assert_array_equal(d[2], _round_once(A + C, **bf), "operator+ (bf16x2)")
    # exact rationals for the ties (A*B + C is not exact in double there)
    for k, (x, y, z) in enumerate(extra):
        exact = Fraction(x) * Fraction(y) + Fraction(z)
        sign = Fraction(1 if x > 0 else -1)
        lo, hi = Fraction(3.015625) * sign, Fraction(3.03125) * sign
        want = lo if abs(exact - lo) < abs(exact - hi) else hi if abs(exact - hi) < abs(exact - lo) else hi  # tie: 3.03125 is even
        assert Fraction(float(d[0][k])) == want, (x, y, z, float(d[0][k]))
    H = [v.astype(np.float64) for v in (ha, hb, hc)]
    np.testing.assert_array_equal(got["hd"].astype(np.float64), _round_once(H[0] * H[1] + H[2], 10, -14, 65504.0), "__hfma (half)")


def test_int8_byte_perm_and_casts():
    rng = np.random.default_rng(3)
    n = 4096
    q = np.concatenate([np.arange(-128, 128, dtype=np.int8), rng.integers(-128, 128, n - 256, dtype=np.int8)])
    xy = rng.integers(0, 1 << 32, 2 * n, dtype=np.uint64).astype(np.uint32)
    sel = rng.integers(0, 1 << 16, n, dtype=np.uint32) & np.uint32(0x7777)
    got = run("k3", [BufferArg(s) for s in ("q", "xy", "sel", "f", "perm")] + [i32("n", n)],
              {"q": q, "xy": xy, "sel": sel, "f": np.full(2 * n, np.nan, np.float32), "perm": np.zeros(n, np.uint32)})
    f = got["f"].reshape(n, 2)
    np.testing.assert_array_equal(f[:, 0], q.astype(np.float32), "byte permute into 2^23 + 128, minus 2^23 + 128")
    np.testing.assert_array_equal(f[:, 1], q.astype(np.float32), "(float)signed char")
    src = (xy[1::2].astype(np.uint64) << np.uint64(32)) | xy[0::2].astype(np.uint64)
    want = np.zeros(n, np.uint64)
    for k in range(4):
        s = (sel.astype(np.uint64) >> np.uint64(4 * k)) & np.uint64(7)
        want |= ((src >> (np.uint64(8) * s)) & np.uint64(0xFF)) << np.uint64(8 * k)
    np.testing.assert_array_equal(got["perm"], want.astype(np.uint32))


def test_byte_perm_sign_selector_is_refused():
    from plugins.gate.emulate import EmuLaunchError

    n = 32
    with pytest.raises(EmuLaunchError, match=r"__byte_perm selector 0x8000 sets bit 3 of a nibble"):
        run("k3", [BufferArg(s) for s in ("q", "xy", "sel", "f", "perm")] + [i32("n", n)],
            {"q": np.zeros(n, np.int8), "xy": np.zeros(2 * n, np.uint32), "sel": np.full(n, 0x8000, np.uint32),
             "f": np.zeros(2 * n, np.float32), "perm": np.zeros(n, np.uint32)}, grid=1, block=32)
