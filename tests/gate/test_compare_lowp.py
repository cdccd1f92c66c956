"""Output comparison for the low-precision dtypes: 0xFF poison, and the e4m3 step tolerance."""
from __future__ import annotations

import ml_dtypes
import numpy as np

from plugins.family.manifest import Buffer, Tolerance
from plugins.gate.compare import compare_buffer, poisoned

E4M3 = np.dtype(ml_dtypes.float8_e4m3fn)
Q = Buffer("q", "float8_e4m3", "n", "output", Tolerance("e4m3_step", steps=1))


def codes(*c: int) -> np.ndarray:
    return np.array(c, np.uint8).view(E4M3)


def test_poison_is_0xff_bytes_for_low_precision_floats():
    for name, itemsize in (("bfloat16", 2), ("float16", 2), ("float8_e4m3", 1)):
        p = poisoned(name, 5)
        assert p.size == 5 and p.view(np.uint8).size == 5 * itemsize and np.all(p.view(np.uint8) == 0xFF)
        assert np.all(np.isnan(p.astype(np.float32))), name
    assert np.all(np.isnan(poisoned("float32", 3))) and poisoned("int8", 2).tolist() == [127, 127]


def test_e4m3_codes_within_one_step_pass():
    want = np.array([1.0, -1.0, 448.0, 0.0, 2.0**-9])
    assert compare_buffer(Q, codes(0x38, 0xB8, 0x7E, 0x00, 0x01), want).passed  # exact
    assert compare_buffer(Q, codes(0x39, 0xB7, 0x7D, 0x81, 0x00), want).passed  # each one step off


def test_e4m3_codes_two_steps_off_fail_with_the_worst_named():
    want = np.array([1.0, 1.0, 1.0])
    v = compare_buffer(Q, codes(0x38, 0x39, 0x3A), want)
    assert not v.passed and "1 of 3 e4m3 codes are more than 1 step(s)" in v.reason and "worst at [2]" in v.reason


def test_e4m3_sign_crossing_counts_every_step():
    # -2^-9 and +2^-9 are two steps apart (through zero)
    assert not compare_buffer(Q, codes(0x81), np.array([2.0**-9])).passed


def test_e4m3_nan_and_unsaturated_overflow_fail():
    assert "NaN" in compare_buffer(Q, codes(0x38, 0xFF), np.array([1.0, 2.0])).reason
    v = compare_buffer(Q, codes(0x7F), np.array([1000.0]))  # a NOSAT conversion of an overflow
    assert not v.passed and "not saturated" in v.reason
    assert compare_buffer(Q, codes(0x7E), np.array([1000.0])).passed  # satfinite: 448


def test_bfloat16_output_compares_elementwise():
    buf = Buffer("y", "bfloat16", "n", "output", Tolerance("elementwise", rtol=8e-3))
    want = np.array([1.0, 3.14159, -2.5e-3])
    got = want.astype(np.float32).astype(ml_dtypes.bfloat16)
    assert compare_buffer(buf, got, want).passed
    assert "NaN" in compare_buffer(buf, poisoned("bfloat16", 3), want).reason
