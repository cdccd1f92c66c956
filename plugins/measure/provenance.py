"""Who measured what, where, with which software: the provenance of a measurement file.

Why: a key is only worth what someone else can reproduce. Every field is read
through `field()`, so a missing tool or library becomes an explicit
"unavailable: <why>" in the record instead of a crash that loses the run.
"""
from __future__ import annotations

import os
import platform
import re
import socket
import subprocess
import sys
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Mapping, Protocol, Sequence

if TYPE_CHECKING:
    from plugins.family.manifest import Family

UNAVAILABLE = "unavailable"


def unavailable(why: str) -> str:
    return f"{UNAVAILABLE}: {why}"


def is_unavailable(value: Any) -> bool:
    return isinstance(value, str) and value.startswith(UNAVAILABLE + ":")


def field(read: Callable[[], Any]) -> Any:
    """The value `read()` returns, or "unavailable: <why>" if it raises or returns None."""
    try:
        value = read()
    except Exception as exc:
        return unavailable(f"{type(exc).__name__}: {exc}".strip())
    return unavailable("not reported") if value is None else value


def field_dict(read: Callable[[], Mapping[str, Any]], keys: Sequence[str]) -> dict:
    """`read()`'s fields, or each of `keys` as "unavailable: <why>" if it raises."""
    got = field(read)
    return dict(got) if isinstance(got, Mapping) else {k: got for k in keys}


def cuda_version(v: int) -> str:
    """13000 -> '13.0', 12080 -> '12.8' (CUDA's encoding: 1000*major + 10*minor)."""
    return f"{v // 1000}.{(v % 1000) // 10}"


class DeviceProbe(Protocol):
    """Reads the GPU and its software; a fake stands in for it in CPU tests."""

    def properties(self) -> Mapping[str, Any]: ...

    def driver_api_version(self) -> int: ...

    def runtime_version(self) -> int: ...

    def cupy_version(self) -> str: ...

    def nvrtc_version(self) -> str: ...

    def nvml(self) -> Mapping[str, Any]: ...


class CupyProbe:
    """The real probe: CuPy's runtime API and NVML (nvidia-ml-py) when importable."""

    def __init__(self, device_index: int = 0):
        self.device_index = device_index

    def _cupy(self) -> Any:
        from plugins.measure.device import import_cupy

        return import_cupy()

    def properties(self) -> Mapping[str, Any]:
        return self._cupy().cuda.runtime.getDeviceProperties(self.device_index)

    def driver_api_version(self) -> int:
        return int(self._cupy().cuda.runtime.driverGetVersion())

    def runtime_version(self) -> int:
        return int(self._cupy().cuda.runtime.runtimeGetVersion())

    def cupy_version(self) -> str:
        return str(self._cupy().__version__)

    def nvrtc_version(self) -> str:
        try:
            major, minor = self._cupy().cuda.nvrtc.getVersion()
            return f"{major}.{minor}"
        except Exception:
            from plugins.family.compile import nvrtc_version

            return nvrtc_version() + " (cuda-bindings)"

    def nvml(self) -> Mapping[str, Any]:
        import warnings

        with warnings.catch_warnings():  # the unofficial `pynvml` package warns on import
            warnings.simplefilter("ignore")
            import pynvml  # lazy: nvidia-ml-py

        pynvml.nvmlInit()
        h = pynvml.nvmlDeviceGetHandleByIndex(self.device_index)

        def s(v: Any) -> str:
            return v.decode() if isinstance(v, bytes) else str(v)

        return {
            "driver": s(pynvml.nvmlSystemGetDriverVersion()),
            "sm_clock_mhz": field(lambda: int(pynvml.nvmlDeviceGetClockInfo(h, pynvml.NVML_CLOCK_SM))),
            "sm_clock_max_mhz": field(lambda: int(pynvml.nvmlDeviceGetMaxClockInfo(h, pynvml.NVML_CLOCK_SM))),
            "mem_clock_mhz": field(lambda: int(pynvml.nvmlDeviceGetClockInfo(h, pynvml.NVML_CLOCK_MEM))),
            "mem_clock_max_mhz": field(lambda: int(pynvml.nvmlDeviceGetMaxClockInfo(h, pynvml.NVML_CLOCK_MEM))),
        }


def _decode(v: Any) -> str:
    return v.decode(errors="replace").rstrip("\x00") if isinstance(v, bytes) else str(v)


def gpu_record(probe: DeviceProbe) -> dict:
    """The measurement file's "gpu" object; `slug` names the key file."""
    from plugins.measure.keyfile import gpu_slug

    props = field(probe.properties)
    nvml = field(probe.nvml)
    p: Mapping[str, Any] = props if isinstance(props, Mapping) else {}
    n: Mapping[str, Any] = nvml if isinstance(nvml, Mapping) else {}
    why_p = props if isinstance(props, str) else "not in the device properties"
    why_n = nvml if isinstance(nvml, str) else "not reported by NVML"

    def prop(key: str, conv: Callable[[Any], Any] = int) -> Any:
        return field(lambda: conv(p[key])) if key in p else (why_p if is_unavailable(why_p) else unavailable(f"{key} {why_p}"))

    def clock(key: str, prop_key: str | None) -> Any:
        if key in n and not is_unavailable(n[key]):
            return n[key]
        if prop_key and p.get(prop_key):  # the peak clock, only for the *_max fields
            return int(p[prop_key]) // 1000  # the properties give kHz
        return why_n if is_unavailable(why_n) else unavailable(f"{key} {why_n}")

    name = prop("name", _decode)
    cc = field(lambda: f"{p['major']}.{p['minor']}") if "major" in p else prop("major")
    return {
        "name": name,
        "slug": gpu_slug(name) if not is_unavailable(name) else "unknown-gpu",
        "compute_capability": cc,
        "sm_count": prop("multiProcessorCount"),
        "l2_bytes": prop("l2CacheSize"),
        # With mem_clock_max_mhz: a peak bandwidth of 2 x clock x width / 8 bytes per second (DDR).
        "memory_bus_width_bits": prop("memoryBusWidth"),
        "global_memory_bytes": prop("totalGlobalMem"),
        "sm_clock_mhz": clock("sm_clock_mhz", None),
        "sm_clock_max_mhz": clock("sm_clock_max_mhz", "clockRate"),
        "mem_clock_mhz": clock("mem_clock_mhz", None),
        "mem_clock_max_mhz": clock("mem_clock_max_mhz", "memoryClockRate"),
    }


GIT_COMMIT_ENV = "SPARKTRACE_GIT_COMMIT"  # for a copy of the tree with no .git (the GPU machine gets one)
SOURCE_GLOBS = ("families/**/*", "plugins/**/*.py", "scripts/measure-gpu.sh", "tests/measure/test_measure_gpu.py")


def source_digest(repo: Path) -> dict:
    """sha256 over the files that decide a measurement (families, plugins, the script),
    so a key names the code it came from even where git cannot."""
    import hashlib

    h = hashlib.sha256()
    count = 0
    files = sorted({p for g in SOURCE_GLOBS for p in Path(repo).glob(g)
                    if p.is_file() and "__pycache__" not in p.parts and "measurements" not in p.parts})
    for p in files:
        h.update(str(p.relative_to(repo)).encode() + b"\0" + p.read_bytes() + b"\0")
        count += 1
    return {"source_sha256": h.hexdigest(), "source_files": count}


class ProvenanceRefused(RuntimeError):
    """No commit can be named for the code that would run: the pass refuses to measure."""


ALLOW_UNKNOWN_COMMIT = "--measure-allow-unknown-commit"


def git_state(repo: Path, run: Callable[..., Any] = subprocess.run, env: Mapping[str, str] | None = None,
              allow_unknown_commit: bool = False) -> dict:
    """The commit and whether the tree had uncommitted changes.

    $SPARKTRACE_GIT_COMMIT, when set, names the commit whatever git says: a copy
    of the tree with no .git of its own may sit inside another repository (a
    home directory under git, a scratch checkout), whose HEAD is not this code's.
    Only when git's HEAD is that same commit is git's dirty flag kept.
    With neither, raises ProvenanceRefused unless `allow_unknown_commit`, which
    is then written into the record (`overrides`), so such a key says so.
    """

    def git(*args: str) -> str:
        r = run(["git", "-C", str(repo), *args], capture_output=True, text=True, timeout=20)
        if r.returncode != 0:
            raise RuntimeError(f"git {' '.join(args)} exited {r.returncode}: {r.stderr.strip()[:200]}")
        return r.stdout.strip()

    commit = field(lambda: git("rev-parse", "HEAD"))
    dirty = field(lambda: bool(git("status", "--porcelain", "--untracked-files=no")))
    given = (os.environ if env is None else env).get(GIT_COMMIT_ENV, "").strip()
    if given:
        if is_unavailable(commit):
            why = f"no git here ({commit})"
        elif commit.startswith(given) or given.startswith(commit):
            return {"git_commit": given, "git_dirty": dirty, "git_commit_source": f"${GIT_COMMIT_ENV} (git's HEAD agrees)"}
        else:
            why = f"the enclosing git repository's HEAD is {commit}, not this commit, so its state is not this tree's"
        return {"git_commit": given, "git_dirty": unavailable(f"{why}; the commit is from ${GIT_COMMIT_ENV}, compare source_sha256"),
                "git_commit_source": f"${GIT_COMMIT_ENV}"}
    if is_unavailable(commit):
        if not allow_unknown_commit:
            raise ProvenanceRefused(
                f"no git commit can be named for {repo} ({commit}) and ${GIT_COMMIT_ENV} is not set; fix: run "
                f"`git rev-parse HEAD` where the repository is and pass it as {GIT_COMMIT_ENV}=<sha>, or give "
                f"{ALLOW_UNKNOWN_COMMIT} (scripts/measure-gpu.sh --allow-unknown-commit) to measure anyway, recorded in every key")
        return {"git_commit": commit, "git_dirty": dirty,
                "overrides": [f"{ALLOW_UNKNOWN_COMMIT}: measured with no commit known; only source_sha256 names the code"]}
    return {"git_commit": commit, "git_dirty": dirty}


def _numpy_version() -> str:
    import numpy

    return numpy.__version__


def software_record(
    probe: DeviceProbe,
    repo: Path,
    command: Sequence[str] | str,
    ncu_version: str,
    compile_options: Sequence[str] = (),
    run: Callable[..., Any] = subprocess.run,
    now: Callable[[], datetime] = lambda: datetime.now(timezone.utc),
    allow_unknown_commit: bool = False,
    env: Mapping[str, str] | None = None,
) -> dict:
    """The measurement file's "provenance" object (raises ProvenanceRefused, see git_state)."""
    nvml = field(probe.nvml)
    n: Mapping[str, Any] = nvml if isinstance(nvml, Mapping) else {}
    driver_api = field(lambda: cuda_version(probe.driver_api_version()))
    driver = n.get("driver") or (nvml if is_unavailable(nvml) else unavailable("not reported by NVML"))
    cmd = command if isinstance(command, str) else " ".join(command)
    return {
        "date": now().strftime("%Y-%m-%dT%H:%M:%SZ"),
        **git_state(repo, run, env, allow_unknown_commit),
        **field_dict(lambda: source_digest(repo), ("source_sha256", "source_files")),
        "command": cmd,
        "driver": driver,
        "cuda_driver_api": driver_api,
        "cuda_runtime": field(lambda: cuda_version(probe.runtime_version())),
        "cupy": field(probe.cupy_version),
        "nvrtc": field(probe.nvrtc_version),
        "compile_options": list(compile_options),
        "ncu": ncu_version,
        "numpy": field(_numpy_version),
        "python": platform.python_version(),
        "python_executable": sys.executable,
        "hostname": field(socket.gethostname),
        "platform": field(platform.platform),
    }


RNG = "numpy.random.default_rng"  # what every seed below seeds (numpy's version is in the provenance)


def inputs_sha256(buffers: Mapping[str, Any], names: Sequence[str]) -> str:
    """sha256 over the named buffers (name, dtype, bytes, sorted by name): the same formula as
    plugins.family.pairs.input_digest, so a redraw from the recorded seed can be compared."""
    import hashlib

    import numpy as np

    h = hashlib.sha256()
    for name in sorted(names):
        arr = np.ascontiguousarray(buffers[name])
        h.update(name.encode() + str(arr.dtype).encode() + arr.tobytes())
    return h.hexdigest()


def inputs_record(fam: "Family", gate_seeds: Sequence[int], timing_seed: int | None, slip_seed: int,
                  timing_inputs_sha256: str = "") -> dict:
    """How to draw again every input a pass used: reference.py's make_inputs (by sha256), the rng,
    the family's `[data]` (a data group's generator and parameters; {} elsewhere) and the seeds of
    the gate, the timing and the slip. Why in the key: a data group's question is its data, and a
    reviewer must be able to redraw exactly what the GPU ran."""
    import hashlib

    ref = Path(fam.path) / "reference.py"
    call = "make_inputs(rng, shape, data)" if fam.group else "make_inputs(rng, shape)"
    return {
        "make_inputs": f"families/{fam.name}/reference.py: {call}, rng = {RNG}(seed)",
        "reference_sha256": field(lambda: hashlib.sha256(ref.read_bytes()).hexdigest()),
        "rng": RNG,
        "generator": str(fam.data.get("generator", "")),
        "data": dict(fam.data),
        "gate_seeds": list(gate_seeds),
        "timing_seed": timing_seed,
        "timing_inputs_sha256": timing_inputs_sha256,
        "slip_seed": slip_seed,
    }


def parse_ncu_version(text: str) -> str:
    """'... Version 2025.3.1.0 (build 36398880) (public-release)' -> '2025.3.1.0'."""
    m = re.search(r"^\s*Version\s+(\d+(?:\.\d+)+)", text, re.M)
    if not m:
        raise ValueError(f"no 'Version N.N.N' line in ncu --version output: {text.strip()[:200]!r}")
    return m.group(1)
