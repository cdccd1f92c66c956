"""The emulator's shared-memory race check: planted races fail, their fixed twins pass.

Why: fibers run in index order, so a race on a lower neighbour's slot reads the
value already written and the output alone never shows it (issue 22). The
check tracks reads and writes per barrier interval as compute-sanitizer's
racecheck does (tests/fixtures/emu/races.cu holds the kernels).
"""
from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

from plugins.family.plan import BufferArg, ResolvedLaunch, ScalarArg

pytestmark = pytest.mark.skipif(shutil.which("g++") is None, reason="g++ is not installed: the CPU emulator compiles kernels with it")

SRC = Path(__file__).parents[1] / "fixtures" / "emu" / "races.cu"
N = 512


def _run(kernel: str) -> np.ndarray:
    from plugins.gate import emulate

    x = np.arange(1, N + 1, dtype=np.float32)
    launch = ResolvedLaunch(kernel, (2, 1, 1), (256, 1, 1), 0,
                            (BufferArg("x"), BufferArg("out"), ScalarArg("n", "int", N)), False)
    return emulate.run_source(SRC.read_text(), [launch], {"x": x, "out": np.zeros(N, np.float32)},
                              name="tests/fixtures/emu/races.cu")["out"]


def _race(kernel: str) -> str:
    """The message of the race the emulator reports for `kernel`."""
    from plugins.gate.emulate import EmuRace

    with pytest.raises(EmuRace) as err:
        _run(kernel)
    return str(err.value)


def _assert_lines(msg: str, kernel: str, later: str, earlier: str) -> None:
    """The message names, as the later and the earlier access, the first lines of `kernel` holding those texts."""
    lines = SRC.read_text().splitlines()
    start = next(i for i, ln in enumerate(lines, 1) if f" {kernel}(" in ln)

    def first_after(text: str) -> int:
        return next(i for i, ln in enumerate(lines, 1) if i > start and text in ln)

    assert f"later access at tests/fixtures/emu/races.cu:{first_after(later)}" in msg, msg
    assert f"earlier at tests/fixtures/emu/races.cu:{first_after(earlier)}" in msg, msg


@pytest.mark.parametrize("kernel, kind, later, earlier", [
    ("lower_neighbour", "read after write", "float left = t > 0 ? s[t - 1]", "s[t] = i < n ? x[i] : 0.0f;"),
    ("higher_neighbour", "write after read", "s[t] = i < n ? x[i] : 0.0f;", "float right ="),
    ("warp_no_syncwarp", "write after read", "s[t] = i < n ? x[i] : 0.0f;", "float other = s[t ^ 1];"),
    ("tile_sync_across", "read after write", "float other = s[t ^ 16];", "s[t] = i < n ? x[i] : 0.0f;"),
    ("write_write", "write after write", "s[t / 2] = ", "s[t / 2] = "),
    ("cluster_unsynced", "write after read", "s[t] = i < n ? x[i] : 0.0f;", "float p = peer[t];"),
])
def test_planted_race_is_reported_with_kernel_buffer_threads_and_lines(kernel, kind, later, earlier):
    msg = _race(kernel)
    assert f"kernel {kernel} (launch 0)" in msg and f"({kind})" in msg and "__shared__ s, byte" in msg
    assert msg.count("thread (") == 2
    _assert_lines(msg, kernel, later, earlier)


@pytest.mark.parametrize("kernel, kind, later, earlier", [
    ("upper_half_read", "write after read", "if (t == 1) s[1] = 2.0f;", "float half = t == 0"),
    ("upper_half_write", "read after write", "float mine = s[t];", "if (t == 0) reinterpret_cast"),
    ("upper_half_second_reader", "write after read", "if (t == 0) s[1] = v;", "if (t == 1) v = (float)"),
    ("whole_write_half_read", "read after write", "float half = t == 1", "if (t == 0) s[1] = 3.0f;"),
    ("whole_read_half_write", "write after read", "if (t == 1) reinterpret_cast", "float v = t == 0 ? s[1]"),
    ("second_slot_half_write", "write after read", "if (t == 0) reinterpret_cast", "float v = t < 2 ? s[1]"),
])
def test_a_race_on_a_later_byte_of_one_access_is_reported_at_that_byte(kernel, kind, later, earlier):
    """The check reuses the verdict of the previous byte for a byte whose records equal its; these
    races are on the third byte of a float whose first two bytes are ordered. The first three are
    missed by a check of the first byte alone or by a memo on any two of the three records; the
    last three by a memo that skips the reused bytes' update (of the write, or of either reader
    slot)."""
    msg = _race(kernel)
    assert f"({kind}) on __shared__ s, byte 6:" in msg, msg
    _assert_lines(msg, kernel, later, earlier)


@pytest.mark.parametrize("kernel", ["neighbours_synced", "warp_syncwarp", "tile_sync_within", "atomics", "cluster_synced"])
def test_ordered_twin_passes_with_the_right_answer(kernel):
    x = np.arange(1, N + 1, dtype=np.float32)
    out = _run(kernel)
    s = x.reshape(2, 256)
    t = np.arange(256)
    expect = {
        "neighbours_synced": s + np.where(t > 0, np.roll(s, 1, 1), 0) + np.where(t < 255, np.roll(s, -1, 1), 0),
        "warp_syncwarp": s + s[:, t ^ 1],
        "tile_sync_within": s + s[:, t ^ 8],
        "atomics": np.repeat(s.sum(1, keepdims=True), 256, 1),
        "cluster_synced": s + s[::-1],
    }[kernel].reshape(-1)
    np.testing.assert_allclose(out, expect, rtol=1e-6)
