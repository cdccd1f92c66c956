"""One wrong variant's GPU gate in a process of its own.

Why: a variant that faults on purpose (family.toml `faults`: shade_*'s
sorted_inclusive gathers about 32 GiB past a buffer) leaves its process's CUDA
context unusable, and every later verdict and timing in that process with it,
as the first H200 pass's context was lost at shade_coherent. Run in a child,
only the child's context dies; the crash is the variant's rejection.

    python -m plugins.measure.gate_child <family> <candidate> --seeds 1,2,3
                                          [--families-root families] [--device 0] [--parent PID]

It prints `{"running": ...}` once the variant is about to run, then one verdict
line (or `{"error": ...}` when something other than the variant's launches
failed). Only a verdict, a death by a fault signal or a CUDA error after the
first line, or a run that never ends is the variant's rejection; anything else
(no CuPy, out of memory, an interrupt) is an error, never a rejection.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path
from typing import Callable, Sequence

from plugins.family.manifest import Candidate, Family, FamilyError, load_family
from plugins.gate.check import GateResult, gate_candidate

ISOLATED = "in its own process: "
TIMEOUT_S = 120.0  # the child's whole life: imports, context, compile, the gate's runs (an estimate-based bound)
# Deaths that are the variant's doing: the fault signals, or a CUDA error in its last words.
FAULT_SIGNALS = frozenset({signal.SIGSEGV, signal.SIGBUS, signal.SIGABRT, signal.SIGILL, signal.SIGFPE, signal.SIGTRAP})
CUDA_ERROR = re.compile(r"cudaError(IllegalAddress|IllegalInstruction|LaunchFailure|Misaligned\w*|Assert|HardwareStackError)"
                        r"|CUDA_ERROR_(ILLEGAL_\w+|LAUNCH_FAILED|MISALIGNED_ADDRESS|ASSERT|HARDWARE_STACK_ERROR)"
                        r"|an illegal memory access")


def child_timeout(watchdog_s: float | None) -> float:
    """Under the family watchdog (which ends the whole process): a hung child is then killed and
    rejected before the watchdog takes the family for hung."""
    return TIMEOUT_S if not watchdog_s else min(TIMEOUT_S, max(10.0, 0.4 * watchdog_s))


def _die_with_parent(parent: int | None) -> None:
    """Linux: the kernel kills this child when the pass's process dies (a watchdog's os._exit), so
    a variant that hangs never spins on the GPU under the next process's timings."""
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        return
    if parent is not None and os.getppid() != parent:  # it died before the prctl
        os._exit(5)


def runs_apart(cand: Candidate) -> bool:
    """Whether the GPU gate runs `cand` in a child process: a wrong variant that declares `faults`."""
    return cand.role == "wrong" and bool(cand.faults)


class IsolatedGateError(RuntimeError):
    """The child could not gate the variant (no verdict, and it never started running it)."""


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m plugins.measure.gate_child", description=__doc__.splitlines()[0])
    ap.add_argument("family")
    ap.add_argument("candidate")
    ap.add_argument("--seeds", required=True, help="comma-separated gate seeds (the parent's, drawn fresh)")
    ap.add_argument("--families-root", default="families")
    ap.add_argument("--device", type=int, default=0)
    ap.add_argument("--parent", type=int, default=None, help="the pass's pid: this child dies with it")
    args = ap.parse_args(argv)
    _die_with_parent(args.parent)
    try:
        fam = load_family(Path(args.families_root) / args.family)
    except FamilyError as exc:
        sys.stderr.write(f"{exc}\n")
        return 2
    cand = next((c for c in fam.all_candidates if c.id == args.candidate), None)
    if cand is None:
        sys.stderr.write(f"{fam.path}/family.toml: no candidate {args.candidate!r}; it has {[c.id for c in fam.all_candidates]}\n")
        return 2
    seeds = tuple(int(s) for s in args.seeds.split(",") if s)

    from plugins.measure.device import CupyExecutor, DeviceUnavailable

    try:
        ex = CupyExecutor(args.device)
    except DeviceUnavailable as exc:
        sys.stderr.write(f"{exc}\n")
        return 3
    ex.compile(cand)
    sys.stdout.write(json.dumps({"running": f"{fam.name}/{cand.id}"}) + "\n")
    sys.stdout.flush()
    try:
        result = gate_candidate(fam, cand, ex, seeds)  # the variant's own failures are in its verdict
    except Exception as exc:  # inputs, reference, comparison: not the variant
        sys.stdout.write(json.dumps({"error": f"{type(exc).__name__}: {exc}"}) + "\n")
        return 4
    reason = result.reason
    if not result.passed and (lost := ex.context_error()):
        reason += f"; then {lost}"
    sys.stdout.write(json.dumps({"passed": result.passed, "reason": reason}) + "\n")
    return 0


def _lines(text: str) -> list[dict]:
    out = []
    for line in text.splitlines():
        try:
            obj = json.loads(line)
        except ValueError:
            continue
        if isinstance(obj, dict):
            out.append(obj)
    return out


def _tail(text: str, n: int = 6) -> str:
    lines = [ln for ln in text.strip().splitlines() if ln.strip()]
    return " | ".join(lines[-n:]) or "(no output)"


def gate_isolated(fam: Family, cand: Candidate, seeds: Sequence[int], *, families_root: Path, device_index: int = 0,
                  repo: Path | None = None, timeout_s: float = TIMEOUT_S, python: str = sys.executable,
                  run: Callable[..., subprocess.CompletedProcess] = subprocess.run) -> GateResult:
    """The variant's verdict from a child process; a child the variant killed (a fault signal or a CUDA
    error) or that never finishes is a rejection with its last words; anything else raises IsolatedGateError."""
    cmd = [python, "-m", "plugins.measure.gate_child", fam.name, cand.id, "--seeds", ",".join(map(str, seeds)),
           "--families-root", str(families_root), "--device", str(device_index), "--parent", str(os.getpid())]
    shapes = tuple(fam.shapes("gate"))

    def verdict(passed: bool, reason: str) -> GateResult:
        return GateResult(fam.name, cand.id, cand.role, passed, reason, tuple(seeds), shapes, "cupy (a child process)")

    try:
        proc = run(cmd, capture_output=True, text=True, encoding="utf-8", errors="replace", timeout=timeout_s, cwd=repo)
    except subprocess.TimeoutExpired as exc:
        out = exc.stdout.decode(errors="replace") if isinstance(exc.stdout, bytes) else (exc.stdout or "")
        if any("running" in d for d in _lines(out)):
            return verdict(False, f"{ISOLATED}still running after {timeout_s:g} s (killed): a variant that does not finish is rejected")
        raise IsolatedGateError(f"{fam.name}/{cand.id}: the child gate process did not start the variant within {timeout_s:g} s") from None
    found = _lines(proc.stdout)
    if done := [d for d in found if "passed" in d]:  # its verdict, whatever the exit status after it
        after = f" (the child then exited with status {proc.returncode})" if proc.returncode else ""
        return verdict(bool(done[-1]["passed"]), ISOLATED + str(done[-1].get("reason", "")) + after)
    if errors := [d for d in found if "error" in d]:
        raise IsolatedGateError(f"{fam.name}/{cand.id}: the child could not gate the variant: {errors[-1]['error']}")
    ran = any("running" in d for d in found)
    by_fault = proc.returncode < 0 and -proc.returncode in FAULT_SIGNALS
    if ran and (by_fault or CUDA_ERROR.search(proc.stderr or "")):
        how = f"signal {signal.Signals(-proc.returncode).name}" if by_fault else f"exit status {proc.returncode}"
        return verdict(False, f"{ISOLATED}the process died running it ({how}): {_tail(proc.stderr)}")
    stage = "after it started the variant, of no fault signal and no CUDA error" if ran else "before running the variant"
    raise IsolatedGateError(f"{fam.name}/{cand.id}: the child gate process ended with status {proc.returncode} {stage}: "
                            f"{_tail(proc.stderr)}; command: {' '.join(cmd)}")

if __name__ == "__main__":
    sys.exit(main())
