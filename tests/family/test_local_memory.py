"""Local memory in the compile checks (issue 10, item 2), clean compiler logs and
the generated resources file (item 7)."""
from __future__ import annotations

import json
from pathlib import Path

from plugins.family.catalog import ResourceLog
from plugins.family.compile import (
    KernelResources,
    clean_log,
    compile_source,
    first_error,
    local_counts,
)

ROOT = Path(__file__).resolve().parents[2]

LOCAL_ARRAY = """
extern "C" __global__ void k0(const float* __restrict__ x, float* __restrict__ out, int n)
{
    float buf[2048];
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    for (int i = 0; i < 2048; ++i) buf[i] = x[(t + i) % n];
    if (t < n) out[t] = buf[(t * 7) % 2048];
}
"""

REGISTERS_ONLY = """
extern "C" __global__ void k0(const float* __restrict__ x, float* __restrict__ out, int n)
{
    float buf[4];
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    #pragma unroll
    for (int i = 0; i < 4; ++i) buf[i] = x[(t + i) % n];
    if (t < n) out[t] = buf[0] + buf[3];
}
"""


def test_a_dynamically_indexed_array_is_local_memory_with_its_numbers():
    res = compile_source(LOCAL_ARRAY, "sm_90", "local.cu")
    assert res.ok, res.log
    (r,) = res.resources
    assert r.stack_bytes >= 8192 and r.spill_store_bytes == 0  # no spill: only the stack frame tells
    assert r.local_loads >= 1 and r.local_stores >= 1
    (problem,) = res.problems()
    assert f"{r.stack_bytes} B stack frame" in problem and "local loads" in problem and "sm_90" in problem
    assert res.problems(allow_local=True) == []


def test_registers_only_kernel_has_no_local_memory():
    res = compile_source(REGISTERS_ONLY, "sm_90", "regs.cu")
    (r,) = res.resources
    assert (r.stack_bytes, r.local_loads, r.local_stores) == (0, 0, 0) and res.problems() == []


def test_local_counts_are_per_entry():
    ptx = """
.visible .entry k0(
    .param .u64 k0_param_0
)
{
    .local .align 4 .b8 __local_depot0[16];
    st.local.f32 [%rd1], %f1;
    @%p1 ld.local.f32 %f2, [%rd1];
    ld.global.f32 %f3, [%rd2];
}
.visible .entry k1()
{
    ret;
}
"""
    assert local_counts(ptx) == {"k0": (1, 1), "k1": (0, 0)}


def test_spill_space_alone_is_not_local_memory():
    spill = KernelResources("k0", "sm_90", 255, 0, stack_bytes=64, spill_store_bytes=64, spill_load_bytes=64)
    frame = KernelResources("k0", "sm_90", 32, 0, stack_bytes=16, spill_store_bytes=0, spill_load_bytes=0)
    assert not spill.uses_local and frame.uses_local


def test_logs_carry_no_nul_and_name_the_line():
    res = compile_source('extern "C" __global__ void k0(float* out)\n{\n    out[0] = undefined_name;\n}\n', "sm_90", "bad.cu")
    assert not res.ok and "\x00" not in res.log
    assert first_error(res.log)[0] == 3
    assert clean_log("a\x00b\n\x00 \n") == "ab"


def test_resources_file_is_whole_sorted_and_drops_gone_families(tmp_path):
    fams = tmp_path / "families"
    (fams / "kept").mkdir(parents=True)
    (fams / "kept" / "family.toml").write_text('[start]\nfile = "kernel.cu"\n[[rewrites]]\nid = "a"\n'
                                               '[[wrong]]\nid = "w"\n')
    (fams / "nostart").mkdir()
    (fams / "nostart" / "family.toml").write_text('[[rewrites]]\nid = "start"\n')  # no [start] table
    (fams / "broken").mkdir()
    (fams / "broken" / "family.toml").write_text('[start\n')
    (fams / "odd").mkdir()
    (fams / "odd" / "family.toml").write_text('rewrites = 5\nwrong = "w"\n[start]\nfile = "kernel.cu"\n')
    out = tmp_path / "resources.json"
    out.write_text(json.dumps({"gone/start/sm_90/k0": {"registers": 1}, "kept/old_rewrite/sm_90/k0": {"registers": 2},
                               "kept/a/sm_90/k0": {"registers": 3}, "kept/w/sm_80/k0": {"registers": 4},
                               "kept/start/sm_80/k0": {"registers": 5}, "nostart/start/sm_90/k0": {"registers": 6},
                               "broken/start/sm_90/k0": {"registers": 7}, "kept/a/sm_90": {"registers": 8},
                               "odd/start/sm_90/k0": {"registers": 10}, "odd/w/sm_90/k0": {"registers": 11}}))
    row = {"registers": 9, "stack_bytes": 0, "local_loads": 0, "local_stores": 0}
    log = ResourceLog(out, families_root=fams)
    log.add([("ptxas_resources", json.dumps({"kept/start/sm_90/k0": row}))])
    log.write()
    first = out.read_text()
    assert list(json.loads(first)) == ["kept/a/sm_90/k0", "kept/start/sm_80/k0", "kept/start/sm_90/k0", "kept/w/sm_80/k0",
                                       "odd/start/sm_90/k0"]
    log.write()
    assert out.read_text() == first  # the same tree gives the same bytes


def test_resources_file_reads_each_family_toml_once_per_write(tmp_path, monkeypatch):
    """The merged file holds a row per candidate, target and kernel (2,903 today): a session of one
    family parsed another family's family.toml for each of its rows (3.3 s at the end)."""
    import tomllib

    from plugins.family import catalog

    fams = tmp_path / "families"
    (fams / "f").mkdir(parents=True)
    (fams / "f" / "family.toml").write_text('[start]\nfile = "kernel.cu"\n[[rewrites]]\nid = "a"\n')
    out = tmp_path / "resources.json"
    out.write_text(json.dumps({f"f/{c}/sm_{a}/k{k}": {"registers": 1} for c in ("start", "a") for a in (80, 90) for k in range(5)}))
    parsed, loads = [], tomllib.loads
    monkeypatch.setattr(catalog.tomllib, "loads", lambda text: parsed.append(text) or loads(text))
    log = ResourceLog(out, families_root=fams)
    log.add([("ptxas_resources", json.dumps({"f/start/sm_90/k9": {"registers": 2}}))])
    log.write()
    assert len(json.loads(out.read_text())) == 21 and len(parsed) == 1


def test_resources_file_is_not_committed():
    ignored = (ROOT / ".gitignore").read_text().split()
    assert "reports/resources.json" in ignored
    assert not any("resources.json" in p.read_text() for p in (ROOT / "tests").rglob("*.py")
                   if p.name not in ("test_local_memory.py", "test_gpu_machine_imports.py"))


def test_compile_check_reports_local_memory_and_allow_local_silences_it(project):
    """In a real run: one failure naming the file, the numbers and the allow_local field; then none with the opt-in."""
    import shutil

    pytester = project
    shutil.copy(ROOT / "tests" / "family" / "test_families.py", pytester.path / "tests" / "test_families.py")
    fam = pytester.path / "families" / "gather_rows"
    shutil.copytree(ROOT / "tests" / "fixtures" / "families" / "gather_rows", fam)
    body = LOCAL_ARRAY.replace("int n)", "int R, int C)").replace("% n", "% (R * C)").replace("t < n", "t < R * C")
    (fam / "rewrites" / "warp_row.cu").write_text(body.replace("const float* __restrict__ x, float*",
                                                               "const float* __restrict__ x, const int* __restrict__ idx, float*"))
    args = ("tests/test_families.py", "-p", "no:cacheprovider", "-k", "compiles", "--resources-out=r.json")
    result = pytester.runpytest_subprocess(*args)
    from plugins.family.compile import ARCHS

    n = len(ARCHS)  # six candidates on every target; warp_row fails on the first, skips on the others
    result.assert_outcomes(passed=6 * n - n, failed=1, skipped=n - 1)
    out = result.stdout.str()
    first = ARCHS[0]
    assert f"warp_row.cu: k0 on {first} uses local memory: " in out and "allow_local = true in [rewrites[2]] of family.toml" in out
    assert f"already failed on {first}; reported once" in out
    toml = fam / "family.toml"
    toml.write_text(toml.read_text().replace('file = "rewrites/warp_row.cu"', 'file = "rewrites/warp_row.cu"\nallow_local = true'))
    again = pytester.runpytest_subprocess(*args)
    again.assert_outcomes(passed=6 * n)
    rows = json.loads((pytester.path / "r.json").read_text())
    assert rows["gather_rows/warp_row/sm_90/k0"]["stack_bytes"] >= 8192 and rows["gather_rows/warp_row/sm_90/k0"]["local_loads"] >= 1
