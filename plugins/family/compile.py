"""NVRTC compilation with no GPU and no driver, and ptxas's resource report.

Why: every candidate must compile for each target GPU before any GPU time is
spent, and ptxas's registers/shared/spill/stack numbers are recorded so that a
spill, a local-memory array or an over-limit tile fails in CI, with the
numbers (a candidate whose local memory is deliberate says `allow_local = true`).
"""
from __future__ import annotations

import os
import re
import time
from dataclasses import dataclass, field, replace
from functools import lru_cache
from pathlib import Path

import json
from dataclasses import asdict

from plugins.cache import store
from plugins.family import pch

# Shared with the GPU run (plugins/measure/device.py passes the same options to CuPy).
# CuPy 14 always appends -ftz=true and --device-as-default-execution-space to
# what it hands NVRTC (cupy/cuda/compiler.py), so the CPU check states them
# too: CI and the GPU build then see the same flags. No fast-math, no register
# caps, no launch bounds: nothing tells candidates apart except their code.
# ptxas's default optimisation level is -O3.
NVRTC_OPTIONS: tuple[str, ...] = ("--std=c++17", "-ftz=true", "--device-as-default-execution-space")
# Every target from sm_80 up that users own: A100 (8.0), RTX 3090/A6000 (8.6),
# RTX 4090/L40S (8.9), H100/H200 (9.0), B200 (10.0), RTX 5090 (12.0), GB10 (12.1).
# A family compiles for those at or above its [needs] (plugins/family/needs.py).
ARCHS: tuple[str, ...] = ("sm_80", "sm_86", "sm_89", "sm_90", "sm_100", "sm_120", "sm_121")
STATIC_SHARED_LIMIT = 48 * 1024
# Compile speed only: NVRTC's automatic precompiled headers, kept per process. The
# cubin is byte-identical with and without them (tests/family/test_pch.py checks a
# header-heavy family on two targets); header-heavy candidates (mma.h, cuda_pipeline,
# cooperative_groups) compile about 3x faster. 629/630 are PCH-only diagnostics (a PCH
# made with other options or includes is not used). SPARKTRACE_NO_PCH=1 turns it off.
# The files go to a folder of this process's own (plugins/family/pch.py), never /tmp;
# NVRTC's messages name the PCH each compile made or used, so the least recently used
# is the one removed, and the messages are then taken out of the log.
PCH_OPTIONS: tuple[str, ...] = ("-pch", "--pch-messages=true", "--diag-suppress=629,630")


def speed_options() -> tuple[str, ...]:
    """The PCH flags, as the cache key sees them: where the files go does not change the cubin."""
    return () if os.environ.get("SPARKTRACE_NO_PCH") == "1" else PCH_OPTIONS


def include_options() -> tuple[str, ...]:
    """-I flags for CUDA's own headers (cooperative_groups needs them and CCCL)."""
    roots = [os.environ.get("CUDA_PATH"), os.environ.get("CUDA_HOME"), "/usr/local/cuda"]
    for root in roots:
        if root and (Path(root) / "include" / "cooperative_groups.h").is_file():
            inc = Path(root) / "include"
            opts = [f"-I{inc}"]
            if (inc / "cccl").is_dir():
                opts.append(f"-I{inc / 'cccl'}")
            return tuple(opts)
    return ()


@dataclass(frozen=True)
class KernelResources:
    """ptxas's report for one entry point on one architecture."""

    kernel: str
    arch: str
    registers: int
    shared_bytes: int
    stack_bytes: int
    spill_store_bytes: int
    spill_load_bytes: int
    # Local-memory instructions (ld.local / st.local) in the entry's PTX: local
    # arrays and stack objects. Spills are added later by ptxas and show in the
    # spill figures instead.
    local_loads: int = 0
    local_stores: int = 0

    @property
    def uses_local(self) -> bool:
        """A stack frame that is not just spill space, or local instructions in the PTX."""
        spills = self.spill_store_bytes or self.spill_load_bytes
        return bool(self.local_loads or self.local_stores or (self.stack_bytes and not spills))


@dataclass(frozen=True)
class CompileResult:
    arch: str
    ok: bool
    log: str
    resources: tuple[KernelResources, ...]
    seconds: float
    cubin: bytes = field(default=b"", repr=False, compare=False)  # the binary, for plugins.family.binary
    # Each entry point's parameter sizes in bytes, read from this compile's own PTX (the
    # parameter ABI is the same on every target, so no second compile is needed for it).
    entry_params: tuple[tuple[str, tuple[int, ...]], ...] = ()

    def problems(self, allow_local: bool = False, allow_spills: bool = False) -> list[str]:
        """Spills and local memory (unless the candidate declares them by design) and over-limit
        static shared memory, each with its numbers."""
        out = []
        for r in self.resources:
            if (r.spill_store_bytes or r.spill_load_bytes) and not allow_spills:
                out.append(f"{r.kernel} on {r.arch} spills: {r.spill_store_bytes} B stores, {r.spill_load_bytes} B loads")
            if r.uses_local and not allow_local:
                out.append(f"{r.kernel} on {r.arch} uses local memory: {r.stack_bytes} B stack frame, "
                           f"{r.local_loads} local loads and {r.local_stores} local stores in the PTX")
            if r.shared_bytes > STATIC_SHARED_LIMIT:
                out.append(f"{r.kernel} on {r.arch} uses {r.shared_bytes} B of static shared memory (limit {STATIC_SHARED_LIMIT})")
        return out


_ENTRY = re.compile(r"Compiling entry function '(\w+)' for '(\w+)'")
_PROPS = re.compile(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads")
_USED = re.compile(r"Used (\d+) registers(?:.*?(\d+) bytes smem)?")


def parse_ptxas_log(log: str) -> tuple[KernelResources, ...]:
    """Read `ptxas info` lines (as printed with -Xptxas=-v) into records."""
    out: list[KernelResources] = []
    current: dict | None = None
    for line in log.splitlines():
        if m := _ENTRY.search(line):
            current = {"kernel": m.group(1), "arch": m.group(2), "stack": 0, "st": 0, "ld": 0}
        elif current and (m := _PROPS.search(line)):
            current.update(stack=int(m.group(1)), st=int(m.group(2)), ld=int(m.group(3)))
        elif current and (m := _USED.search(line)):
            out.append(
                KernelResources(
                    kernel=current["kernel"], arch=current["arch"], registers=int(m.group(1)),
                    shared_bytes=int(m.group(2) or 0), stack_bytes=current["stack"],
                    spill_store_bytes=current["st"], spill_load_bytes=current["ld"],
                )
            )
            current = None
    return tuple(out)


_NVRTC_ERROR = re.compile(r"^(?P<file>[^\n(]+)\((?P<line>\d+)\): (?:catastrophic )?error: (?P<msg>.*)$", re.M)


def first_error(log: str) -> tuple[int | None, str]:
    """The line and message of the first error in an NVRTC log, for a one-line failure."""
    m = _NVRTC_ERROR.search(log)
    if m:
        return int(m.group("line")), m.group("msg").strip()
    lines = [ln for ln in log.splitlines() if "error" in ln.lower()]
    return None, (lines[0].strip() if lines else "NVRTC failed without a message")


@lru_cache(maxsize=1)
def nvrtc_version() -> str:
    from cuda.bindings import nvrtc  # lazy: only the compile stage needs it

    _, major, minor = nvrtc.nvrtcVersion()
    return f"{major}.{minor}"


@lru_cache(maxsize=1)
def cuda_headers_version() -> str:
    """CUDA_VERSION of the headers include_options() points at: they are part of every compile."""
    for opt in include_options()[:1]:
        text = (Path(opt[2:]) / "cuda.h").read_text(errors="replace") if (Path(opt[2:]) / "cuda.h").is_file() else ""
        if m := re.search(r"#define\s+CUDA_VERSION\s+(\d+)", text):
            return m.group(1)
    return "none"


# Bumped when CompileResult's stored form changes, so an older entry is never read as this one.
_RECORD_FORMAT = "2: entry_params"


def _compile_key(kind: str, source: str, arch: str, name: str) -> str:
    """The on-disk cache key: everything NVRTC's output depends on, tool versions included."""
    return store.digest(kind, _RECORD_FORMAT, source, arch, name, *NVRTC_OPTIONS, *include_options(), *speed_options(),
                        nvrtc_version(), cuda_headers_version())


def _encode(res: CompileResult) -> bytes:
    meta = {**asdict(res), "cubin": len(res.cubin)}
    return json.dumps(meta).encode() + b"\n" + res.cubin


def _decode(payload: bytes) -> CompileResult:
    head, _, cubin = payload.partition(b"\n")
    meta = json.loads(head)
    resources = tuple(KernelResources(**r) for r in meta["resources"])
    params = tuple((k, tuple(v)) for k, v in meta["entry_params"])
    return CompileResult(meta["arch"], meta["ok"], meta["log"], resources, meta["seconds"], cubin, params)


@lru_cache(maxsize=512)
def compile_source(source: str, arch: str, name: str = "kernel.cu") -> CompileResult:
    """Compile to a cubin for `arch` with NVRTC_OPTIONS and collect ptxas's report; read back
    from .cache/sparktrace/ (plugins/cache/store.py) when this source, name, options and
    toolchain compiled before. `seconds` is the time the compile itself took."""
    key = _compile_key("nvrtc_compile", source, arch, name)
    return _decode(store.cached("nvrtc_compile", key, lambda: _encode(_nvrtc_compile(source, arch, name))))


def _nvrtc_compile(source: str, arch: str, name: str) -> CompileResult:
    from cuda.bindings import nvrtc

    speed = speed_options()
    pch_dir = pch.folder() if speed else None
    start = time.perf_counter()
    err, prog = nvrtc.nvrtcCreateProgram(source.encode(), name.encode(), 0, [], [])
    if err != nvrtc.nvrtcResult.NVRTC_SUCCESS:
        raise RuntimeError(f"nvrtcCreateProgram failed: {err}")
    try:
        opts = [o.encode() for o in (*NVRTC_OPTIONS, *include_options(), f"-arch={arch}", "-Xptxas=-v", *speed,
                                     *((f"--pch-dir={pch_dir}",) if pch_dir else ()))]
        (res,) = nvrtc.nvrtcCompileProgram(prog, len(opts), opts)
        _, size = nvrtc.nvrtcGetProgramLogSize(prog)
        buf = b" " * size
        nvrtc.nvrtcGetProgramLog(prog, buf)
        log = clean_log(buf.decode(errors="replace"))
        ok = res == nvrtc.nvrtcResult.NVRTC_SUCCESS
        ptx = ""
        cubin = b""
        if ok:
            _, size = nvrtc.nvrtcGetPTXSize(prog)
            pbuf = b" " * size
            nvrtc.nvrtcGetPTX(prog, pbuf)
            ptx = pbuf.decode(errors="replace")
            _, cubin_size = nvrtc.nvrtcGetCUBINSize(prog)
            cubin = b" " * cubin_size
            nvrtc.nvrtcGetCUBIN(prog, cubin)
    finally:
        nvrtc.nvrtcDestroyProgram(prog)
    seconds = time.perf_counter() - start
    if pch_dir:  # after the clock: the PCH bookkeeping is not the compile
        log = pch.note_use(pch_dir, log)
        pch.prune(pch_dir)
    resources = with_local_counts(parse_ptxas_log(log), ptx) if ok else ()
    params = tuple(sorted(entry_param_sizes(ptx).items()))
    return CompileResult(arch, ok, log, resources, seconds, cubin, params)


def clean_log(log: str) -> str:
    """A compiler log as text: no NUL bytes (NVRTC's buffer ends in one), no trailing blanks."""
    return log.replace("\x00", "").rstrip()


_PTX_FUNC = re.compile(r"^\s*(?:\.visible\s+|\.weak\s+|\.extern\s+)*\.(entry|func)\s+(?:\([^)]*\)\s*)?(\w+)", re.M)
_LOCAL_OP = re.compile(r"^\s*(?:@!?%\w+\s+)?(ld|st)\.local\b", re.M)


def local_counts(ptx: str) -> dict[str, tuple[int, int]]:
    """(ld.local, st.local) instruction counts of each .entry in the PTX."""
    marks = list(_PTX_FUNC.finditer(ptx))
    out: dict[str, tuple[int, int]] = {}
    for i, m in enumerate(marks):
        if m.group(1) != "entry":
            continue
        body = ptx[m.end(): marks[i + 1].start() if i + 1 < len(marks) else len(ptx)]
        ops = [op.group(1) for op in _LOCAL_OP.finditer(body)]
        out[m.group(2)] = (ops.count("ld"), ops.count("st"))
    return out


def with_local_counts(resources: tuple[KernelResources, ...], ptx: str) -> tuple[KernelResources, ...]:
    counts = local_counts(ptx)
    return tuple(replace(r, local_loads=counts.get(r.kernel, (0, 0))[0], local_stores=counts.get(r.kernel, (0, 0))[1])
                 for r in resources)


_PTX_ENTRY = re.compile(r"\.entry\s+(\w+)\s*\(([^)]*)\)", re.S)
_PTX_PARAM = re.compile(r"\.param\s+\.(?:align\s+\d+\s+)?\.?([a-z]+)(\d+)")


def ptx_entry_params(source: str, arch: str, name: str = "kernel.cu") -> dict[str, tuple[int, ...]]:
    """Each entry point's parameter sizes in bytes, as the compiler emitted them for `arch`.

    Why: the manifest's argument lists are checked against the source text; this
    cross-checks that reading against what NVRTC actually compiled.
    """
    return dict(compile_source(source, arch, name).entry_params)


def entry_param_sizes(ptx: str) -> dict[str, tuple[int, ...]]:
    """The .param sizes of each .entry in a PTX text."""
    return {
        m.group(1): tuple(int(bits) // 8 for _, bits in _PTX_PARAM.findall(m.group(2)))
        for m in _PTX_ENTRY.finditer(ptx)
    }
