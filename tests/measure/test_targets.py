"""Which families a GPU measures: from each family's [needs], the device's reported name and compute capability."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from plugins.family.catalog import Catalog
from plugins.family.manifest import load_family
from plugins.measure.session import MeasureConfig, MeasureSession
from plugins.measure.targets import DEVICES, coverage, family_skip, gpu_table, unsupported

HARD = Path(__file__).resolve().parents[1] / "fixtures" / "hardfams"
FAMILIES = Path(__file__).resolve().parents[2] / "families"
RTX_4090 = {"name": "NVIDIA GeForce RTX 4090", "slug": "rtx-4090", "compute_capability": "8.9"}


class RefusingExecutor:
    name = "refusing (test fixture)"
    sm_count = 4

    def run(self, fam, cand, shape, buffers):
        raise AssertionError("a family this GPU cannot run must not be run on it")


@pytest.fixture(scope="module")
def fams():
    return Catalog.load(FAMILIES).families


@pytest.fixture
def rowquant(tmp_path):
    d = tmp_path / "rowquant"
    shutil.copytree(HARD / "rowquant", d, ignore=shutil.ignore_patterns("__pycache__"))
    return d


def test_a_family_above_the_gpu_is_skipped_with_its_reason(rowquant, tmp_path):
    fam = load_family(rowquant)  # fp8 conversions: needs 8.9
    cfg = MeasureConfig(out_root=tmp_path / "out", repo=Path("."), families_root=tmp_path, command="pytest -m measure (test)")
    a100 = {"name": "NVIDIA A100-SXM4-80GB", "slug": "a100-sxm4-80gb", "compute_capability": "8.0"}
    s = MeasureSession(cfg, RefusingExecutor(), lambda *a: None, gpu=a100,
                       provenance={}, seeds=lambda n: tuple(range(n)), new_seed=lambda: 1)
    out = s.measure(fam)
    assert out.not_measured == ("skipped: rowquant needs compute capability 8.9 (hardware fp8 conversions); "
                                "this GPU is NVIDIA A100-SXM4-80GB, 8.0")
    assert out.error == "" and out.key_path is None and out.slip["status"] == "skipped"
    assert out.summary()["reason"] == out.not_measured


def test_the_issue_s_example_message():
    fam = load_family(FAMILIES / "softmax_vocab")
    assert family_skip(fam, RTX_4090) == ("softmax_vocab needs compute capability 9.0 (thread block clusters); "
                                         "this GPU is NVIDIA GeForce RTX 4090, 8.9")
    assert family_skip(fam, {"name": "NVIDIA B200", "compute_capability": "10.0"}) == ""
    assert family_skip(fam, {"name": "NVIDIA GB10", "compute_capability": "12.1"}) == ""
    assert family_skip(fam, {"name": "test fixture"}) == ""  # an unknown capability is not judged


def test_every_family_runs_at_or_above_its_need_and_nowhere_below(fams):
    for f in fams:
        need = tuple(int(x) for x in f.needs.split("."))
        for name, cc in DEVICES:
            runs = not family_skip(f, {"name": name, "compute_capability": cc})
            assert runs == (tuple(int(x) for x in cc.split(".")) >= need), (f.name, name)


def test_the_summary_counts_what_this_gpu_runs_and_why_the_rest_are_out(fams):
    cov = coverage(fams, RTX_4090)
    lines = cov.lines()
    assert lines[0] == f"NVIDIA GeForce RTX 4090 (compute capability 8.9) can run {len(cov.runs)} of {len(fams)} families"
    out = {n for names in cov.out.values() for n in names}
    assert {"softmax_vocab", "softmax_attnrows", "dwconv7", "rmsnorm_fp8"} <= out
    assert "fp8_gemv_b16" in cov.runs  # fp8 needs 8.9: the 4090 has it
    assert any(line.startswith("  4 out, they need compute capability 9.0 (thread block clusters): ") for line in lines[1:])
    assert cov.key == "rtx-4090"


def test_a_gpu_below_every_family_is_one_message():
    why = unsupported({"name": "Tesla T4", "compute_capability": "7.5"})
    assert why.startswith("this GPU is Tesla T4, 7.5: SparkTrace's families need compute capability 8.0 or newer")
    assert "fix:" in why
    assert unsupported({"name": "NVIDIA A100", "compute_capability": "8.0"}) == ""


def test_the_unsupported_gpu_stops_before_any_work(monkeypatch, tmp_path):
    from plugins.measure import session as sess

    class T4:
        device_name, compute_capability = "Tesla T4", "7.5"

    state = sess.MeasureState(MeasureConfig(out_root=tmp_path, repo=tmp_path, families_root=tmp_path, command="t"),
                              markexpr="measure", families=None, in_worker=False)
    monkeypatch.setattr(state, "executor", lambda: (T4(), ""))
    monkeypatch.setattr(sess, "gpu_session", lambda *a: pytest.fail("no session may open on an unsupported GPU"))
    got, reason = state.session()
    assert got is None and reason.startswith(sess.UNSUPPORTED + "this GPU is Tesla T4, 7.5")


def test_the_gpu_table_names_the_key_and_what_each_gpu_skips(fams):
    rows = gpu_table(fams, [("NVIDIA H200 NVL", "9.0"), ("NVIDIA GeForce RTX 4090", "8.9"), ("Tesla T4", "7.5")])
    assert rows[2].startswith(f"| NVIDIA H200 NVL | 9.0 | `h200-nvl` | {len(fams)} of {len(fams)} families | none |")
    assert "`rtx-4090`" in rows[3] and "softmax_vocab" in rows[3] and "need 9.0 (thread block clusters)" in rows[3]
    assert "| nothing |" in rows[4]


def test_docs_gpu_table_is_current(fams):
    """docs/gpu-run.md carries the generated table; regenerate it with the command it names."""
    from plugins.measure.targets import docs_block

    doc = (FAMILIES.parent / "docs" / "gpu-run.md").read_text(encoding="utf-8")
    assert docs_block(fams) in doc, \
        "docs/gpu-run.md's GPU table is stale; fix: python -m plugins.measure.targets --docs docs/gpu-run.md"
