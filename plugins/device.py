"""The CuPy executor: compiles candidates with NVRTC and runs their launch plans on a GPU.

Why: the gate, the timer and the one-launch profile all need the same thing
done the same way: the same compile options as the CPU checks
(plugins.compile), the same resolved launch plan, and scalar arguments passed
with exactly the C types the kernels declare. CuPy is imported lazily, so
this module loads on machines with no GPU.
"""
from __future__ import annotations

import logging
import warnings
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

import numpy as np

from plugins.compile import NVRTC_OPTIONS, include_options
from plugins.cuda_source import CTYPE_DTYPES
from plugins.manifest import Candidate, Family
from plugins.plan import BufferArg, Number, ResolvedLaunch, ScalarArg

log = logging.getLogger("sparktrace.device")

NO_DEVICE = "no CUDA device"
# Options CuPy's compiler (cupy/cuda/compiler.py) may append to every RawModule
# it builds, and to cooperative ones; `cupy_added_options` reads which of them
# the installed CuPy really adds, so the key says what was compiled.
CUPY_MAYBE_ADDED = ("-ftz=true",)
CUPY_MAYBE_ADDED_COOPERATIVE = ("--device-c", "-rdc=true")


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
    dtype = CTYPE_DTYPES.get(arg.ctype)
    if dtype is None:
        raise TypeError(f"argument {arg.name!r}: C type {arg.ctype!r} has no NumPy equivalent; use one of {sorted(CTYPE_DTYPES)}")
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
    found = [f"{o} (appended by CuPy)" for o in CUPY_MAYBE_ADDED if f"'{o}'" in src]
    found += [f"{o} (appended by CuPy, cooperative plans only)" for o in CUPY_MAYBE_ADDED_COOPERATIVE if f"'{o}'" in src]
    return found


def compile_options() -> tuple[str, ...]:
    """The options handed to CuPy: exactly the CPU compile stage's (plugins.compile)."""
    return tuple(NVRTC_OPTIONS) + tuple(include_options())


class CupyExecutor:
    """plugins.gate.Executor on a CUDA device through CuPy."""

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
        self.sm_count = int(props["multiProcessorCount"])
        self.l2_bytes = int(props.get("l2CacheSize", 0) or 0)
        name = props.get("name", b"")
        self.device_name = name.decode(errors="replace") if isinstance(name, bytes) else str(name)
        self.compute_capability = f"{props['major']}.{props['minor']}"
        self.options = compile_options()
        self._kernels: dict[tuple[str, str, bool], Any] = {}

    # ---------------------------------------------------------------- compile

    def kernel(self, cand: Candidate, name: str, cooperative: bool = False) -> Any:
        """The compiled entry point; each (source, cooperative) is compiled once."""
        key = (cand.source, name, cooperative)
        if key not in self._kernels:
            module = self.cp.RawModule(
                code=cand.source, options=self.options, backend="nvrtc", enable_cooperative_groups=cooperative,
            )
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

    def to_device(self, buffers: Mapping[str, np.ndarray]) -> dict[str, Any]:
        return {k: self.cp.asarray(v) for k, v in buffers.items()}

    def launch_plan(self, cand: Candidate, plan: Sequence[ResolvedLaunch], dev: Mapping[str, Any]) -> None:
        """Enqueue every launch of the plan in order on the current stream; no synchronization.

        Warnings are errors here: CuPy warns (and shrinks the grid) when a
        cooperative grid is too large, which would silently change the plan.
        """
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            for launch in plan:
                k = self.kernel(cand, launch.kernel, launch.cooperative)
                k(launch.grid, launch.block, kernel_args(launch, dev), shared_mem=launch.shared_bytes)

    def synchronize(self) -> None:
        self.cp.cuda.Device(self.device_index).synchronize()

    def run(self, fam: Family, cand: Candidate, shape: Mapping[str, Number], buffers: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        """plugins.gate.Executor: host buffers in, every buffer back on the host."""
        self.compile(cand)
        plan = fam.resolve(cand, shape, self.sm_count)
        dev = self.to_device(buffers)
        self.launch_plan(cand, plan, dev)
        self.synchronize()
        out = {k: self.cp.asnumpy(v) for k, v in dev.items()}
        del dev
        return out

    def free(self) -> None:
        """Give pooled device memory back between families."""
        self.synchronize()
        self.cp.get_default_memory_pool().free_all_blocks()
