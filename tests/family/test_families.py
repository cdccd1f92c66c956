"""CPU checks of every family directory: manifest, NVRTC compile for three GPUs,
ptxas resources, the reference against an independent formulation."""
from __future__ import annotations

import json

import numpy as np
import pytest

from plugins.family.compile import ARCHS, compile_source, first_error, ptx_entry_params
from plugins.family.cuda_source import CTYPE_DTYPES
from plugins.family.dtypes import np_dtype
from plugins.family.manifest import GPU_L2_BYTES, MAX_DYNAMIC_SHARED, SM_COUNTS_CHECKED

PARAM_BYTES = {"float": 4, "double": 8, "int": 4, "unsigned": 4, "unsigned int": 4, "uint32_t": 4,
               "long long": 8, "long long int": 8, "unsigned long long": 8, "unsigned long long int": 8,
               "unsigned char": 1, "uint8_t": 1}


def test_family_is_valid(discovered):
    """One clear error per malformed family, never a traceback."""
    if discovered.error is not None:
        pytest.fail(str(discovered.error), pytrace=False)
    assert discovered.family.name == discovered.name


def _field(fam, cand) -> str:
    """The family.toml table of a candidate: start, rewrites[i] or wrong[i]."""
    if cand.role == "start":
        return "start"
    group = fam.rewrites if cand.role == "rewrite" else fam.wrong
    return f"{'rewrites' if cand.role == 'rewrite' else 'wrong'}[{[c.id for c in group].index(cand.id)}]"


def _first_target_failed(fam, cand) -> str:
    """Why this candidate already failed on the first target (one defect, one failure), or ''."""
    arch = fam.targets[0]
    first = compile_source(cand.source, arch, cand.path.name)
    if not first.ok or first.problems(cand.allow_local, cand.allow_spills):
        return f"{cand.path}: already failed on {arch}; reported once, by test_compiles[{fam.name}/{cand.id}/{arch}]"
    return ""


def test_compiles(compile_case, record_property):
    fam, cand, arch = compile_case
    res = compile_source(cand.source, arch, cand.path.name)
    if arch != fam.targets[0] and (not res.ok or res.problems(cand.allow_local, cand.allow_spills)) and (why := _first_target_failed(fam, cand)):
        pytest.skip(why)
    if not res.ok:
        line, msg = first_error(res.log)
        where = f"{cand.path}:{line}" if line else str(cand.path)
        pytest.fail(f"{where}: does not compile for {arch} with NVRTC: {msg}. Fix: correct the code at that line "
                    f"(the full log follows)\n{res.log}", pytrace=False)
    compiled = {r.kernel for r in res.resources}
    if compiled != set(cand.signatures):
        pytest.fail(f"{cand.path}: ptxas compiled {sorted(compiled)}, the source declares {sorted(cand.signatures)}. "
                    'Fix: declare every entry point as extern "C" __global__', pytrace=False)
    record_property("ptxas_resources", json.dumps({
        f"{fam.name}/{cand.id}/{arch}/{r.kernel}": {
            "registers": r.registers, "shared_bytes": r.shared_bytes, "stack_bytes": r.stack_bytes,
            "spill_store_bytes": r.spill_store_bytes, "spill_load_bytes": r.spill_load_bytes,
            "local_loads": r.local_loads, "local_stores": r.local_stores,
            **({"allow_spills": True} if cand.allow_spills else {}),
        } for r in res.resources
    }))
    problems = res.problems(cand.allow_local, allow_spills=cand.allow_spills) + _shared_over_limit(fam, cand, res)
    if problems:
        fixes = []
        if any("local memory" in p for p in problems):
            fixes.append("keep the array in registers (constant indices) or shared memory, or, when the local memory "
                         f"is the point, set allow_local = true in [{_field(fam, cand)}] of family.toml")
        fixes.append("change the code until ptxas reports none")
        pytest.fail(f"{cand.path}: " + "; ".join(problems) + ". Fix: " + fixes[0], pytrace=False)


def _shared_over_limit(fam, cand, res) -> list[str]:
    """Static (ptxas) plus dynamic (launch plan) shared memory per block, at every size the
    plan is resolved for: over 48 KB, a launch fails without the opt-in the executor never sets."""
    static = {r.kernel: r.shared_bytes for r in res.resources}
    out = []
    for kind in ("timing", "gate", "tiny"):
        for k, shape in enumerate(fam.shapes(kind)):
            for sm in SM_COUNTS_CHECKED:
                for r in fam.resolve(cand, shape, sm):
                    total = static.get(r.kernel, 0) + r.shared_bytes
                    if total > MAX_DYNAMIC_SHARED:
                        out.append(f"{r.kernel} on {res.arch} needs {static.get(r.kernel, 0)} B "
                                   f"static + {r.shared_bytes} B dynamic shared memory at sizes.{kind}[{k}] = {total} B "
                                   f"(limit {MAX_DYNAMIC_SHARED} per block without an opt-in)")
                        return out
    return out


def test_static_plus_dynamic_shared_memory_over_48_kb_is_a_problem():
    """moe_permute's bulk_smem at H = 6144: 49,152 dynamic + 16 static bytes would not launch."""
    from types import SimpleNamespace as NS

    fam = NS(shapes=lambda kind: ({"H": 6144},) if kind == "timing" else (),
             resolve=lambda cand, shape, sm: (NS(kernel="k0", shared_bytes=8 * shape["H"]),))
    res = NS(arch="sm_90", resources=(NS(kernel="k0", shared_bytes=16),))
    (problem,) = _shared_over_limit(fam, None, res)
    assert "16 B static + 49152 B dynamic" in problem and "sizes.timing[0]" in problem
    res_fits = NS(arch="sm_90", resources=(NS(kernel="k0", shared_bytes=0),))
    assert _shared_over_limit(fam, None, res_fits) == []


def test_entry_points_match_manifest(candidate):
    """The compiler's own parameter list agrees with the manifest's argument lists."""
    fam, cand = candidate
    if not compile_source(cand.source, fam.targets[0], cand.path.name).ok:
        pytest.skip(f"{cand.path} does not compile; reported once, by test_compiles[{fam.name}/{cand.id}/{fam.targets[0]}]")
    emitted = ptx_entry_params(cand.source, fam.targets[0], cand.path.name)
    for launch in cand.launches:
        sig = cand.signatures[launch.kernel]
        if launch.kernel not in emitted:
            pytest.fail(f"{cand.path}: NVRTC emitted no entry {launch.kernel} (it emitted {sorted(emitted)}). "
                        f'Fix: define {launch.kernel} as extern "C" __global__ void, outside any #if', pytrace=False)
        want = tuple(8 if p.pointer else PARAM_BYTES[p.ctype] for p in sig.params)
        if emitted[launch.kernel] != want:
            pytest.fail(f"{cand.path}: {launch.kernel}'s parameters are {emitted[launch.kernel]} bytes in the PTX but "
                        f"{want} as SparkTrace reads the source. Fix: write each parameter as one plain declaration "
                        "(no macros or typedefs in the signature)", pytrace=False)


def _inputs(fam, shape, seed):
    ref = fam.reference_module()
    inputs = fam.make_inputs(np.random.default_rng(seed), dict(shape))  # a data group member also passes its [data]
    counts = fam.buffer_counts(shape)
    declared = {b.name for b in fam.buffers if b.role == "input"}
    assert set(inputs) == declared, f"{fam.name}: make_inputs returns {sorted(inputs)}, manifest inputs are {sorted(declared)}"
    for name, arr in inputs.items():
        b = fam.buffer(name)
        assert np.asarray(arr).dtype == np_dtype(b.dtype), f"{fam.name}: make_inputs gives {name} as {np.asarray(arr).dtype}, manifest says {b.dtype}"
        assert np.asarray(arr).size == counts[name], f"{fam.name}: {name} has {np.asarray(arr).size} elements, manifest count is {counts[name]}"
    return ref, inputs


def test_reference_matches_naive(family):
    """The vectorised reference agrees with the plain-loop formulation on tiny shapes."""
    for shape in family.shapes("tiny"):
        for seed in (11, 12):
            ref, inputs = _inputs(family, shape, seed)
            want = ref.naive(inputs, dict(shape))
            got = ref.reference(inputs, dict(shape))
            for b in family.outputs:
                g, w = np.asarray(got[b.name]).reshape(-1), np.asarray(want[b.name]).reshape(-1)
                assert g.size == family.buffer_counts(shape)[b.name], f"{family.name}: reference {b.name} has {g.size} elements"
                assert np.any(w != 0), f"{family.name}: the naive {b.name} is all zeros for {shape}; inputs are degenerate"
                exact = np.issubdtype(g.dtype, np.integer)
                bad = np.flatnonzero(g != w) if exact else np.flatnonzero(~np.isclose(g, w, rtol=1e-9, atol=1e-12, equal_nan=True))
                if bad.size:
                    pytest.fail(f"{family.path / 'reference.py'}: reference and naive disagree on {b.name} at {bad.size} of "
                                f"{g.size} elements for {shape} (seed {seed}); first at [{bad[0]}]: reference {g[bad[0]]!r}, "
                                f"naive {w[bad[0]]!r}. Fix: correct whichever of reference() and naive() is wrong",
                                pytrace=False)


def test_gate_shapes_give_nondegenerate_references(family):
    """A reference that is all zeros would let an unwritten output pass."""
    for shape in family.shapes("gate"):
        ref, inputs = _inputs(family, shape, 5)
        out = ref.reference(inputs, dict(shape))
        for b in family.outputs:
            assert np.any(np.asarray(out[b.name]) != 0), f"{family.name}: reference {b.name} is all zeros at {shape}"
            if b.tolerance.kind == "scaled":
                scale = ref.error_scale(inputs, dict(shape))[b.name]
                assert np.all(np.asarray(scale) > 0), f"{family.name}: error_scale for {b.name} has zeros"


def test_scalar_ctypes_known(candidate):
    _, cand = candidate
    for sig in cand.signatures.values():
        for p in sig.params:
            assert p.ctype in CTYPE_DTYPES


def test_all_targets_listed():
    """Every target users own, sm_80 up (plugins/family/compile.py); a change here is a reviewed choice."""
    assert ARCHS == ("sm_80", "sm_86", "sm_89", "sm_90", "sm_100", "sm_120", "sm_121")


# Sizing rules from the foundation issue, checked from the manifests alone:
# memory-bound data several times the L2 of every GPU (plugins/family/manifest.py's
# GPU_L2_BYTES, B200's 126 MB the largest), or a statement per GPU where it is not;
# and no family needing more than a few GB of device memory.
MAX_FAMILY_BYTES = 2 * 2**30


def test_timing_size_is_sized_for_the_gpu(family):
    import numpy as np

    shape = family.shapes("timing")[0]
    counts = family.buffer_counts(shape)
    nbytes = {b.name: counts[b.name] * np_dtype(b.dtype).itemsize for b in family.buffers}
    where = f"{family.path / 'family.toml'}: field 'sizes.timing' {dict(family.timing)}"
    if sum(nbytes.values()) > MAX_FAMILY_BYTES:
        pytest.fail(f"{where}: {sum(nbytes.values()) / 2**30:.2f} GiB of buffers, over the 2 GiB limit. Fix: lower the "
                    "timing sizes (families/README.md, 'Sizes')", pytrace=False)
    if family.bound == "memory":
        moved = sum(v for k, v in nbytes.items() if family.buffer(k).role != "scratch")
        under = [g for g, l2 in GPU_L2_BYTES.items() if moved < 4 * l2]
        unstated = [g for g in under if g not in family.l2_per_gpu]
        if unstated:
            pytest.fail(f"{where}: {moved / 10**6:.0f} MB of inputs and outputs for a memory-bound family, under 4x the L2 of "
                        + ", ".join(f"{g} ({4 * GPU_L2_BYTES[g] / 10**6:.0f} MB)" for g in unstated)
                        + ". Fix: raise the timing sizes, or say per GPU what this working set means there in "
                        "[sizes.l2_per_gpu] (families/README.md, 'Sizes')", pytrace=False)
        if stale := sorted(set(family.l2_per_gpu) - set(under)):
            pytest.fail(f"{where}: [sizes.l2_per_gpu] states {stale}, where the data is 4x the L2 or more. Fix: remove those "
                        "statements", pytrace=False)