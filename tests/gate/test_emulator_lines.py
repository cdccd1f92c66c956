"""Emulator compile errors point into the real file (issue 10, item 5)."""
from __future__ import annotations

import re
import shutil

import pytest

from plugins.gate.emulate import EmuCompileError, build
from plugins.family.cuda_source import kernel_signatures

pytestmark = pytest.mark.skipif(shutil.which("g++") is None, reason="g++ is not installed: the CPU emulator compiles kernels with it")

OPEN_BRACE = """// a kernel whose loop body is never closed
extern "C" __global__ void k0(const float* __restrict__ x, float* __restrict__ out, int n)
{
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    for (int i = 0; i < 4; ++i) {
        if (t < n) out[t] = x[t];
}
"""


def test_open_brace_error_names_lines_inside_the_file(tmp_path):
    with pytest.raises(EmuCompileError) as info:
        build(OPEN_BRACE, kernel_signatures(OPEN_BRACE + "}\n"), "fam/kernel.cu", cache_dir=tmp_path)
    msg = str(info.value)
    n_lines = OPEN_BRACE.count("\n")
    cited = [int(n) for n in re.findall(r"fam/kernel\.cu:(\d+):", msg)]
    assert cited and max(cited) <= n_lines, msg  # never a line past the end of the kernel
    assert "\x00" not in msg
    assert "emulator entry points" in msg  # the generated part is named as such, not as the kernel
