"""A CPU emulator for SparkTrace's CUDA kernels, so the correctness gate runs with no GPU.

Why: the GPU gate runs only when a device is lent, which is rare. The emulator
compiles a candidate with g++ against a CUDA-emulation prelude (plugins/gate/emu/)
and runs its launch plan on the gate shapes. It checks the kernels' logic:
indexing, tails, barriers, shuffles, atomics and reductions. It is an
emulation: it says nothing about speed and does not model the GPU's memory
ordering. Shared-memory races are checked as compute-sanitizer's racecheck does
(emu_runtime.cpp, "shared-memory race check"): a read of a byte another thread
of the block wrote in the same barrier interval, a write after another's read,
or two writes, raises EmuRace naming the buffer, both threads and both lines.
Races on global memory are not checked.

Semantics, chosen so that bugs surface deterministically:
- every CUDA thread is a fiber; a block's fibers run on one OS thread, each
  until its next sync point (__syncthreads, a warp operation, grid.sync, exit),
  warp by warp, lanes in order; warps are 32 consecutive linear thread ids
  (x fastest, then y, then z); a shuffle returns the partner's value deposited
  at the same sync point;
- blocks run one at a time in a fixed permuted order (i -> (a*i + c) mod n,
  a ~ 0.618 n, coprime with n), so a kernel that assumes blocks run in index
  order fails the same way every time; cooperative launches run all blocks at
  once and grid.sync() is a grid-wide barrier;
- shared memory starts poisoned (0xff bytes: NaN as float), so a missing
  barrier reads NaN instead of a plausible stale value;
- a barrier some threads never reach, a warp operation whose mask names an
  exited lane, a grid.sync() outside a cooperative launch: a clear error.

Each launch runs in a forked child over shared-memory buffers whose ends abut
PROT_NONE guard pages (inputs passed as const are mapped read-only), so an
out-of-bounds access, a divergent barrier or an endless loop becomes an
exception naming the kernel and the buffer, never a crashed or hung
interpreter. A block's __shared__ arrays and dynamic shared memory abut guard
pages too: at their end in even blocks, at their start in odd ones (the
limits are in families/README.md).
"""
from __future__ import annotations

import ctypes
import logging
import mmap
import os
import re
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Mapping, Sequence

import numpy as np

from plugins.cache.store import digest, kind_dir
from plugins.cache.work import count
from plugins.family.cuda_source import (
    CTYPE_DTYPES,
    POINTER_ONLY_CTYPES,
    KernelSignature,
    SourceError,
    blank_comments,
    kernel_signatures,
)
from plugins.family.dtypes import dtype_name
from plugins.family.manifest import MAX_BLOCK, MAX_THREADS, Candidate, Family
from plugins.family.plan import BufferArg, Number, ResolvedLaunch, ScalarArg

log = logging.getLogger("sparktrace.emulate")

EMU_DIR = Path(__file__).resolve().parent / "emu"
REPO_ROOT = Path(__file__).resolve().parents[2]
CXX = "g++"
# -fwrapv: signed overflow wraps as on the GPU; -fno-strict-aliasing: kernels pun
# float and integer bits through pointers; -fstack-clash-protection: a large
# frame probes page by page, so it hits the fiber's guard page instead of
# jumping over it into a neighbour's stack. -z now: the forked child must not
# run the lazy binder (it takes a lock another parent thread may hold).
CXXFLAGS: tuple[str, ...] = ("-std=c++17", "-fPIC", "-fwrapv", "-fno-strict-aliasing", "-fvisibility=hidden",
                             "-fstack-clash-protection")
KERNEL_OPT = "-O1"
# -fno-tree-sink: a load the source makes unconditionally (then selected away) stays
# unconditional, as the GPU binary usually keeps it; sunk under the condition, an
# out-of-bounds read would never happen here and the shared-memory guards could not see it.
KERNEL_FLAGS: tuple[str, ...] = ("-fno-tree-sink",)
# The shared-memory race check (emu_runtime.cpp): g++'s ThreadSanitizer instrumentation calls a hook
# before every load and store, which the runtime implements itself; -g1 keeps the line table, so a
# race names its source lines (addr2line).
RACE_FLAGS: tuple[str, ...] = ("-fsanitize=thread", "--param", "tsan-instrument-func-entry-exit=0", "-g1")
RUNTIME_OPT = "-O2"
MAX_DYNAMIC_SHARED = 227 * 1024  # the opt-in maximum on sm_90; the manifest caps lower
THREADS_PER_SM = 2048  # co-residency bound used for cooperative grids
DEFAULT_TIMEOUT_S = 120.0
_CANARY = 0xFF  # slack bytes read back as NaN (floats) or all ones (integers)


class EmuError(RuntimeError):
    """Anything the emulator could not do, with the reason."""


class EmuSourceError(EmuError):
    """A kernel source construct the emulator cannot translate."""


class EmuCompileError(EmuError):
    """g++ rejected the translated kernel."""


class EmuLaunchError(EmuError):
    """A launch that a GPU would also get wrong: a bad plan, a divergent barrier, a trap."""


class EmuOutOfBounds(EmuLaunchError):
    """A kernel touched memory outside the buffers it was given."""


class EmuRace(EmuLaunchError):
    """Two threads touched one shared-memory byte, at least one writing, with nothing ordering them."""


class EmuTimeout(EmuLaunchError):
    """A launch ran past its time limit."""


# --------------------------------------------------------------------------- source translation


def _blank_comments(src: str) -> str:
    """Comments replaced by spaces (newlines kept), so regexes never match inside them.

    The family stage's lexer, so digit separators, raw strings and continued
    // comments read the same here as in the prompts."""
    try:
        return blank_comments(src)
    except SourceError as exc:
        raise EmuSourceError(str(exc)) from None


_ALIGN = re.compile(r"__align__\s*\(\s*(\d+)\s*\)|alignas\s*\(\s*(\d+)\s*\)|__attribute__\s*\(\(\s*aligned\s*\(\s*(\d+)\s*\)\s*\)\)")
_DECL = re.compile(r"^(?P<type>.*?)\s*\b(?P<name>[A-Za-z_]\w*)\s*(?P<dims>(?:\[[^\[\]]*\]\s*)*)$", re.S)
_EXTERN_SHARED = re.compile(r"\bextern\s+(?P<pre>(?:(?:volatile|const)\s+)*)__shared__\s+(?P<decl>[^;{}]*?)\s*;")
_SHARED = re.compile(r"(?P<pre>(?:\b(?:static|volatile|const)\s+)*)\b__shared__\s+(?P<decl>[^;{}]*?)\s*;")


@dataclass(frozen=True)
class Translated:
    """The C++ text g++ compiles, and what the translation learned."""

    text: str
    file_scope_shared: tuple[str, ...]  # __shared__ arrays at file scope: one copy, not per block


def _outside_templates(decl: str) -> str:
    """The declaration with template argument lists removed: `A<int, 2> x` -> `A x`."""
    out, depth = [], 0
    for ch in decl:
        if ch == "<":
            depth += 1
        elif ch == ">" and depth:
            depth -= 1
        elif not depth:
            out.append(ch)
    return "".join(out)


def _split_decl(decl: str, where: str) -> tuple[str, str, str, int]:
    align = 0
    for m in _ALIGN.finditer(decl):
        align = max(align, int(next(g for g in m.groups() if g)))
    decl = _ALIGN.sub(" ", decl)
    if any(ch in _outside_templates(decl) for ch in ",=("):
        raise EmuSourceError(
            f"{where}: cannot translate the shared declaration {decl.strip()!r}; "
            "declare one array per statement, without an initializer"
        )
    m = _DECL.match(" ".join(decl.split()))
    if not m or not m.group("type").strip():
        raise EmuSourceError(f"{where}: cannot read the shared declaration {decl.strip()!r}")
    return m.group("type").strip(), m.group("name"), "".join(m.group("dims").split()), align


def _depths(text: str) -> list[int]:
    """Brace depth before every character (comments already blanked)."""
    depth, out = 0, []
    for ch in text:
        out.append(depth)
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
    out.append(depth)
    return out


def translate(source: str, name: str = "kernel.cu") -> Translated:
    """Rewrite shared-memory declarations so each block gets its own, poisoned copy.

    `extern __shared__ T s[];` becomes a pointer to the launch's dynamic shared
    memory; a function-scope `__shared__ T s[...];` becomes a reference into
    the block's arena. File-scope `__shared__` stays a single static (fine when
    blocks run one at a time, refused for cooperative launches).
    """
    text = _blank_comments(source)
    file_scope: list[str] = []
    counter = 0

    def rewrite(pattern: re.Pattern[str], text: str, extern: bool) -> str:
        nonlocal counter
        depth = _depths(text)
        pieces: list[str] = []
        last = 0
        for m in pattern.finditer(text):
            line = text.count("\n", 0, m.start()) + 1
            where = f"{name}:{line}"
            ctype, var, dims, align = _split_decl(m.group("decl"), where)
            quals = " ".join(q for q in m.group("pre").split() if q != "static")
            ctype = f"{quals} {ctype}".strip()
            keep_lines = "\n" * m.group(0).count("\n")
            if extern:
                if dims != "[]":
                    raise EmuSourceError(f"{where}: extern __shared__ {var} must be declared as an unsized array, {var}[]")
                if depth[m.start()] == 0:
                    repl = f"\n#define {var} (({ctype}*)emu_dyn_smem())\n#line {line + len(keep_lines)}\n"
                else:
                    repl = f"{ctype}* const {var} = ({ctype}*)emu_dyn_smem();{keep_lines}"
            elif depth[m.start()] == 0:
                file_scope.append(var)
                repl = m.group(0).replace("__shared__", "static", 1)
                if "static" in m.group("pre"):
                    repl = m.group(0).replace("__shared__", "", 1)
            else:
                tname = f"emu_shared_t{counter}"
                repl = (
                    f"typedef {ctype} {tname}{dims}; "
                    f"auto& {var} = emu_block_shared<{tname}, {counter}, {align or 1}>(\"{var}\");{keep_lines}"
                )
                counter += 1
            pieces.append(text[last : m.start()])
            pieces.append(repl)
            last = m.end()
        pieces.append(text[last:])
        return "".join(pieces)

    text = rewrite(_EXTERN_SHARED, text, extern=True)
    text = rewrite(_SHARED, text, extern=False)
    return Translated(f'#line 1 "{name}"\n{text}', tuple(file_scope))


def _entry_wrappers(sigs: Mapping[str, KernelSignature]) -> str:
    """One `emu_entry_<kernel>(void** a)` per kernel: pointers by value, scalars by address."""
    # #line: an error here (a brace left open in the kernel) names this part, not a line past the kernel's end
    lines = ['\n#line 1 "<emulator entry points generated by plugins/gate/emulate.py>"']
    for sig in sigs.values():
        args = []
        for i, p in enumerate(sig.params):
            if p.pointer:
                args.append(f"({'const ' if p.const else ''}{p.ctype}*)a[{i}]")
            else:
                args.append(f"*({p.ctype}*)a[{i}]")
        lines.append(
            f'extern "C" __attribute__((visibility("default"))) void emu_entry_{sig.name}(void** a) '
            f"{{ (void)a; {sig.name}({', '.join(args)}); }}"
        )
    return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------- compiling


@lru_cache(maxsize=1)
def _compiler_id() -> str:
    if shutil.which(CXX) is None:
        raise EmuCompileError(f"{CXX} is not installed; the CPU emulator compiles kernels with it (apt-get install g++)")
    out = subprocess.run([CXX, "--version"], capture_output=True, text=True, check=True)
    return out.stdout.splitlines()[0] if out.stdout else CXX


def _emu_files() -> dict[str, bytes]:
    """Every file of the prelude, headers in subfolders too (cuda/barrier has no suffix)."""
    return {p.relative_to(EMU_DIR).as_posix(): p.read_bytes() for p in sorted(EMU_DIR.rglob("*")) if p.is_file()}


def _digest(*parts: bytes | str) -> str:
    """A build's file name: the cache's own digest, shortened (file names, not integrity)."""
    return digest(*parts)[:24]


def _atomic_compile(cmd: list[str], out: Path, what: str) -> None:
    """Compile to a temp name and rename, so concurrent xdist workers never see half a file."""
    fd, tmp = tempfile.mkstemp(prefix=out.name + ".", suffix=".tmp", dir=out.parent)
    os.close(fd)
    try:
        proc = subprocess.run([*cmd, "-o", tmp], capture_output=True, text=True, errors="replace")
        if proc.returncode != 0:
            tail = "\n".join(proc.stderr.replace("\x00", "").strip().splitlines()[-40:])
            raise EmuCompileError(f"{what}: g++ could not compile it for the emulator:\n{tail}")
        os.replace(tmp, out)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def _runtime_object(cache_dir: Path, defines: tuple[str, ...]) -> Path:
    files = _emu_files()
    key = _digest(_compiler_id(), " ".join(CXXFLAGS), RUNTIME_OPT, " ".join(defines), *(files[k] for k in sorted(files)))
    obj = cache_dir / f"runtime-{key}.o"
    if not obj.exists():
        count("emu_runtime_build")
        _atomic_compile(
            [CXX, *CXXFLAGS, RUNTIME_OPT, *defines, "-c", "-x", "c++", str(EMU_DIR / "emu_runtime.cpp")],
            obj, "plugins/gate/emu/emu_runtime.cpp",
        )
    return obj


def _prelude_pch(cache_dir: Path, runtime: Path, flags: Sequence[str]) -> list[str]:
    """-I of a folder holding cuda_emu.h.gch, g++'s precompiled prelude for exactly these flags.

    Speed only: g++ takes cuda_emu.h.gch from the first include folder and must be given the
    flags it was built with (they are its key); the object is byte-identical without it
    (tests/gate/test_emulator.py). About half of a kernel's compile was the prelude.
    SPARKTRACE_NO_PCH=1 turns it off, as for NVRTC.
    """
    if os.environ.get("SPARKTRACE_NO_PCH") == "1":
        return []
    key = _digest("prelude-pch", runtime.name, " ".join(flags))  # the runtime's name digests g++ and every prelude file
    folder = cache_dir / f"pch-{key}"
    gch = folder / "cuda_emu.h.gch"
    if not gch.exists():
        folder.mkdir(parents=True, exist_ok=True)
        count("emu_pch_build")
        _atomic_compile([CXX, *flags, f"-I{EMU_DIR}", "-x", "c++-header", str(EMU_DIR / "cuda_emu.h")], gch,
                        "plugins/gate/emu/cuda_emu.h (precompiled)")
    return [f"-I{folder}", "-Winvalid-pch"]


_LOADED: dict[Path, ctypes.CDLL] = {}
# emu_launch keeps its state in the library's globals, and forking from two
# threads at once helps nobody: one launch at a time per process.
_LAUNCH_LOCK = threading.Lock()


def build(source: str, sigs: Mapping[str, KernelSignature], name: str = "kernel.cu",
          cache_dir: Path | None = None, defines: Sequence[str] = ()) -> tuple[Path, Translated]:
    """The shared library for `source`, compiled once per content hash."""
    cache_dir = Path(cache_dir) if cache_dir is not None else kind_dir("emu_build")  # plugins/cache/store.py
    cache_dir.mkdir(parents=True, exist_ok=True)
    defines = tuple(defines)
    tr = translate(source, name)
    text = tr.text + _entry_wrappers(sigs)
    runtime = _runtime_object(cache_dir, defines)
    key = _digest(text, runtime.name, KERNEL_OPT, " ".join(KERNEL_FLAGS), " ".join(RACE_FLAGS), " ".join(CXXFLAGS),
                  " ".join(defines))
    lib = cache_dir / f"k-{key}.so"
    count("hit:emu_build" if lib.exists() else "emu_build")
    if not lib.exists():
        src = cache_dir / f"k-{key}.cpp"
        fd, tmp = tempfile.mkstemp(prefix=src.name + ".", suffix=".tmp", dir=cache_dir)
        with os.fdopen(fd, "w") as fh:
            fh.write(text)
        os.replace(tmp, src)
        obj = cache_dir / f"k-{key}.o"
        flags = [*CXXFLAGS, KERNEL_OPT, *KERNEL_FLAGS, *RACE_FLAGS, *defines]
        _atomic_compile([CXX, *flags, *_prelude_pch(cache_dir, runtime, flags), f"-I{EMU_DIR}",
                         "-include", "cuda_emu.h", "-c", "-x", "c++", str(src)], obj, name)
        # linked without -fsanitize: the runtime's __tsan_* hooks are the whole race checker
        _atomic_compile([CXX, "-shared", "-Wl,-z,now", str(obj), str(runtime)], lib, name)
        obj.unlink(missing_ok=True)
    return lib, tr


@dataclass(frozen=True)
class LaunchStats:
    """What one emulated launch cost: for the emulator's own speed checks, never a GPU number."""

    kernel: str
    threads: int
    emulated_s: float  # inside the child, from the first block to the last
    wall_s: float  # fork, run and wait, seen from the parent
    fiber_entries: int  # times a fiber was resumed (once at start, once per sync point passed)


class _Status(ctypes.Structure):
    _fields_ = [
        ("code", ctypes.c_int32), ("signo", ctypes.c_int32), ("si_code", ctypes.c_int32),
        ("region", ctypes.c_int32), ("addr", ctypes.c_uint64), ("in_thread", ctypes.c_int32),
        ("tid", ctypes.c_uint32 * 3), ("bid", ctypes.c_uint32 * 3), ("pad", ctypes.c_uint32),
        ("seconds", ctypes.c_double), ("switches", ctypes.c_uint64), ("msg", ctypes.c_char * 1024),
        ("race_pc", ctypes.c_uint64 * 2),
    ]


def _load(lib: Path) -> ctypes.CDLL:
    if lib not in _LOADED:
        dll = ctypes.CDLL(str(lib))
        dll.emu_launch.restype = ctypes.c_int
        dll.emu_launch.argtypes = [
            ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_ulonglong,
            ctypes.c_int, ctypes.c_ulonglong, ctypes.c_double, ctypes.c_void_p,
        ]
        _LOADED[lib] = dll
    return _LOADED[lib]


# --------------------------------------------------------------------------- guarded shared memory

_libc = ctypes.CDLL(None, use_errno=True)
_libc.mmap.restype = ctypes.c_void_p
_libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
_libc.mprotect.restype = ctypes.c_int
_libc.mprotect.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
_libc.munmap.restype = ctypes.c_int
_libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
_PAGE = mmap.PAGESIZE
_PROT_NONE = 0
_MAP_FAILED = ctypes.c_void_p(-1).value


def _map_shared(nbytes: int) -> int:
    addr = _libc.mmap(None, nbytes, mmap.PROT_READ | mmap.PROT_WRITE, mmap.MAP_SHARED | mmap.MAP_ANONYMOUS, -1, 0)
    if addr in (None, _MAP_FAILED):
        raise EmuError(f"emulator: cannot map {nbytes} bytes of shared memory: {os.strerror(ctypes.get_errno())}")
    return addr


def _protect(addr: int, nbytes: int, prot: int) -> None:
    if nbytes and _libc.mprotect(addr, nbytes, prot) != 0:
        raise EmuError(f"emulator: mprotect failed: {os.strerror(ctypes.get_errno())}")


class _Guarded:
    """One buffer in shared memory: [guard][slack][data][<16 B slack][guard].

    The data ends where the tail guard page begins (rounded to 16 bytes, the
    alignment float4 needs), so a read or write past the end faults. Slack bytes
    hold a canary, checked after every launch, which catches writes there.
    """

    def __init__(self, name: str, arr: np.ndarray):
        self.name = name
        self.dtype = arr.dtype
        self.count = arr.size
        self.nbytes = arr.nbytes
        padded = -(-self.nbytes // 16) * 16
        self.data_pages = -(-padded // _PAGE)
        self.total = (self.data_pages + 2) * _PAGE
        self.base = _map_shared(self.total)
        self.lo = self.base + _PAGE
        self.hi = self.lo + self.data_pages * _PAGE
        self.start = self.hi - padded
        _protect(self.base, _PAGE, _PROT_NONE)
        _protect(self.hi, _PAGE, _PROT_NONE)
        ctypes.memset(self.lo, _CANARY, self.data_pages * _PAGE)
        if self.nbytes:
            ctypes.memmove(self.start, np.ascontiguousarray(arr).ctypes.data, self.nbytes)
        self.readonly = False

    def set_readonly(self, ro: bool) -> None:
        if ro != self.readonly and self.data_pages:
            _protect(self.lo, self.data_pages * _PAGE, mmap.PROT_READ if ro else mmap.PROT_READ | mmap.PROT_WRITE)
            self.readonly = ro

    def slack_written(self) -> str:
        head = ctypes.string_at(self.lo, self.start - self.lo)
        tail = ctypes.string_at(self.start + self.nbytes, self.hi - self.start - self.nbytes)
        if head.strip(bytes([_CANARY])):
            return "before the start"
        if tail.strip(bytes([_CANARY])):
            return "past the end"
        return ""

    def read(self) -> np.ndarray:
        if not self.nbytes:
            return np.zeros(0, self.dtype)
        return np.frombuffer((ctypes.c_char * self.nbytes).from_address(self.start), dtype=self.dtype).copy()

    def describe_fault(self, addr: int, was_readonly: bool) -> str | None:
        if self.base <= addr < self.lo:
            return f"before the start of buffer '{self.name}' ({self.count} x {self.dtype})"
        if self.hi <= addr < self.hi + _PAGE:
            index = (addr - self.start) // max(self.dtype.itemsize, 1)
            return f"past the end of buffer '{self.name}' (element {index}; it has {self.count} x {self.dtype})"
        if self.lo <= addr < self.hi and was_readonly:
            index = (addr - self.start) // max(self.dtype.itemsize, 1)
            return f"a write to buffer '{self.name}' (element {index}), which the kernel declares const"
        return None

    def free(self) -> None:
        _libc.munmap(self.base, self.total)


# --------------------------------------------------------------------------- running

_SCALAR_CTYPES: dict[str, type] = {
    "float32": ctypes.c_float, "float64": ctypes.c_double, "int32": ctypes.c_int32, "uint32": ctypes.c_uint32,
    "int64": ctypes.c_int64, "uint64": ctypes.c_uint64, "uint8": ctypes.c_uint8,
}


def _scalar(kernel: str, arg: ScalarArg) -> ctypes._SimpleCData:
    dtype = None if arg.ctype in POINTER_ONLY_CTYPES else CTYPE_DTYPES.get(arg.ctype)
    if dtype is None:
        raise EmuLaunchError(f"kernel {kernel}: scalar {arg.name} has C type {arg.ctype!r}, which the emulator does not pass")
    value = arg.value
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise EmuLaunchError(f"kernel {kernel}: scalar {arg.name} = {value!r} is not a number")
    if np.dtype(dtype).kind in "iu":
        if isinstance(value, (float, np.floating)) and not float(value).is_integer():
            raise EmuLaunchError(f"kernel {kernel}: scalar {arg.name} is {arg.ctype} but its value is {value!r}; give an integer")
        info = np.iinfo(dtype)
        if not info.min <= int(value) <= info.max:
            raise EmuLaunchError(f"kernel {kernel}: scalar {arg.name} = {value} does not fit {arg.ctype}")
        return _SCALAR_CTYPES[dtype](int(value))
    return _SCALAR_CTYPES[dtype](float(value))


_SIGNAMES = {signal.SIGSEGV: "SIGSEGV", signal.SIGBUS: "SIGBUS", signal.SIGFPE: "SIGFPE",
             signal.SIGILL: "SIGILL", signal.SIGABRT: "SIGABRT", signal.SIGTRAP: "SIGTRAP"}


_SHARED_REGIONS = frozenset({2, 3, 4, 5, 6})  # emu_status.region values inside a block's shared memory


def _where(st: _Status) -> str:
    if not st.in_thread:
        return ""
    return f" (block ({st.bid[0]},{st.bid[1]},{st.bid[2]}), thread ({st.tid[0]},{st.tid[1]},{st.tid[2]}))"


def _source_line(lib_path: Path, offset: int) -> str:
    """file:line of a code offset in the kernel's library: the innermost frame outside the prelude."""
    if not offset or shutil.which("addr2line") is None:
        return ""
    proc = subprocess.run(["addr2line", "-i", "-e", str(lib_path), f"{offset - 1:#x}"],
                          capture_output=True, text=True, errors="replace")
    frames = [ln.split(" (discriminator")[0].strip() for ln in proc.stdout.splitlines() if ln.strip() and not ln.startswith("??")]
    outside = [f for f in frames if not f.startswith(str(EMU_DIR))]
    line = (outside or frames or [""])[0]
    return line.removeprefix(str(REPO_ROOT) + os.sep)


def _race_lines(lib_path: Path, st: _Status) -> str:
    now, before = (_source_line(lib_path, int(pc)) for pc in st.race_pc)
    parts = [f"the later access at {now}" if now else "", f"the earlier at {before}" if before else ""]
    parts = [p for p in parts if p]
    return f" ({'; '.join(parts)})" if parts else ""


def _launch_error(kernel: str, idx: int, launch: ResolvedLaunch, rc: int, st: _Status,
                  bufs: Mapping[str, _Guarded], readonly: set[str], timeout_s: float, lib_path: Path) -> EmuError:
    label = f"kernel {kernel} (launch {idx})"
    msg = st.msg.decode(errors="replace")
    if st.code == 1:
        if st.region == 7:  # a write into the alignment slack after a __shared__ array, seen at block exit
            return EmuOutOfBounds(f"out-of-bounds shared memory access in {label}: {msg}")
        return EmuLaunchError(f"{label}: {msg}")
    if st.code == 4:
        return EmuRace(f"{label}: {msg}{_race_lines(lib_path, st)}")
    if st.code == 3:
        return EmuTimeout(
            f"{label} did not finish within {timeout_s:g} s{_where(st)}: an endless loop, or a spin-wait on "
            "another block (the emulator runs blocks one at a time)"
        )
    if st.code == 2:
        sig = _SIGNAMES.get(st.signo, f"signal {st.signo}")
        if st.signo in (signal.SIGSEGV, signal.SIGBUS):
            what = None
            for b in bufs.values():
                what = b.describe_fault(st.addr, b.name in readonly)
                if what:
                    break
            kind = "access"
            if what is None:
                array = f"__shared__ {msg}" if msg else "a __shared__ array"
                what = {
                    1: "a fiber stack overflow (a thread's locals exceed 64 KiB)",
                    2: f"past the end of dynamic shared memory ({launch.shared_bytes} bytes in the launch plan)",
                    3: f"past the end of {array}, the last of the block's static shared arrays",
                    4: ("the shared memory of a block of the cluster that has already exited (through "
                        "map_shared_rank; a cluster.sync() before exit keeps it alive until every reader is done)"),
                    5: f"before the start of {array}, the first of the block's static shared arrays",
                    6: f"before the start of dynamic shared memory ({launch.shared_bytes} bytes in the launch plan)",
                }.get(st.region, f"address {st.addr:#x}, which is in no buffer")
                if st.region in _SHARED_REGIONS:
                    kind = "shared memory access"
            return EmuOutOfBounds(f"out-of-bounds {kind} in {label} ({sig}): {what}{_where(st)}")
        if st.signo == signal.SIGFPE:
            return EmuLaunchError(f"{label}: arithmetic fault ({sig}), e.g. an integer division by zero{_where(st)}")
        if st.signo == signal.SIGABRT:
            return EmuLaunchError(f"{label}: abort() ({sig}), e.g. a failed assert{_where(st)}")
        return EmuLaunchError(f"{label}: the kernel trapped ({sig}){_where(st)}")
    if rc == -1:
        return EmuError(f"{label}: {msg}")
    if os.WIFSIGNALED(rc):
        return EmuError(f"{label}: the emulator's child process died from signal {os.WTERMSIG(rc)} without a report (out of memory?)")
    return EmuError(f"{label}: the emulator's child process ended with status {rc} without a report")


def _check_launch(launch: ResolvedLaunch, idx: int, sigs: Mapping[str, KernelSignature],
                  bufs: Mapping[str, _Guarded]) -> KernelSignature:
    label = f"launch {idx} ({launch.kernel})"
    sig = sigs.get(launch.kernel)
    if sig is None:
        raise EmuLaunchError(f"{label}: the source defines no kernel {launch.kernel!r}; it has {sorted(sigs)}")
    if len(launch.args) != len(sig.params):
        raise EmuLaunchError(f"{label}: {len(launch.args)} arguments for {len(sig.params)} parameters")
    for dim, (g, b, lim) in enumerate(zip(launch.grid, launch.block, MAX_BLOCK)):
        if g < 1 or b < 1:
            raise EmuLaunchError(f"{label}: grid {launch.grid} / block {launch.block} has an empty dimension")
        if b > lim:
            raise EmuLaunchError(f"{label}: block dimension {'xyz'[dim]} = {b} exceeds {lim}")
    if launch.threads_per_block > MAX_THREADS:
        raise EmuLaunchError(f"{label}: {launch.threads_per_block} threads per block exceed {MAX_THREADS}")
    if not 0 <= launch.shared_bytes <= MAX_DYNAMIC_SHARED:
        raise EmuLaunchError(f"{label}: shared_bytes = {launch.shared_bytes} is outside 0..{MAX_DYNAMIC_SHARED}")
    for p, a in zip(sig.params, launch.args):
        if p.pointer != isinstance(a, BufferArg):
            raise EmuLaunchError(f"{label}: parameter {p.name} is {'a pointer' if p.pointer else 'a scalar'} but gets {a!r}")
        if isinstance(a, BufferArg):
            if a.name not in bufs:
                raise EmuLaunchError(f"{label}: parameter {p.name} names buffer {a.name!r}, which was not given; have {sorted(bufs)}")
            if p.dtype != dtype_name(bufs[a.name].dtype):
                raise EmuLaunchError(f"{label}: parameter {p.name} is {p.ctype}* but buffer {a.name!r} holds {dtype_name(bufs[a.name].dtype)}")
    return sig


def run_source(source: str, launches: Sequence[ResolvedLaunch], buffers: Mapping[str, np.ndarray], *,
               signatures: Mapping[str, KernelSignature] | None = None, name: str = "kernel.cu",
               sm_count: int = 4, cache_dir: Path | None = None, timeout_s: float = DEFAULT_TIMEOUT_S,
               defines: Sequence[str] = (), stats: list[LaunchStats] | None = None) -> dict[str, np.ndarray]:
    """Run `launches` in order on copies of `buffers`; return every buffer after the last launch.

    Signatures default to `kernel_signatures(source)`. The caller's arrays are
    never modified. `sm_count` bounds cooperative grids (2048 threads per SM).
    `defines` go to g++ (e.g. -DEMU_USE_UCONTEXT selects the portable switch);
    `stats`, when given, receives one LaunchStats per launch.
    """
    sigs = dict(signatures) if signatures is not None else kernel_signatures(source)
    lib_path, tr = build(source, sigs, name, cache_dir, defines)
    lib = _load(lib_path)
    status_addr = _map_shared(_PAGE)
    st = _Status.from_address(status_addr)
    bufs: dict[str, _Guarded] = {}
    try:
        for bname, arr in buffers.items():
            bufs[bname] = _Guarded(bname, np.asarray(arr))
        for idx, launch in enumerate(launches):
            sig = _check_launch(launch, idx, sigs, bufs)
            if launch.cooperative and tr.file_scope_shared:
                raise EmuLaunchError(
                    f"launch {idx} ({launch.kernel}): a cooperative launch runs all blocks at once, but "
                    f"{name} declares file-scope __shared__ {list(tr.file_scope_shared)}; declare them inside the kernel"
                )
            argv = (ctypes.c_void_p * max(len(sig.params), 1))()
            keep: list[ctypes._SimpleCData] = []
            writable = {a.name for p, a in zip(sig.params, launch.args) if isinstance(a, BufferArg) and not p.const}
            readonly = {a.name for p, a in zip(sig.params, launch.args) if isinstance(a, BufferArg) and p.const} - writable
            for i, (p, a) in enumerate(zip(sig.params, launch.args)):
                if isinstance(a, BufferArg):
                    argv[i] = bufs[a.name].start
                else:
                    keep.append(_scalar(launch.kernel, a))
                    argv[i] = ctypes.addressof(keep[-1])
            entry = ctypes.cast(getattr(lib, f"emu_entry_{launch.kernel}"), ctypes.c_void_p).value
            grid = (ctypes.c_uint * 3)(*launch.grid)
            block = (ctypes.c_uint * 3)(*launch.block)
            cluster = (ctypes.c_uint * 3)(*(sig.cluster or (1, 1, 1)))
            for bname in readonly:
                bufs[bname].set_readonly(True)
            t0 = time.perf_counter()
            try:
                with _LAUNCH_LOCK:
                    rc = lib.emu_launch(
                        entry, ctypes.addressof(argv), ctypes.addressof(grid), ctypes.addressof(block),
                        ctypes.addressof(cluster), launch.shared_bytes, int(launch.cooperative), sm_count * THREADS_PER_SM,
                        float(timeout_s), status_addr,
                    )
            finally:
                for bname in readonly:
                    bufs[bname].set_readonly(False)
            wall = time.perf_counter() - t0
            if rc != 0:
                raise _launch_error(launch.kernel, idx, launch, rc, st, bufs, readonly, timeout_s, lib_path)
            for b in bufs.values():
                side = b.slack_written()
                if side:
                    raise EmuOutOfBounds(f"out-of-bounds write in kernel {launch.kernel} (launch {idx}): bytes {side} of buffer '{b.name}' changed")
            log.debug("%s: %s grid %s block %s: %.3f s emulated, %.3f s wall, %d fiber entries",
                      name, launch.kernel, launch.grid, launch.block, st.seconds, wall, st.switches)
            if stats is not None:
                stats.append(LaunchStats(launch.kernel, launch.blocks * launch.threads_per_block, st.seconds, wall, st.switches))
        return {bname: b.read() for bname, b in bufs.items()}
    finally:
        for b in bufs.values():
            b.free()
        _libc.munmap(status_addr, _PAGE)


class EmuExecutor:
    """The gate's Executor on the CPU: a candidate's launch plan through the emulator."""

    name = "cpu-emulator"

    def __init__(self, sm_count: int = 4, cache_dir: Path | None = None, timeout_s: float = DEFAULT_TIMEOUT_S):
        self.sm_count = sm_count
        self.cache_dir = cache_dir
        self.timeout_s = timeout_s

    def run(self, fam: Family, cand: Candidate, shape: Mapping[str, Number], buffers: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        """Run cand's launch plan (fam.resolve(cand, shape, self.sm_count)) in order on copies of the host buffers; return all buffers after the last launch."""
        launches = fam.resolve(cand, shape, self.sm_count)
        try:
            name = str(cand.path.relative_to(REPO_ROOT))
        except ValueError:
            name = str(cand.path)
        return run_source(cand.source, launches, buffers, signatures=cand.signatures, name=name,
                          sm_count=self.sm_count, cache_dir=self.cache_dir, timeout_s=self.timeout_s)
