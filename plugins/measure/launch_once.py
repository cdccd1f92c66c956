"""Run a family's starting launch plan exactly once, for Nsight Compute to profile.

Why its own entry point: ncu profiles a whole process, so this process does
nothing else on the GPU that could match the kernel filter: inputs arrive by
host-to-device copies, outputs are filled by memset, and the only kernels
launched are the plan's own, once each, in order.

    python -m plugins.measure.launch_once <family> [--families-root families] [--seed N]
                                           [--inputs FILE.npz --inputs-sha256 SHA] [--cubin-sha256 SHA]

With --inputs the timing inputs are the key's, loaded from the file the pass wrote
(plugins.measure.inputs), and a sha256 other than the key's stops the run: what is
profiled is what was timed. With --cubin-sha256 the start's cubin (compile_source's,
loaded by the executor) must be that one, the binary the key ran.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path


from plugins.measure.capture import LAUNCH_SEED
from plugins.family.dtypes import device_view
from plugins.gate.check import host_buffers
from plugins.family.manifest import FamilyError, load_family
from plugins.measure.inputs import InputsMismatch, input_names, load_inputs
from plugins.measure.provenance import inputs_sha256


def profiled_buffers(fam, shape, seed: int, inputs: str | None, sha256: str) -> dict:
    """The host buffers of the profiled run: the key's, loaded and checked, or drawn from `seed`."""
    if inputs:
        return load_inputs(Path(inputs), fam, shape, sha256)
    return host_buffers(fam, shape, seed)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m plugins.measure.launch_once", description=__doc__.splitlines()[0])
    ap.add_argument("family")
    ap.add_argument("--families-root", default="families")
    ap.add_argument("--seed", type=int, default=LAUNCH_SEED)
    ap.add_argument("--inputs", default=None, help="the key's timing inputs (.npz written by the measure pass)")
    ap.add_argument("--inputs-sha256", default="", help="their sha256 (the key's inputs.timing_inputs_sha256)")
    ap.add_argument("--cubin-sha256", default="", help="the start's cubin sha256 in the key: any other stops the run")
    args = ap.parse_args(argv)
    if bool(args.inputs) != bool(args.inputs_sha256):
        ap.error("--inputs and --inputs-sha256 go together")
    try:
        fam = load_family(Path(args.families_root) / args.family)
    except FamilyError as exc:
        sys.stderr.write(f"{exc}\n")
        return 2

    from plugins.measure.device import CupyExecutor, DeviceUnavailable

    try:
        ex = CupyExecutor()
    except DeviceUnavailable as exc:
        sys.stderr.write(f"{exc}\n")
        return 3
    shape = fam.shapes("timing")[0]
    ex.compile(fam.start)  # before any launch, so compile errors never reach the profiler
    cubin = ex.cubin_sha256(fam.start)
    if args.cubin_sha256 and cubin != args.cubin_sha256:
        sys.stderr.write(f"{fam.start.path}: the cubin loaded here has sha256 {cubin}, the key's is {args.cubin_sha256}: "
                         "the profile would not be of the binary that was timed; nothing was launched\n")
        return 2
    try:
        host = profiled_buffers(fam, shape, args.seed, args.inputs, args.inputs_sha256)
    except InputsMismatch as exc:
        sys.stderr.write(f"{exc}\n")
        return 2
    digest = inputs_sha256(host, input_names(fam))
    dev = {name: ex.cp.asarray(device_view(arr)) for name, arr in host.items()}
    del host
    for name in fam.start.zero_before:  # a memset, not ndarray.fill: fill would launch (and compile) a CuPy kernel
        dev[name].data.memset_async(0, dev[name].nbytes)
    ex.synchronize()
    plan = fam.resolve(fam.start, shape, ex.sm_count)
    ex.launch_plan(fam.start, plan, dev)
    ex.synchronize()
    sys.stdout.write(json.dumps({
        "family": fam.name, "seed": args.seed, "sizes": dict(shape), "inputs_sha256": digest,
        "inputs": "loaded" if args.inputs else "drawn", "cubin_sha256": cubin,
        "launches": [{"kernel": launch.kernel, "grid": launch.grid, "block": launch.block,
                      "shared_bytes": launch.shared_bytes, "cooperative": launch.cooperative} for launch in plan],
    }) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
