"""Key resolution: which GPU key a run uses and which device its prompts name (plugins/items/keys.py).
Every measurement file here is a SYNTHETIC fixture written by the measure stage's writer in tmp_path."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from plugins.items.build import main
from plugins.items.keys import (
    STAND_IN_PATH,
    KeyChoiceError,
    key_gpu,
    load_stand_in,
    measured_keys,
    resolve_key,
)
from plugins.items.prompt import Gpu
from plugins.measure.keyfile import SCHEMA, write_key

SYNTH = Path(__file__).parents[1] / "fixtures" / "items" / "synth_scale"


def device_record(name: str, slug: str, sm_count: int, cc: str, **more) -> dict:
    """Only the device part of a measurement record: enough for the key's GPU, never a time."""
    return {"schema": SCHEMA, "family": "synth_scale",
            "gpu": {"name": name, "slug": slug, "compute_capability": cc, "sm_count": sm_count, **more}}


@pytest.fixture
def fams(tmp_path) -> Path:
    root = tmp_path / "families"
    shutil.copytree(SYNTH, root / "synth_scale")
    return root


def test_the_stand_in_is_the_dry_runs_h200_and_says_it_is_no_measurement():
    stand_in = load_stand_in()
    assert stand_in.key == "h200" and stand_in.gpu == Gpu("NVIDIA H200", 132, "9.0")
    assert stand_in.gpu.label == "NVIDIA H200 (132 SMs, compute capability 9.0)"  # the snapshots' Target GPU line
    assert "not a measurement" in STAND_IN_PATH.read_text()


def test_a_broken_stand_in_names_its_file_and_field(tmp_path):
    bad = tmp_path / "stand-in.toml"
    bad.write_text('stand_in = "dry runs"\nname = "NVIDIA H200"\nsm_count = 0\ncompute_capability = "9.0"\n')
    with pytest.raises(KeyChoiceError, match=r"stand-in.toml: field 'sm_count' is 0"):
        load_stand_in(bad)
    bad.write_text('stand_in = "dry runs"\nname = "NVIDIA H200"\nsm_count = 132\ncompute_capability = "9.0"\n'
                   "l2_bytes = 1\n")
    with pytest.raises(KeyChoiceError, match=r"unknown fields \['l2_bytes'\]"):
        load_stand_in(bad)


def test_no_measured_key_is_the_stand_in_for_the_dry_run_else_one_clear_error(fams):
    assert measured_keys(fams) == ()
    assert resolve_key(fams, None, intended=True) == "h200"
    with pytest.raises(KeyChoiceError, match="no GPU has measured a key yet") as err:
        resolve_key(fams, None, intended=False)
    assert "pytest -m measure" in str(err.value) and "--key-intended" in str(err.value)
    assert resolve_key(fams, "b200", intended=False) == "b200"  # an explicit --key always wins


def test_one_measured_key_is_used_several_ask_for_key(fams):
    d = fams / "synth_scale"
    write_key(d, "rtx-4090", device_record("NVIDIA GeForce RTX 4090", "rtx-4090", 128, "8.9"))
    write_key(d, "rtx-4090", device_record("NVIDIA GeForce RTX 4090", "rtx-4090", 128, "8.9"))  # written beside
    assert len(list((d / "measurements").glob("rtx-4090*.json"))) == 2
    assert measured_keys(fams) == ("rtx-4090",)  # <key>.<stamp>.json beside it is no second key
    assert resolve_key(fams, None, intended=False) == resolve_key(fams, None, intended=True) == "rtx-4090"
    assert key_gpu(fams, "rtx-4090") == Gpu("NVIDIA GeForce RTX 4090", 128, "8.9")
    write_key(d, "b200", device_record("NVIDIA B200", "b200", 148, "10.0"))
    with pytest.raises(KeyChoiceError, match=r"several GPU keys \['b200', 'rtx-4090'\]; fix: choose one with --key"):
        resolve_key(fams, None, intended=True)
    assert resolve_key(fams, "b200", intended=False) == "b200"


def test_a_keys_gpu_is_its_record_the_stand_in_only_for_its_own_key(fams):
    assert key_gpu(fams, "h200") == load_stand_in().gpu and key_gpu(fams, "gb10") is None
    assert key_gpu(fams, "h200", stand_in_path=None) is None  # a measured build never reads the stand-in
    write_key(fams / "synth_scale", "h200", device_record("NVIDIA H200", "h200", 132, "9.0", l2_bytes=52428800))
    assert key_gpu(fams, "h200").l2_bytes == 52428800  # a measurement replaces the stand-in


def test_export_without_key_resolves_or_says_how(fams, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(["export", "--families", str(fams), "--out", str(tmp_path / "x.jsonl")]) == 2
    err = capsys.readouterr().err
    assert "no GPU has measured a key yet" in err and "--key-intended" in err and not (tmp_path / "x.jsonl").exists()
    assert main(["export", "--families", str(fams), "--key-intended", "--out", str(tmp_path / "d.jsonl")]) == 0
    assert "(key h200: NOT MEASURED" in capsys.readouterr().out
    assert main(["export", "--families", str(fams), "--key", "gb10", "--key-intended",
                 "--out", str(tmp_path / "g.jsonl")]) == 2
    assert "key 'gb10': no measurement" in capsys.readouterr().err
