"""The compiled binary of a candidate, disassembled and profiled on CPU.

Why: the cubin NVRTC builds for CI is the one the GPU runs (same options), so
its disassembly is the evidence for what a kernel does. nvdisasm comes from
the `nvidia-cuda-nvdisasm` wheel (pinned in requirements.txt); no GPU, no
driver and no network are needed.
"""
from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import tempfile
from functools import lru_cache
from pathlib import Path

from plugins.cache import store
from plugins.cache.work import count
from plugins.family import recorded
from plugins.family.compile import compile_source
from plugins.family.sass import KernelProfile, profile_text

NVDISASM_WHEEL = "nvidia-cuda-nvdisasm"


class BinaryError(RuntimeError):
    """A candidate that cannot be disassembled: says which and how to fix it."""


def nvdisasm_path() -> Path:
    """$NVDISASM, the wheel's binary, or one on PATH / under /usr/local/cuda."""
    if env := os.environ.get("NVDISASM"):
        return Path(env)
    spec = importlib.util.find_spec("nvidia")
    for root in (spec.submodule_search_locations or []) if spec else []:
        for sub in ("cu13", "cuda_nvdisasm"):
            p = Path(root, sub, "bin", "nvdisasm")
            if p.is_file():
                return p
    for p in (shutil.which("nvdisasm"), "/usr/local/cuda/bin/nvdisasm"):
        if p and Path(p).is_file():
            return Path(p)
    raise BinaryError(f"nvdisasm not found; fix: .venv/bin/pip install -c constraints.txt {NVDISASM_WHEEL} "
                      "(pinned in requirements.txt), or set NVDISASM to its path")


@lru_cache(maxsize=1)
def nvdisasm_version() -> str:
    """nvdisasm's release, e.g. "13.5, V13.5.37"."""
    out = subprocess.run([str(nvdisasm_path()), "--version"], capture_output=True, text=True, check=False).stdout
    for line in out.splitlines():
        if "release" in line:
            return line.split("release", 1)[1].strip()
    return "unknown"


def disassemble(cubin: bytes) -> str:
    """nvdisasm -c of a cubin: code sections only, one instruction a line; read back from
    .cache/sparktrace/ when this cubin was disassembled by this nvdisasm release before."""
    key = store.digest("nvdisasm -c", cubin, nvdisasm_version())
    return store.cached("nvdisasm", key, lambda: _nvdisasm(cubin).encode()).decode()


def _nvdisasm(cubin: bytes) -> str:
    with tempfile.NamedTemporaryFile(suffix=".cubin") as f:
        f.write(cubin)
        f.flush()
        done = subprocess.run([str(nvdisasm_path()), "-c", f.name], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise BinaryError(f"nvdisasm failed ({done.returncode}): {done.stderr.strip()[:500]}")
    return done.stdout


@lru_cache(maxsize=1024)
def sass_of(source: str, arch: str, name: str = "kernel.cu") -> str:
    """`name` as test_compiles passes it, so the two share one compile."""
    res = compile_source(source, arch, name)
    if not res.ok or not res.cubin:
        raise BinaryError(f"does not compile for {arch}: {res.log[:500]}")
    return disassemble(res.cubin)


@lru_cache(maxsize=1024)
def profile_source(source: str, arch: str, name: str = "kernel.cu") -> tuple[KernelProfile, ...]:
    """Every entry point's instruction profile for `arch`, sorted by kernel name: the committed
    report's row when it was read from the same code sections with this nvdisasm and profiler
    (plugins/family/recorded.py), else disassembled now."""
    res = compile_source(source, arch, name)
    if res.ok and res.cubin and (hit := recorded.committed(nvdisasm_version()).lookup(arch, res.cubin)) is not None:
        count("recorded_profile")
        return hit
    return fresh_profile_source(source, arch, name)


@lru_cache(maxsize=1024)
def fresh_profile_source(source: str, arch: str, name: str = "kernel.cu") -> tuple[KernelProfile, ...]:
    """profile_source from nvdisasm, never from a report: what writes the reports and what checks them."""
    return profile_text(sass_of(source, arch, name), arch)
