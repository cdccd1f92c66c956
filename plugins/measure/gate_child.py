"""One wrong variant's GPU gate in a process of its own.

Why: a variant that faults on purpose (family.toml `faults`: shade_*'s
sorted_inclusive gathers about 32 GiB past a buffer) leaves its process's CUDA
context unusable, and every later verdict and timing in that process with it.
On the first H200 pass that cost every family after shade_coherent. Run in a
child, only the child's context dies; the crash is the variant's rejection.

    python -m plugins.measure.gate_child <family> <candidate> --seeds 1,2,3
                                          [--families-root families] [--device 0]

It prints `{"running": ...}` once the variant is about to run, then one verdict
line; a child that dies after the first line was killed by the variant, one
that dies before it could not gate at all (which is never a rejection).
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path
from typing import Callable, Sequence

from plugins.family.manifest import Candidate, Family, FamilyError, load_family
from plugins.gate.check import GateResult, gate_candidate

ISOLATED = "in its own process: "
TIMEOUT_S = 120.0  # the child's whole life: imports, context, compile, the gate's runs (an estimate-based bound)


class IsolatedGateError(RuntimeError):
    """The child could not gate the variant (no verdict, and it never started running it)."""


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m plugins.measure.gate_child", description=__doc__.splitlines()[0])
    ap.add_argument("family")
    ap.add_argument("candidate")
    ap.add_argument("--seeds", required=True, help="comma-separated gate seeds (the parent's, drawn fresh)")
    ap.add_argument("--families-root", default="families")
    ap.add_argument("--device", type=int, default=0)
    args = ap.parse_args(argv)
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
    result = gate_candidate(fam, cand, ex, seeds)
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
    """The variant's verdict from a child process; a child killed by the variant is a rejection with
    its last words; a child that never started running it raises IsolatedGateError."""
    cmd = [python, "-m", "plugins.measure.gate_child", fam.name, cand.id, "--seeds", ",".join(map(str, seeds)),
           "--families-root", str(families_root), "--device", str(device_index)]
    shapes = tuple(fam.shapes("gate"))

    def verdict(passed: bool, reason: str) -> GateResult:
        return GateResult(fam.name, cand.id, cand.role, passed, reason, tuple(seeds), shapes, "cupy (a child process)")

    try:
        proc = run(cmd, capture_output=True, text=True, timeout=timeout_s, cwd=repo)
    except subprocess.TimeoutExpired as exc:
        out = exc.stdout.decode(errors="replace") if isinstance(exc.stdout, bytes) else (exc.stdout or "")
        if any("running" in d for d in _lines(out)):
            return verdict(False, f"{ISOLATED}still running after {timeout_s:g} s (killed): a hang is a rejection")
        raise IsolatedGateError(f"{fam.name}/{cand.id}: the child gate process did not start the variant within {timeout_s:g} s") from None
    found = _lines(proc.stdout)
    done = [d for d in found if "passed" in d]
    if proc.returncode == 0 and done:
        return verdict(bool(done[-1]["passed"]), ISOLATED + str(done[-1].get("reason", "")))
    if any("running" in d for d in found):
        return verdict(False, f"{ISOLATED}the process died running it (exit status {proc.returncode}): {_tail(proc.stderr)}")
    raise IsolatedGateError(f"{fam.name}/{cand.id}: the child gate process ended with status {proc.returncode} before running "
                            f"the variant: {_tail(proc.stderr)}; command: {' '.join(cmd)}")


if __name__ == "__main__":
    sys.exit(main())
