"""The CuPy executor: loads the cubin CI checked and runs candidates' launch plans on a GPU.

Why: the gate, the timer and the one-launch profile all need the same thing
done the same way: the binary the CPU checks compiled and inspected
(plugins.family.compile.compile_source for this device's sm_XY: CuPy compiling
the source itself puts its own CCCL headers first, and rope_cache's evict_last
rewrite then compiles to other SASS), the same resolved launch plan, and scalar
arguments passed with exactly the C types the kernels declare. Each cubin's
sha256 goes into the key. CuPy is imported lazily, so this module loads on
machines with no GPU.
"""
from __future__ import annotations

import hashlib
import logging
import os
import re
import tempfile
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np

from plugins.atomicio import write_bytes_atomic
from plugins.family.compile import NVRTC_OPTIONS, compile_source, first_error, include_options
from plugins.family.cuda_source import CTYPE_DTYPES, POINTER_ONLY_CTYPES
from plugins.family.dtypes import device_view, host_view
from plugins.family.manifest import Candidate, Family
from plugins.family.plan import BufferArg, Number, ResolvedLaunch, ScalarArg

log = logging.getLogger("sparktrace.device")

NO_DEVICE = "no CUDA device"
# Options CuPy's compiler (cupy/cuda/compiler.py) appends to every RawModule it
# builds with NVRTC (CuPy 14.2: -ftz=true in _compile_with_cache_cuda, and
# --device-as-default-execution-space when jitify is off), and any it appends
# for cooperative modules (CuPy 14.2: none; it only launches them with
# cuLaunchCooperativeKernel). `cupy_added_options` reads which of them the
# installed CuPy really adds, so the key says what was compiled.
CUPY_MAYBE_ADDED = ("-ftz=true", "--device-as-default-execution-space")
CUPY_MAYBE_ADDED_COOPERATIVE = ("--device-c", "-dc", "-rdc=true", "--relocatable-device-code=true")


CUBIN_DIR = Path(tempfile.gettempdir()) / "sparktrace-cubins"  # <sha256>.cubin: what CuPy loads, by content


@dataclass(frozen=True)
class Cubin:
    """The binary a candidate runs as: compile_source's cubin for this device, and where it was loaded from."""

    arch: str
    sha256: str
    bytes: int
    path: Path

    def as_record(self) -> dict:
        return {"arch": self.arch, "cubin_sha256": self.sha256, "cubin_bytes": self.bytes,
                "compiled_by": f"plugins.family.compile.compile_source(source, {self.arch!r}, name), loaded as that cubin"}


def compute_capability(cp: Any, props: Mapping[str, Any], device_index: int = 0) -> str:
    """"9.0": from the properties, else from CuPy's Device.compute_capability ("90")."""
    if "major" in props and "minor" in props:
        return f"{props['major']}.{props['minor']}"
    cc = str(cp.cuda.Device(device_index).compute_capability)
    return f"{cc[:-1]}.{cc[-1]}"


def device_arch(compute_capability: str) -> str:
    """"9.0" -> "sm_90": the architecture compile_source builds for this device."""
    return "sm_" + str(compute_capability).replace(".", "")


def checked_cubin(source: str, arch: str, name: str, where: str, cubin_dir: Path | None = None) -> Cubin:
    """compile_source's cubin for `arch`, written to `cubin_dir/<sha256>.cubin` and read back:
    a file whose bytes are not that cubin is one clear error, never run."""
    res = compile_source(source, arch, name)
    if not res.ok or not res.cubin:
        line, msg = first_error(res.log)
        raise RuntimeError(f"{where}: NVRTC (plugins.family.compile.compile_source, {arch}) could not compile it"
                           f"{f' (line {line})' if line else ''}: {msg}")
    sha = hashlib.sha256(res.cubin).hexdigest()
    path = Path(cubin_dir if cubin_dir is not None else CUBIN_DIR) / f"{sha}.cubin"
    if not path.is_file() or path.stat().st_size != len(res.cubin):
        write_bytes_atomic(path, res.cubin)
    got = hashlib.sha256(path.read_bytes()).hexdigest()
    if got != sha:
        raise RuntimeError(f"{where}: the cubin file {path} has sha256 {got}, but compile_source built {sha} for {arch}: "
                           "what would run is not the binary CI checked; delete the file and run again")
    return Cubin(arch, sha, len(res.cubin), path)


def ensure_cuda_headers(cuda_path: str | None) -> None:
    """Where plugins.family.compile finds no CUDA headers, point it at the toolkit CuPy found,
    so compile_source and compile_options use the same -I (cooperative_groups needs them)."""
    if not include_options() and cuda_path and (Path(cuda_path) / "include" / "cooperative_groups.h").is_file():
        os.environ.setdefault("CUDA_PATH", str(cuda_path))


class DeviceUnavailable(RuntimeError):
    """No usable GPU: the message says which of cupy / device / driver is missing."""


@dataclass(frozen=True)
class DeviceStatus:
    available: bool
    reason: str  # "" when available; else starts with "no CUDA device: "
    kind: str  # "ok" | "cupy" | "no-device" | "driver"


def import_cupy() -> Any:
    """Import cupy with its import-time warnings recorded, not raised (pytest turns warnings into errors)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        import cupy  # lazy: only GPU machines have it
    for w in caught:
        log.info("cupy import warning: %s", w.message)
    return cupy


def probe(device_index: int = 0, importer: Any = import_cupy) -> DeviceStatus:
    """Whether a CUDA device can be used, and precisely why not."""
    try:
        cupy = importer()
    except Exception as exc:
        return DeviceStatus(False, f"{NO_DEVICE}: cupy is not importable ({type(exc).__name__}: {exc})", "cupy")
    try:
        count = int(cupy.cuda.runtime.getDeviceCount())
    except Exception as exc:
        text = f"{type(exc).__name__}: {exc}"
        if "NoDevice" in text or "no CUDA-capable device" in text:
            return DeviceStatus(False, f"{NO_DEVICE}: the CUDA runtime finds none ({text})", "no-device")
        return DeviceStatus(False, f"{NO_DEVICE}: CUDA driver error ({text})", "driver")
    if count < 1:
        return DeviceStatus(False, f"{NO_DEVICE}: the CUDA runtime reports 0 devices", "no-device")
    if device_index >= count:
        return DeviceStatus(False, f"{NO_DEVICE}: device {device_index} asked for, {count} present", "no-device")
    try:
        cupy.cuda.runtime.getDeviceProperties(device_index)
        cupy.cuda.Device(device_index).synchronize()
    except Exception as exc:
        return DeviceStatus(False, f"{NO_DEVICE}: CUDA driver error on device {device_index} ({type(exc).__name__}: {exc})", "driver")
    return DeviceStatus(True, "", "ok")


def scalar(arg: ScalarArg) -> np.generic:
    """A by-value argument as the NumPy scalar of the kernel's declared C type."""
    dtype = None if arg.ctype in POINTER_ONLY_CTYPES else CTYPE_DTYPES.get(arg.ctype)
    if dtype is None:
        raise TypeError(f"argument {arg.name!r}: C type {arg.ctype!r} has no NumPy equivalent; use one of {sorted(set(CTYPE_DTYPES) - POINTER_ONLY_CTYPES)}")
    dt = np.dtype(dtype)
    value = arg.value
    if dt.kind in "iu":
        if isinstance(value, float) and not value.is_integer():
            raise TypeError(f"argument {arg.name!r} is {arg.ctype} but its value {value!r} is not an integer")
        info = np.iinfo(dt)
        if not info.min <= int(value) <= info.max:
            raise OverflowError(f"argument {arg.name!r} = {value} does not fit {arg.ctype}")
        return dt.type(int(value))
    return dt.type(value)


def kernel_args(launch: ResolvedLaunch, buffers: Mapping[str, Any]) -> tuple:
    """The argument tuple for one launch: device buffers by name, scalars typed."""
    out = []
    for a in launch.args:
        if isinstance(a, BufferArg):
            if a.name not in buffers:
                raise KeyError(f"launch of {launch.kernel} names buffer {a.name!r}, which was not allocated")
            out.append(buffers[a.name])
        else:
            out.append(scalar(a))
    return tuple(out)


def cupy_added_options(cupy: Any) -> list[str]:
    """What the installed CuPy's compiler source appends to our options (read, not assumed)."""
    import inspect

    try:
        src = inspect.getsource(cupy.cuda.compiler)
    except Exception as exc:
        return [f"unavailable: could not read cupy.cuda.compiler ({type(exc).__name__}: {exc})"]
    appended = set(re.findall(r"options\s*\+=\s*\(([^)]*)\)", src))
    literals = {o for group in appended for o in re.findall(r"'([^']+)'", group)}
    found = [f"{o} (appended by CuPy)" for o in CUPY_MAYBE_ADDED if o in literals]
    coop = _cooperative_block(src)
    found += [f"{o} (appended by CuPy, cooperative plans only)" for o in CUPY_MAYBE_ADDED_COOPERATIVE if f"'{o}'" in coop]
    try:  # the -arch CuPy picks for this device: needs a device, so it is read, never guessed
        found.append(f"{cupy.cuda.compiler._get_arch_for_options_for_nvrtc()[0]} (appended by CuPy for this device)")
    except Exception:
        pass
    return found


def full_compile_options(cupy: Any, options: Sequence[str]) -> dict:
    """Every option NVRTC receives for our RawModules, as CuPy 14.2 assembles them.

    RawModule compiles through cupy._core.core.compile_with_cache, which calls
    `assemble_cupy_compiler_options` (CuPy 14.2, cupy/_core/core.pyx): it puts
    -I for CuPy's bundled CCCL (cub, thrust, libcudacxx) first, and appends -I
    for CuPy's own headers and for the CUDA headers cuda.pathfinder finds.
    That function is called here, so the -I paths are the ones this machine
    uses. cupy/cuda/compiler.py then appends -ftz=true, the -arch for this
    device and --device-as-default-execution-space (read from its source by
    `cupy_added_options`), and --pch only when CUPY_NVRTC_USE_PCH is set.
    """
    ours = tuple(options)
    rec: dict = {"ours": list(ours)}
    try:
        assembled = list(cupy._core.core.assemble_cupy_compiler_options(ours))
        rec["assembled_by"] = "cupy._core.core.assemble_cupy_compiler_options (called on this machine)"
    except Exception as exc:
        assembled = list(ours)
        rec["assembled_by"] = (f"unavailable: CuPy's option assembly could not be called ({type(exc).__name__}: {exc}); "
                               "the -I paths CuPy adds are missing from this list")
    added = cupy_added_options(cupy)
    plain = [a.split(" (")[0] for a in added if not a.startswith("unavailable") and "cooperative plans only" not in a]
    order = ["-ftz=true", *[a for a in plain if a.startswith("-arch")], "--device-as-default-execution-space"]
    tail = [o for o in order if o in plain]
    try:
        comp = cupy.cuda.compiler
        if getattr(comp, "_use_pch", False) and tuple(comp._get_nvrtc_version()) >= (12, 8):
            tail.append("--pch")
    except Exception:
        pass
    rec["cupy_added"] = added
    rec["options"] = assembled + tail
    return rec


def _cooperative_block(src: str) -> str:
    """The lines under `if enable_cooperative_groups:` in CuPy's compiler source (where
    options for cooperative modules would be added); "" when there is none."""
    out: list[str] = []
    lines = src.splitlines()
    for i, line in enumerate(lines):
        if re.match(r"\s*if enable_cooperative_groups\s*:", line):
            indent = len(line) - len(line.lstrip())
            for body in lines[i + 1:]:
                if body.strip() and len(body) - len(body.lstrip()) <= indent:
                    break
                out.append(body)
    return "\n".join(out)


def compile_options(cuda_path: str | None = None) -> tuple[str, ...]:
    """The options handed to CuPy: exactly the CPU compile stage's (plugins.family.compile).

    Where that stage finds no CUDA headers (no CUDA_PATH, CUDA_HOME or
    /usr/local/cuda), the toolkit CuPy itself found (`cuda_path`) supplies
    them: without them a cooperative_groups include fails to compile.
    """
    inc = tuple(include_options())
    if not inc and cuda_path and (Path(cuda_path) / "include" / "cooperative_groups.h").is_file():
        root = Path(cuda_path) / "include"
        inc = (f"-I{root}",) + ((f"-I{root / 'cccl'}",) if (root / "cccl").is_dir() else ())
    return tuple(NVRTC_OPTIONS) + inc


def _cupy_cuda_path(cupy: Any) -> str | None:
    try:
        return cupy.cuda.get_cuda_path()
    except Exception:
        return None


# The gate's red zones: each gate buffer sits between two canary-filled guards of at least
# GUARD_MIN_BYTES (and at least its own size, up to GUARD_MAX_BYTES), checked after the run.
# Why: a wrong variant that writes out of bounds (shade_*'s sorted_inclusive does, by design)
# must be rejected with the buffer it overran, not kill the process's CUDA context and every
# family after it, as it did on the first H200 pass.
GUARD_MIN_BYTES = 64 * 1024
GUARD_MAX_BYTES = 16 * 1024 * 1024
GUARD_ALIGN = 4096  # the view keeps the allocation's alignment (float4, uint4 and TMA-sized loads)
CANARY = 0xA5  # not a poison byte (0xFF), not zero


class OutOfBounds(RuntimeError):
    """A candidate wrote into a gate buffer's guard: rejected, with the buffer and the offset."""


def guard_bytes(nbytes: int) -> int:
    """The guard on each side of an `nbytes` buffer: a multiple of GUARD_ALIGN."""
    want = min(max(GUARD_MIN_BYTES, nbytes), GUARD_MAX_BYTES)
    return -(-want // GUARD_ALIGN) * GUARD_ALIGN


@dataclass(frozen=True)
class GuardedBuffer:
    """One gate buffer on the device: raw = [guard][data][guard], `view` is the data."""

    name: str
    raw: Any  # uint8 device array
    view: Any
    guard: int
    nbytes: int

    @classmethod
    def place(cls, xp: Any, name: str, host: np.ndarray) -> "GuardedBuffer":
        arr = device_view(host)
        nbytes = int(arr.nbytes)
        g = guard_bytes(nbytes)
        raw = xp.empty(2 * g + nbytes, dtype=xp.uint8)
        raw.data.memset_async(CANARY, raw.nbytes)  # a memset and a copy, never a CuPy-compiled kernel
        view = raw[g:g + nbytes].view(arr.dtype)
        if nbytes:
            view.data.copy_from_device_async(xp.asarray(arr).data, nbytes)
        return cls(name, raw, view, g, nbytes)

    def overrun(self, xp: Any) -> str:
        """"" when both guards still hold the canary; else which side changed, how many bytes and where."""
        sides = (("before the start", xp.asnumpy(self.raw[: self.guard]), True),
                 ("past the end", xp.asnumpy(self.raw[self.guard + self.nbytes:]), False))
        for where, guard, before in sides:
            hit = np.flatnonzero(np.asarray(guard) != CANARY)
            if hit.size:
                span = (f"bytes {self.guard - hit[-1]} to {self.guard - hit[0]} before its start" if before
                        else f"bytes {hit[0]} to {hit[-1]} past its end (byte 0 is the first after it)")
                return f"wrote {where} of buffer '{self.name}' ({self.nbytes} bytes): {hit.size} guard bytes changed, {span}"
        return ""


class CupyExecutor:
    """plugins.gate.check.Executor on a CUDA device through CuPy."""

    name = "cupy"

    def __init__(self, device_index: int = 0):
        status = probe(device_index)
        if not status.available:
            raise DeviceUnavailable(status.reason)
        self.cp = import_cupy()
        self.device_index = device_index
        self.cp.cuda.Device(device_index).use()
        props = self.cp.cuda.runtime.getDeviceProperties(device_index)
        self.properties = props
        self.sm_count = int(self._attribute(props, "multiProcessorCount", "cudaDevAttrMultiProcessorCount"))
        self.l2_bytes = int(self._attribute(props, "l2CacheSize", "cudaDevAttrL2CacheSize", default=0) or 0)
        name = props.get("name", b"")
        self.device_name = name.decode(errors="replace").rstrip("\x00") if isinstance(name, bytes) else str(name)
        self.compute_capability = compute_capability(self.cp, props, device_index)
        ensure_cuda_headers(_cupy_cuda_path(self.cp))
        self.options = compile_options(_cupy_cuda_path(self.cp))
        self.arch = device_arch(self.compute_capability)
        self.cubin_dir = CUBIN_DIR
        self.cubins: dict[str, Cubin] = {}  # by source: what the GPU loaded
        self._modules: dict[tuple[str, bool], Any] = {}
        self._kernels: dict[tuple[str, str, bool], Any] = {}

    def _attribute(self, props: Mapping[str, Any], key: str, attr: str, default: Any = None) -> Any:
        """A device property, read through cudaDeviceGetAttribute when this CuPy's
        property dict lacks it (CUDA 13 dropped several cudaDeviceProp fields)."""
        if key in props:
            return props[key]
        try:
            rt = self.cp.cuda.runtime
            return rt.deviceGetAttribute(getattr(rt, attr), self.device_index)
        except Exception:
            if default is not None:
                return default
            raise

    # ---------------------------------------------------------------- compile

    def cubin(self, cand: Candidate) -> Cubin:
        """The cubin this candidate runs as (compiled by compile_source once per source)."""
        if cand.source not in self.cubins:
            self.cubins[cand.source] = checked_cubin(cand.source, self.arch, cand.path.name, str(cand.path), self.cubin_dir)
        return self.cubins[cand.source]

    def cubin_sha256(self, cand: Candidate) -> str:
        return self.cubin(cand).sha256

    def kernel(self, cand: Candidate, name: str, cooperative: bool = False) -> Any:
        """The entry point from the loaded cubin; each (source, cooperative) is loaded once.
        CuPy adds nothing for cooperative modules but the cooperative launch."""
        key = (cand.source, name, cooperative)
        if key not in self._kernels:
            mkey = (cand.source, cooperative)  # one module per source: a plan's k0, k1, k2 share one cubin
            if mkey not in self._modules:
                self._modules[mkey] = self.cp.RawModule(path=str(self.cubin(cand).path), enable_cooperative_groups=cooperative)
            module = self._modules[mkey]
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                self._kernels[key] = module.get_function(name)
            for w in caught:
                log.info("%s/%s compile warning: %s", cand.path, name, w.message)
        return self._kernels[key]

    def compile(self, cand: Candidate) -> None:
        """Compile every entry point a candidate's plan launches (errors name the candidate)."""
        for launch in cand.launches:
            try:
                self.kernel(cand, launch.kernel, launch.cooperative)
            except Exception as exc:
                raise RuntimeError(f"{cand.path}: CuPy/NVRTC could not compile {launch.kernel}: {type(exc).__name__}: {exc}") from exc

    # ---------------------------------------------------------------- launch

    def bind(self, cand: Candidate, plan: Sequence[ResolvedLaunch], dev: Mapping[str, Any]) -> tuple:
        """The plan with its kernels looked up and its arguments converted once, so a
        timed loop spends no host time on them between launches."""
        return tuple((self.kernel(cand, launch.kernel, launch.cooperative), launch.grid, launch.block,
                      kernel_args(launch, dev), launch.shared_bytes, launch.cooperative) for launch in plan)

    @staticmethod
    def launch_bound(bound: tuple) -> None:
        """Enqueue a bound plan in order on the current stream; no synchronization.

        Warnings are errors around cooperative launches: CuPy 14 warns and
        shrinks the grid (cupy/cuda/function.pyx, _launch) when a cooperative
        grid exceeds what fits on the device at once, which would silently
        change the plan.
        """
        for k, grid, block, args, shared, cooperative in bound:
            if cooperative:
                with warnings.catch_warnings():
                    warnings.simplefilter("error")
                    k(grid, block, args, shared_mem=shared)
            else:
                k(grid, block, args, shared_mem=shared)

    def launch_plan(self, cand: Candidate, plan: Sequence[ResolvedLaunch], dev: Mapping[str, Any]) -> None:
        """Enqueue every launch of the plan in order on the current stream; no synchronization."""
        self.launch_bound(self.bind(cand, plan, dev))

    def synchronize(self) -> None:
        self.cp.cuda.Device(self.device_index).synchronize()

    def context_error(self) -> str:
        """"" while the CUDA context still works; else why not.

        Why: after an illegal address or a trap, CUDA's error is sticky: every
        later call in this process fails, so every later candidate would
        "fail the gate" and every wrong variant would look rejected. A tiny
        memset and a device synchronize tell a live context from a dead one.
        """
        try:
            probe = self.cp.empty(16, dtype=self.cp.uint8)
            probe.data.memset_async(0, 16)
            self.cp.cuda.runtime.deviceSynchronize()
            del probe
        except Exception as exc:
            return f"the CUDA context is unusable ({type(exc).__name__}: {exc}); only a new process can use the GPU again"
        return ""

    def run(self, fam: Family, cand: Candidate, shape: Mapping[str, Number], buffers: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        """plugins.gate.check.Executor: host buffers in, every buffer back on the host; each
        buffer between red zones (GuardedBuffer), so an overrun is a verdict, not a dead context."""
        self.compile(cand)
        plan = fam.resolve(cand, shape, self.sm_count)
        guarded = {k: GuardedBuffer.place(self.cp, k, v) for k, v in buffers.items()}
        self.launch_plan(cand, plan, {k: g.view for k, g in guarded.items()})
        self.synchronize()
        overruns = [why for g in guarded.values() if (why := g.overrun(self.cp))]
        if overruns:
            raise OutOfBounds("; ".join(overruns))
        out = {k: host_view(self.cp.asnumpy(g.view), buffers[k].dtype) for k, g in guarded.items()}
        del guarded
        return out

    def free(self) -> None:
        """Give pooled device memory back between families."""
        self.synchronize()
        self.cp.get_default_memory_pool().free_all_blocks()
