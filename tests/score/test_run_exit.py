"""A finished scoring run exits 0 whatever the score (issue 10, item 9).

`python -m plugins.score run` (what `make run` and `make dry-run` call) reads
the junit sheet: misses are the result; errors, fatal model errors, omitted
items and usage errors are not. `pytest --model` keeps pytest's codes. The
runs use the baselines on the SYNTHETIC FIXTURE items (answers arbitrary).
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from plugins.items.build import read_jsonl
from plugins.score.runexit import read_sheet, run_exit_code

ROOT = Path(__file__).resolve().parents[2]
ITEMS = Path(__file__).parents[1] / "fixtures" / "scoring" / "synthetic_items.jsonl"  # SYNTHETIC FIXTURE


@pytest.fixture
def scoring_project(project):
    shutil.copy(ROOT / "tests" / "score" / "test_items_model.py", project.path / "tests")
    shutil.copy(ITEMS, project.path / "items.jsonl")
    return project


def wrapper(project, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(project.path)}
    return subprocess.run([sys.executable, "-m", "plugins.score", "run", "-p", "no:cacheprovider", "--items", "items.jsonl", *args],
                          cwd=project.path, env=env, capture_output=True, text=True, timeout=300)


def test_misses_are_the_score_not_a_failure(scoring_project):
    answers = [it.answer for it in read_jsonl(ITEMS)]
    assert "A" in answers and set(answers) != {"A"}, "the fixture must give always-a both hits and misses"
    direct = scoring_project.runpytest_subprocess("-p", "no:cacheprovider", "--items", "items.jsonl", "--model", "always-a",
                                                  "--junitxml=direct.xml", timeout=180)
    assert direct.ret == 1  # pytest --model keeps pytest's code: misses fail their tests
    counts = read_sheet(scoring_project.path / "direct.xml")
    assert counts.misses == answers.count("B") + answers.count("C") + answers.count("D") and not counts.broken
    r = wrapper(scoring_project, "--model", "always-a", "--junitxml=run.xml")
    assert r.returncode == 0, r.stderr
    assert re.search(rf"run completed: {len(answers)} item\(s\) scored, {counts.misses} missed", r.stderr)


def test_usage_error_keeps_its_code(scoring_project):
    r = wrapper(scoring_project, "--model", "always-a", "--passes", "0")
    assert r.returncode == 4 and "usage error" in r.stderr


def test_dead_server_is_not_a_completed_run(scoring_project):
    (scoring_project.path / "reg.toml").write_text(
        '[models.dead]\nbase_url = "http://127.0.0.1:9/v1"\nmodel_id = "nobody"\nmax_attempts = 1\n')
    r = wrapper(scoring_project, "--model", "dead", "--registry", "reg.toml", "-x")
    assert r.returncode == 1 and "omitted" in r.stderr, r.stderr


def test_an_erroring_test_is_not_a_miss(scoring_project):
    (scoring_project.path / "tests" / "conftest.py").write_text(
        "import pytest\n\n@pytest.fixture(autouse=True)\ndef broken():\n    raise RuntimeError('fixture broke')\n")
    r = wrapper(scoring_project, "--model", "always-a")
    assert r.returncode == 1 and "broke, not scored" in r.stderr and "fixture broke" in r.stderr


def test_no_arguments_is_a_usage_error():
    r = subprocess.run([sys.executable, "-m", "plugins.score"], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert r.returncode == 4 and "usage: python -m plugins.score run" in r.stderr


@pytest.mark.parametrize("code", [2, 3, 4, 5])
def test_pytest_errors_pass_through(code, tmp_path):
    assert run_exit_code(code, tmp_path / "missing.xml").code == code


def test_exit_one_without_a_sheet_is_an_error(tmp_path):
    assert run_exit_code(1, tmp_path / "missing.xml").code == 1
    (tmp_path / "bad.xml").write_text("<testsuites><testsuite>")
    assert run_exit_code(1, tmp_path / "bad.xml").code == 1


def test_make_run_and_dry_run_use_the_wrapper():
    make = (ROOT / "Makefile").read_text()
    for target, sub in (("run", "local"), ("dry-run", "run")):
        recipe = re.search(rf"^{target}:.*\n((?:\t.*\n)+)", make, re.M).group(1)
        assert f"-m plugins.score {sub}" in recipe and "pytest -v" not in recipe, recipe
    run = re.search(r"^run:.*\n((?:\t.*\n)+)", make, re.M).group(1)
    assert "-m plugins.site reports/runs --out reports/site" in run  # then the site, whose index it prints


def test_make_run_scores_the_measured_key_else_the_intended_one(monkeypatch):
    """`python -m plugins.score local` (make run): the measured key when any family has items on it,
    otherwise the intended winners with --key-intended and their own run folder."""
    import plugins.items.build as build
    from plugins.score.__main__ import local_args

    args, why = local_args(["-x"], ROOT)  # nothing is measured in this repository yet
    assert "--key-intended" in args and "--run-dir=reports/runs/local-intended" in args and args[-1] == "-x"
    assert "intended winners" in why and "NOT MEASURED" in why
    fake = [read_jsonl(ITEMS)[0]]  # SYNTHETIC FIXTURE: stands in for a measured item
    monkeypatch.setattr(build, "build_items", lambda *a, **k: (fake, []))
    args, why = local_args(["--key", "gb10", "--set=hard"], ROOT)
    assert "--key-intended" not in args and "--run-dir=reports/runs/local" in args
    assert args[args.index("--key") + 1] == "gb10" and "--set=hard" in args and "measured" in why


def test_make_run_without_key_takes_the_one_measured_key_and_stops_on_several(tmp_path):
    """No KEY=: the one GPU key any family measured (its records name the device), several: one error."""
    from plugins.measure.keyfile import SCHEMA, write_key
    from plugins.score.__main__ import local_args

    fams = tmp_path / "families"
    shutil.copytree(ROOT / "tests" / "fixtures" / "items" / "synth_scale", fams / "synth_scale")
    args, _ = local_args([], tmp_path)
    assert args[args.index("--key") + 1] == "h200" and "--key-intended" in args  # the stand-in's key
    # SYNTHETIC fixture: a device record whose family was dropped (no times, nothing kept)
    device = {"schema": SCHEMA, "family": "synth_scale", "provenance": {}, "protocol": {}, "candidates": {}, "gate": {},
              "ranking": {"kept": False, "reason": "SYNTHETIC fixture"},
              "gpu": {"name": "NVIDIA B200", "sm_count": 148, "compute_capability": "10.0"}}
    write_key(fams / "synth_scale", "b200", device)
    args, why = local_args([], tmp_path)
    assert args[args.index("--key") + 1] == "b200" and "--key-intended" in args  # nothing kept on it: dry run
    assert "measured key b200" in why
    write_key(fams / "synth_scale", "rtx-4090", {**device, "gpu": {**device["gpu"], "name": "NVIDIA GeForce RTX 4090"}})
    with pytest.raises(SystemExit, match=r"several GPU keys \['b200', 'rtx-4090'\]"):
        local_args([], tmp_path)
