"""The emulator's shared-memory guards: an access outside a block's shared memory fails the gate.

Why: a GPU faults on such an access, or silently reads another CTA's memory.
The emulator places each block's used shared memory against PROT_NONE pages
(end-anchored in even blocks, start-anchored in odd ones), so the overrun that
launch_chain's shared_window once shipped (tests/fixtures/emu/smemfam) is
rejected with the kernel, block and thread. Expected values come from NumPy.
"""
from __future__ import annotations

import re
import shutil
from pathlib import Path

import numpy as np
import pytest

from plugins.family.plan import BufferArg, ResolvedLaunch, ScalarArg, cdiv

pytestmark = pytest.mark.skipif(shutil.which("g++") is None, reason="g++ is not installed: the CPU emulator compiles kernels with it")

FIX = Path(__file__).parents[1] / "fixtures" / "emu"
OOB = r"out-of-bounds shared memory access in kernel {k} \(launch 0\)"
WHERE = r"\(block \(\d+,0,0\), thread \(\d+,0,0\)\)"


@pytest.fixture(scope="module")
def emu():
    from plugins.gate import emulate

    return emulate


def _run(emu, kernel: str, n: int, block: int, shared_bytes: int = 0):
    x = np.arange(1, n + 1, dtype=np.float32)
    launch = ResolvedLaunch(kernel, (cdiv(n, block), 1, 1), (block, 1, 1), shared_bytes,
                            (BufferArg("x"), BufferArg("out"), ScalarArg("n", "int", n)), False)
    return x, emu.run_source((FIX / "smem_guards.cu").read_text(), [launch], {"x": x, "out": np.zeros(n, np.float32)},
                             name="smem_guards.cu")


def _family(cand_file: str, role: str):
    from plugins.family.cuda_source import kernel_signatures
    from plugins.family.manifest import Buffer, Candidate, Family, Launch, Tolerance

    fam_dir = FIX / "smemfam"
    plan = (Launch("k0", ("cdiv(n, 2048)",), (256,), 0, ("x", "out", "n", "c0", "c1", "c2")),)
    text = (fam_dir / cand_file).read_text()
    cand = Candidate(Path(cand_file).stem, role, fam_dir / cand_file, text, plan, (), "", kernel_signatures(text))
    fam = Family(
        name="smemfam", path=fam_dir, computes="eight stencil steps", bound="memory", constraints=(),
        timing={"n": 1 << 20}, gate=({"n": 100003}, {"n": 5000}), tiny=({"n": 37},),
        params={"c0": 0.30, "c1": 0.45, "c2": 0.25},
        buffers=(Buffer("x", "float32", "n", "input"),
                 Buffer("out", "float32", "n", "output", Tolerance("elementwise", rtol=1e-5, atol=1e-6))),
        start=cand, rewrites=(), wrong=(), intended_winner="", intended_reasoning="",
    )
    return fam, cand


def test_old_shared_window_overrun_fails_the_gate(emu):
    """launch_chain's shared_window before its fix: loads up to 960 B past buf, dropped by a select."""
    from plugins.gate.check import gate_candidate

    fam, cand = _family("overrun.cu", "rewrite")
    result = gate_candidate(fam, cand, emu.EmuExecutor(sm_count=4), seeds=(1,))
    assert not result.passed
    assert (result.family, result.candidate) == ("smemfam", "overrun")
    # its reads run from buf's first half into the second, which other threads write in the same
    # interval: the race check names buf before the read past the end reaches the guard page
    assert re.search(OOB.format(k="k0") + r" \(SIGSEGV\): past the end of __shared__ buf, the last of the block's "
                     r"static shared arrays " + WHERE, result.reason) or re.search(
        r"EmuRace: kernel k0 \(launch 0\): shared-memory race \(read after write\) on __shared__ buf", result.reason), result.reason


def test_padded_shared_window_passes_the_gate(emu):
    from plugins.gate.check import gate_candidate

    fam, cand = _family("kernel.cu", "start")
    result = gate_candidate(fam, cand, emu.EmuExecutor(sm_count=4), seeds=(1, 2))
    assert result.passed, result.reason


def test_in_bounds_first_and_last_elements_pass(emu):
    n = 1000
    x, got = _run(emu, "k4", n, 256)
    want = np.concatenate([np.concatenate(([0.0], seg[:-1])) for seg in np.split(np.pad(x, (0, 24)), 4)])[:n]
    np.testing.assert_array_equal(got["out"], want)


def test_static_underrun_is_caught(emu):
    """tile[-1]: caught in the blocks whose arrays start at a guard page (every other block)."""
    with pytest.raises(emu.EmuOutOfBounds, match=OOB.format(k="k0") + r" \(SIGSEGV\): before the start of __shared__ tile, "
                       r"the first of the block's static shared arrays \(block \(\d+,0,0\), thread \(0,0,0\)\)"):
        _run(emu, "k0", 1000, 256)


def test_dynamic_underrun_is_caught(emu):
    with pytest.raises(emu.EmuOutOfBounds, match=OOB.format(k="k1") + r" \(SIGSEGV\): before the start of dynamic shared "
                       r"memory \(512 bytes in the launch plan\) \(block \(\d+,0,0\), thread \(0,0,0\)\)"):
        _run(emu, "k1", 1000, 128, shared_bytes=512)


def test_dynamic_overrun_is_caught(emu):
    """seg[blockDim.x] with shared_bytes a multiple of 16: the write hits the guard page."""
    with pytest.raises(emu.EmuOutOfBounds, match=OOB.format(k="k2") + r" \(SIGSEGV\): past the end of dynamic shared "
                       r"memory \(512 bytes in the launch plan\) \(block \(\d+,0,0\), thread \(127,0,0\)\)"):
        _run(emu, "k2", 1000, 128, shared_bytes=512)


def test_dynamic_overrun_into_the_rounding_is_caught_at_block_exit(emu):
    """shared_bytes = 516: the region is rounded to 528 bytes, so a write at 516 lands in poisoned slack."""
    with pytest.raises(emu.EmuOutOfBounds, match=OOB.format(k="k2") + r": block \(\d+,0,0\): a write to byte 1 past the "
                       r"end of dynamic shared memory \(516 bytes"):
        _run(emu, "k2", 1000, 129, shared_bytes=516)


def test_static_overrun_into_the_alignment_slack_is_caught_at_block_exit(emu):
    """a[3] of float a[3]: the array (12 bytes, 16-byte aligned) leaves 4 bytes of slack below the guard page."""
    with pytest.raises(emu.EmuOutOfBounds, match=OOB.format(k="k3") + r": block \(\d+,0,0\): a write to byte 1 past the "
                       r"end of __shared__ a "):
        _run(emu, "k3", 64, 32)
