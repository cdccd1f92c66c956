"""A key of any GPU exports, builds items and scores: nothing downstream of the measure stage
lists GPUs. The measurement files are SYNTHETIC FIXTURES written in tmp_path by the measure
stage's own writer (plugins/measure/keyfile.py write_key); their times are fixture digits, not
measurements, and the device facts are a fixture's, not a device's report."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from plugins.items.build import build_items, main, read_jsonl
from plugins.measure.keyfile import SCHEMA, write_key
from plugins.score.session import Options, ScoringSession

ROOT = Path(__file__).resolve().parents[2]
SYNTH = ROOT / "tests" / "fixtures" / "items" / "synth_scale"
FIXTURE_TIMES_MS = {"start": 12.3456789, "rw_one": 7.6543219, "rw_grid": 3.2109876, "rw_two": 1.0987654, "rw_stage": 9.8765432}


def fixture_measurement(gpu: dict) -> dict:
    """A kept key on `gpu` (rw_two fastest), in the shape keyfile.load_key reads."""
    order = sorted((k for k in FIXTURE_TIMES_MS if k != "start"), key=FIXTURE_TIMES_MS.get)
    return {
        "schema": SCHEMA, "family": "synth_scale", "gpu": gpu,
        "provenance": {"date": "2000-01-01T00:00:00Z", "git_commit": "synthetic", "command": "SYNTHETIC TEST FIXTURE"},
        "protocol": {}, "sizes": {"n": 1048576}, "gate": {},
        "candidates": {k: {"time_ms": v} for k, v in FIXTURE_TIMES_MS.items()},
        "ranking": {"order": order, "winner": order[0], "runner_up": order[1],
                    "ratio": FIXTURE_TIMES_MS[order[1]] / FIXTURE_TIMES_MS[order[0]], "kept": True, "reason": ""},
    }


B200 = {"name": "NVIDIA B200", "slug": "b200", "compute_capability": "10.0", "sm_count": 148,
        "l2_bytes": 132644864, "mem_clock_max_mhz": 4000, "memory_bus_width_bits": 8192}
RTX_4090 = {"name": "NVIDIA GeForce RTX 4090", "slug": "rtx-4090", "compute_capability": "8.9", "sm_count": 128}


@pytest.fixture
def repo(tmp_path) -> Path:
    shutil.copytree(SYNTH, tmp_path / "families" / "synth_scale")
    return tmp_path


def test_a_b200_key_exports_builds_and_scores_without_naming_its_gpu_anywhere(repo, monkeypatch, capsys):
    write_key(repo / "families" / "synth_scale", "b200", fixture_measurement(B200))
    monkeypatch.chdir(repo)
    # export with no --key: the one measured key is used
    assert main(["export", "--families", "families", "--out", "items.jsonl"]) == 0
    assert "(key b200: measured)" in capsys.readouterr().out
    items = read_jsonl(repo / "items.jsonl")
    assert [it.id for it in items] == ["synth_scale/source/forward", "synth_scale/source/mirror"]  # no slip here
    line = "Target GPU: NVIDIA B200 (148 SMs, compute capability 10.0, 126.5 MB L2, about 8.2 TB/s DRAM)\n"
    for it in items:
        assert line in it.prompt and "grid  = sm_count * 4 = 592" in it.prompt  # sized by the record's SM count
        assert (it.key.gpu, it.key.measured, it.key.gpu_name, it.key.sm_count) == ("b200", True, "NVIDIA B200", 148)
        assert it.key.file == "families/synth_scale/measurements/b200.json"
        assert it.options[["A", "B", "C", "D"].index(it.answer)].rewrite == "rw_two"
    # scoring with no --key: the session builds the same items on the same key
    s = ScoringSession(Options(model="always-a", rootdir=repo, run_dir=Path("run")), worker=False)
    s.prepare()
    assert [c.item.prompt for c in s.cases] == [it.prompt for it in items]
    for c in s.cases:
        props: list = []
        s.score(c, props, object())
        s.note("call", props)
        assert dict(props)["key"] == "b200"
    lines = s.finish()
    assert lines[0].startswith("SparkTrace score: model always-a, set classic, key b200 (measured)")


def test_a_key_whose_gpu_a_family_cannot_run_leaves_it_out_by_compute_capability(repo, capsys, monkeypatch):
    """The record's compute capability decides (Family.targets_gpu): an 8.9 GPU runs a family needing 8.0
    and leaves out one that declares 9.0."""
    write_key(repo / "families" / "synth_scale", "rtx-4090", fixture_measurement(RTX_4090))
    items, notes = build_items(repo / "families", "rtx-4090")
    assert items and all("NVIDIA GeForce RTX 4090" in it.prompt for it in items)
    toml = repo / "families" / "synth_scale" / "family.toml"
    toml.write_text(toml.read_text() + '\n[needs]\ncompute_capability = "9.0"\nwhy = "a test fixture\'s stated need"\n')
    items, notes = build_items(repo / "families", "rtx-4090")
    assert items == [] and notes == [
        "synth_scale: needs compute capability 9.0 (a test fixture's stated need); rtx-4090 is 8.9, no items"]
    monkeypatch.chdir(repo)
    assert main(["export", "--families", "families", "--out", "x.jsonl"]) == 1  # the one measured key, no item
    err = capsys.readouterr().err
    assert "no item on key rtx-4090" in err and "rtx-4090 is 8.9" in err
