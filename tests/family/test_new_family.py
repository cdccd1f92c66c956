"""A family written from families/README.md alone (tests/fixtures/families/gather_rows)
goes through `pytest --family` the way the README says: it collects, compiles,
passes the emulated gate, has its prompt snapshots written once, and yields
its items; `make family` runs the same thing without reinstalling anything."""
from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from plugins.items.build import build_items

ROOT = Path(__file__).resolve().parents[2]
NEW = ROOT / "tests" / "fixtures" / "families" / "gather_rows"
TESTS = ("family/test_families.py", "gate/test_gate_emulated.py", "gate/test_gate_gpu.py",
         "items/test_prompt.py", "items/test_snapshots.py", "family/test_option_heuristics.py")


def test_a_family_from_the_readme_passes_every_cpu_check(project):
    pytester = project
    for rel in TESTS:
        (pytester.path / "tests" / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / "tests" / rel, pytester.path / "tests" / rel)
    shutil.copytree(ROOT / "tests" / "fixtures" / "items", pytester.path / "tests" / "fixtures" / "items")
    shutil.copytree(ROOT / "prompts", pytester.path / "prompts")
    shutil.copytree(NEW, pytester.path / "families" / "gather_rows")
    base = ("-p", "no:cacheprovider", "-p", "no:xdist", "--family=gather_rows", "--resources-out=r.json")

    first = pytester.runpytest_subprocess(*base, "-k", "prompt_snapshot")
    first.assert_outcomes(failed=2)  # a new family's prompts have no snapshot yet
    first.stdout.fnmatch_lines(["*FAIL test_prompt_snapshot*", "*what to do: new or changed prompt: rerun with --snapshot-update*"])

    full = pytester.runpytest_subprocess(*base, "--snapshot-update", timeout=600)
    out = full.stdout.str()
    assert full.ret == 0, out
    for check in ("test_family_is_valid", "test_compiles", "test_entry_points_match_manifest", "test_gate_emulated",
                  "test_reference_matches_naive", "test_timing_size_is_sized_for_the_gpu", "test_prompt_snapshot"):
        assert any(line.startswith(f"ok   {check} ") for line in full.outlines), (check, out)
    assert "gather_rows: every CPU check passed" in out
    snaps = sorted(p.name for p in (pytester.path / "tests" / "items" / "__snapshots__").rglob("*.txt"))
    assert snaps == ["test_prompt_snapshot[gather_rows-source-forward].txt", "test_prompt_snapshot[gather_rows-source-mirror].txt"]

    again = pytester.runpytest_subprocess(*base, "-k", "snapshot")
    again.assert_outcomes(passed=2)

    # items: two source items until a GPU has measured it and captured its slip
    items, notes = build_items(pytester.path / "families", "h200", allow_intended=True, slips_root=pytester.path / "slips")
    assert sorted(it.id for it in items) == ["gather_rows/source/forward", "gather_rows/source/mirror"]
    measured, notes = build_items(pytester.path / "families", "h200", slips_root=pytester.path / "slips")
    assert measured == [] and any("gather_rows: no measurement for h200" in n for n in notes)


def test_unknown_family_is_a_usage_error(project):
    result = project.runpytest_subprocess("-p", "no:cacheprovider", "--family=nope")
    assert result.ret == 4 and "--family nope: no family directory 'nope'" in result.stderr.str()


def _make(*args: str, venv: Path) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MAKE")}
    return subprocess.run(["make", "-n", "-C", str(ROOT), *args, f"VENV={venv}"], capture_output=True, text=True, env=env, timeout=60)


def test_make_family_reuses_an_existing_venv(tmp_path):
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    (venv / "bin" / "pytest").write_text("")
    dry = _make("family", "NAME=gather_rows", "FAMILIES=tests/fixtures/families", venv=venv)
    assert dry.returncode == 0, dry.stderr
    assert "pip install" not in dry.stdout and "-m venv" not in dry.stdout
    assert f"{venv}/bin/pytest -n 2 --dist worksteal --family=gather_rows --families-root=tests/fixtures/families" in dry.stdout
    fresh = _make("family", "NAME=gather_rows", venv=tmp_path / "none")
    assert "-m venv" in fresh.stdout  # a fresh machine still gets one


def test_make_family_without_a_name_says_how(tmp_path):
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "pytest").write_text("")  # an existing venv: nothing to install, nothing run
    r = subprocess.run(["make", "-C", str(ROOT), "family", f"VENV={tmp_path}"], capture_output=True, text=True, timeout=60)
    assert r.returncode != 0 and "usage: make family NAME=" in r.stderr
