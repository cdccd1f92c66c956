"""Manifest features the hard set needs: low-precision dtypes, the e4m3 step tolerance,
and their clear errors (tests/fixtures/hardfams/ holds the example families)."""
from __future__ import annotations

import shutil
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

from plugins.family.dtypes import DTYPE_NAMES, device_view, dtype_name, e4m3_codes, e4m3_ordinal, e4m3_round, host_view, is_float, np_dtype
from plugins.family.manifest import FamilyError, load_family

HARD = Path(__file__).resolve().parents[1] / "fixtures" / "hardfams"


@pytest.fixture
def rowquant(tmp_path: Path) -> Path:
    d = tmp_path / "rowquant"
    shutil.copytree(HARD / "rowquant", d, ignore=shutil.ignore_patterns("__pycache__"))
    return d


def edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text, f"fixture edit: {old!r} not in {path.name}"
    path.write_text(text.replace(old, new, 1))


def error_of(d: Path) -> FamilyError:
    with pytest.raises(FamilyError) as info:
        load_family(d)
    return info.value


def test_low_precision_family_loads():
    fam = load_family(HARD / "rowquant")
    assert {b.name: b.dtype for b in fam.buffers} == {"x": "bfloat16", "q": "float8_e4m3", "s": "float32"}
    q = fam.buffer("q")
    assert (q.tolerance.kind, q.tolerance.steps) == ("e4m3_step", 1)
    assert fam.start.signatures["k0"].params[0].ctype == "__nv_bfloat16"


def test_dtype_names_round_trip():
    assert {"bfloat16", "float16", "float8_e4m3", "int8"} <= set(DTYPE_NAMES)
    for name in DTYPE_NAMES:
        assert dtype_name(np_dtype(name)) == name
    assert np_dtype("float8_e4m3") == np.dtype(ml_dtypes.float8_e4m3fn)
    assert [is_float(n) for n in ("bfloat16", "float16", "float8_e4m3", "int8", "uint8")] == [True, True, True, False, False]
    with pytest.raises(ValueError, match="bfloat8"):
        np_dtype("bfloat8")


def test_device_view_keeps_raw_bytes():
    """CuPy has no bfloat16/e4m3: those buffers travel as bytes, poison included."""
    poisoned = np.full(6, 0xFF, np.uint8).view(ml_dtypes.bfloat16)
    raw = device_view(poisoned)
    assert raw.dtype == np.uint8 and raw.size == 6 and np.all(raw == 0xFF)
    back = host_view(raw, poisoned.dtype)
    assert back.dtype == poisoned.dtype and np.all(np.isnan(back.astype(np.float32)))
    f16 = np.ones(3, np.float16)
    assert device_view(f16) is not None and device_view(f16).dtype == np.float16  # CuPy holds float16 itself


def test_e4m3_rounding_reference_rounds_once():
    # 1.0625 is halfway between 1.0 and 1.125: anything above it must go up (ml_dtypes rounds
    # float64 through float32 and gets this wrong); 500 saturates to 448; 3 * 2^-10 is a tie -> even
    x = np.array([1.0625 + 2.0**-40, 1.0625, 500.0, -1e9, 3 * 2.0**-10, 2.0**-11])
    assert e4m3_round(x).tolist() == [1.125, 1.0, 448.0, -448.0, 2.0**-8, 0.0]
    codes = e4m3_codes(x)
    assert codes.tolist() == [0x39, 0x38, 0x7E, 0xFE, 0x02, 0x00]
    assert e4m3_ordinal(np.array([0x00, 0x80, 0x01, 0x81, 0x7E, 0x7F], np.uint8)).tolist()[:5] == [0, 0, 1, -1, 126]


@pytest.mark.parametrize(
    "mutate, field_part, words",
    [
        (lambda d: edit(d / "family.toml", 'tolerance = { kind = "elementwise", rtol = 1e-6 }', 'tolerance = { kind = "e4m3_step" }'),
         "buffers.s.tolerance.kind", "only for float8_e4m3 outputs"),
        (lambda d: edit(d / "family.toml", '{ kind = "e4m3_step", steps = 1 }', '{ kind = "e4m3_step", steps = 1, rtol = 0.1 }'),
         "buffers.q.tolerance", "takes only 'steps'"),
        (lambda d: edit(d / "family.toml", '{ kind = "e4m3_step", steps = 1 }', '{ kind = "e4m3_step", steps = 8 }'),
         "buffers.q.tolerance.steps", "one step"),
        (lambda d: edit(d / "family.toml", 'rtol = 1e-6 }', 'rtol = 1e-6, steps = 1 }'),
         "buffers.s.tolerance.steps", "only the 'e4m3_step' kind"),
        (lambda d: edit(d / "family.toml", 'dtype = "bfloat16"', 'dtype = "bf16"'), "buffers.x.dtype", "bfloat16"),
        (lambda d: edit(d / "family.toml", 'dtype = "bfloat16"', 'dtype = "float16"'), "start.launch[0].args", "is float16 but"),
    ],
    ids=["step-on-float32", "step-with-rtol", "too-many-steps", "steps-on-elementwise", "unknown-dtype", "dtype-mismatch"],
)
def test_low_precision_errors_are_clear(rowquant, mutate, field_part, words):
    mutate(rowquant)
    err = error_of(rowquant)
    assert field_part in err.field and words in str(err), str(err)


def test_low_precision_scalar_parameter_is_refused(rowquant):
    for f in [rowquant / "kernel.cu", *(rowquant / "rewrites").glob("*.cu"), *(rowquant / "wrong").glob("*.cu")]:
        edit(f, "int cols)", "int cols, __half alpha)")
    edit(rowquant / "family.toml", "[buffers.x]", "[params]\nalpha = 1.0\n\n[buffers.x]")
    text = (rowquant / "family.toml").read_text().replace('args = ["x", "q", "s", "cols"]', 'args = ["x", "q", "s", "cols", "alpha"]')
    (rowquant / "family.toml").write_text(text)
    err = error_of(rowquant)
    assert "scalar parameter alpha is __half" in str(err) and "convert inside the kernel" in str(err)


# --------------------------------------------------------------------------- targets, allow_spills, gpu_gate_only, clusters


def _set_top(d: Path, line: str) -> None:
    edit(d / "family.toml", 'set = "hard"', f'set = "hard"\n{line}')


def test_needs_gives_the_targets_and_is_checked_against_the_code(rowquant):
    from plugins.family.catalog import Catalog
    from plugins.family.compile import ARCHS

    fam = load_family(rowquant)  # the fixture declares 8.9: fp8 conversions
    assert fam.needs == "8.9" and fam.needs_why == "hardware fp8 conversions"
    assert fam.targets == tuple(a for a in ARCHS if a not in ("sm_80", "sm_86"))
    assert fam.targets_gpu("8.9") and fam.targets_gpu("12.1") and not fam.targets_gpu("8.6")
    cases, ids = Catalog.load(rowquant.parent).cases("compile_case")
    assert {c[2] for c in cases} == set(fam.targets) and not any(i.endswith("/sm_80") for i in ids)
    toml = (rowquant / "family.toml").read_text()
    (rowquant / "family.toml").write_text(toml.replace('compute_capability = "8.9"', 'compute_capability = "8.0"'))
    with pytest.raises(FamilyError) as exc:
        load_family(rowquant)
    assert str(exc.value).startswith(f"{_rel_or_abs(rowquant / 'kernel.cu')}:5: uses hardware fp8 conversions")
    assert 'declare [needs] compute_capability = "8.9"' in exc.value.fix
    (rowquant / "family.toml").write_text(toml.replace('compute_capability = "8.9"', 'compute_capability = "9.0"'))
    with pytest.raises(FamilyError, match="needs.why.*above what any candidate's code shows"):
        load_family(rowquant)
    (rowquant / "family.toml").write_text(toml.replace('compute_capability = "8.9"', 'compute_capability = "9.0"\nwhy = "the tile needs 228 KB of shared memory"'))
    assert load_family(rowquant).needs_text == "compute capability 9.0 (the tile needs 228 KB of shared memory)"
    (rowquant / "family.toml").write_text(toml.replace('compute_capability = "8.9"', 'compute_capability = "7.5"'))
    with pytest.raises(FamilyError, match="needs.compute_capability.*is 7.5"):
        load_family(rowquant)
    _set_top(rowquant, 'targets = ["sm_90"]')
    with pytest.raises(FamilyError, match="targets.*a family now declares what it needs"):
        load_family(rowquant)


def _rel_or_abs(p):
    from plugins.family.manifest import _rel

    return _rel(p)


@pytest.mark.parametrize(
    "line, field_part, words",
    [
        ('targets = ["sm_80"]', "targets", "a family now declares what it needs"),
        ('gpu_gate_only = [{ id = "nope", why = "inline PTX" }]', "gpu_gate_only[0].id", "not a candidate"),
        ('gpu_gate_only = [{ id = "wide", why = " " }]', "gpu_gate_only[0].why", "is empty"),
        ('gpu_gate_only = [{ id = "wide" }]', "gpu_gate_only[0].why", "missing"),
        ('pair = 3', "pair", "expected"),
    ],
)
def test_hard_field_errors_are_clear(rowquant, line, field_part, words):
    _set_top(rowquant, line)
    err = error_of(rowquant)
    assert field_part == err.field and words in str(err), str(err)


def test_gpu_gate_only_and_allow_spills_are_read(rowquant):
    _set_top(rowquant, 'gpu_gate_only = [{ id = "packed", why = "inline PTX cvt (example)" }]')
    edit(rowquant / "family.toml", 'file = "rewrites/narrow.cu"', 'file = "rewrites/narrow.cu"\nallow_spills = true')
    fam = load_family(rowquant)
    assert fam.gpu_gate_only == {"packed": "inline PTX cvt (example)"}
    assert [c.id for c in fam.all_candidates if c.allow_spills] == ["narrow"]


def test_spills_fail_unless_allowed():
    from plugins.family.compile import CompileResult, KernelResources

    res = CompileResult("sm_90", True, "", (KernelResources("k0", "sm_90", 128, 0, 0, 556, 444),), 0.0)
    assert res.problems() == ["k0 on sm_90 spills: 556 B stores, 444 B loads"]
    assert res.problems(allow_spills=True) == []


def test_cluster_plans_are_checked(rowquant):
    for f in [rowquant / "kernel.cu", *(rowquant / "rewrites").glob("*.cu"), *(rowquant / "wrong").glob("*.cu")]:
        edit(f, '__global__ void k0', '__global__ void __cluster_dims__(2, 1, 1) k0')
    edit(rowquant / "family.toml", 'compute_capability = "8.9"', 'compute_capability = "9.0"')  # clusters need 9.0
    err = error_of(rowquant)  # the gate shapes have 3 and 5 rows: odd grids
    assert err.field == "start.launch[0].grid" and "not a multiple of k0's __cluster_dims__(2, 1, 1)" in str(err)
    for f in [rowquant / "kernel.cu", *(rowquant / "rewrites").glob("*.cu"), *(rowquant / "wrong").glob("*.cu")]:
        edit(f, '__cluster_dims__(2, 1, 1)', '__cluster_dims__(16, 1, 1)')
    err = error_of(rowquant)
    assert "16 CTAs per cluster" in str(err) and "at most 8" in str(err)
