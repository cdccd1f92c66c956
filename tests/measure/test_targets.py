"""A family is measured only on GPUs its `targets` declare; elsewhere it is skipped with the reason."""
from __future__ import annotations

import shutil
from pathlib import Path

from plugins.family.manifest import load_family
from plugins.measure.session import MeasureConfig, MeasureSession

HARD = Path(__file__).resolve().parents[1] / "fixtures" / "hardfams"


class RefusingExecutor:
    name = "refusing (test fixture)"
    sm_count = 4

    def run(self, fam, cand, shape, buffers):
        raise AssertionError("a family that does not target this GPU must not be run on it")


def test_family_not_targeting_the_gpu_is_skipped(tmp_path):
    d = tmp_path / "rowquant"
    shutil.copytree(HARD / "rowquant", d, ignore=shutil.ignore_patterns("__pycache__"))
    (d / "family.toml").write_text((d / "family.toml").read_text().replace('set = "hard"', 'set = "hard"\ntargets = ["sm_90"]'))
    fam = load_family(d)
    cfg = MeasureConfig(out_root=tmp_path / "out", repo=Path("."), families_root=tmp_path, command="pytest -m measure (test)")
    s = MeasureSession(cfg, RefusingExecutor(), lambda *a: None, gpu={"name": "GB10 (test fixture)", "slug": "gb10", "compute_capability": "12.1"},
                       provenance={}, seeds=lambda n: tuple(range(n)), new_seed=lambda: 1)
    out = s.measure(fam)
    assert out.not_measured == "not a target: rowquant declares targets ['sm_90']; this GPU is ['gb10', 'sm_121']"
    assert out.error == "" and out.key_path is None and out.slip["status"] == "skipped"
    assert out.summary()["reason"] == out.not_measured


def test_a_hopper_only_target_runs_on_an_sm_90_gpu():
    from types import SimpleNamespace

    from plugins.measure.session import target_mismatch

    h200 = {"slug": "h200", "compute_capability": "9.0"}
    assert target_mismatch(SimpleNamespace(name="f", targets=("sm_90a",)), h200) == ""
    assert "declares targets ['sm_90a']" in target_mismatch(SimpleNamespace(name="f", targets=("sm_90a",)), {"slug": "gb10", "compute_capability": "12.1"})
