"""NVRTC's precompiled headers change the compile's speed only: the same cubin, the same ptxas report."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from plugins.cache.work import COUNTS
from plugins.family import pch
from plugins.family.compile import _nvrtc_compile
from plugins.family.manifest import load_family

FAMILY = Path(__file__).resolve().parents[2] / "families" / "wmma_ldm"  # mma.h and cuda_pipeline: the heavy headers


def _steady(log: str) -> list[str]:
    """The log without ptxas's timing lines (they differ run to run)."""
    return [ln for ln in log.splitlines() if "Compile time" not in ln]


@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
def test_precompiled_headers_build_the_same_binary(arch, monkeypatch):
    fam = load_family(FAMILY)
    cands = fam.all_candidates[:3]
    monkeypatch.setenv("SPARKTRACE_NO_PCH", "1")
    plain = [_nvrtc_compile(c.source, arch, c.path.name) for c in cands]
    monkeypatch.delenv("SPARKTRACE_NO_PCH")
    with_pch = [_nvrtc_compile(c.source, arch, c.path.name) for c in cands]  # the 2nd and 3rd reuse the 1st's PCH
    for c, a, b in zip(cands, plain, with_pch):
        assert a.ok and b.ok, c.id
        assert a.cubin == b.cubin, f"{c.path}: the PCH build's cubin differs on {arch}"
        assert a.resources == b.resources
        assert _steady(a.log) == _steady(b.log), f"{c.path}: the PCH build's log differs on {arch}"
        assert "Warning" not in b.log and "precompiled" not in b.log, b.log[:300]


# Where the PCH files go (plugins/family/pch.py): a killed or abruptly ended process must not
# leave gigabytes behind, and a running one must not pile them up.

_LEAKER = """
import json, os, sys, pathlib
from plugins.family.compile import _nvrtc_compile
from plugins.family.manifest import load_family
from plugins.family import pch
cand = load_family(pathlib.Path(sys.argv[1])).all_candidates[0]
assert _nvrtc_compile(cand.source, "sm_90", cand.path.name).ok
folder = pch.folder()
pathlib.Path(sys.argv[2]).write_text(json.dumps({"pid": os.getpid(), "folder": str(folder),
                                                 "files": sorted(p.name for p in folder.iterdir())}))
if sys.argv[3] == "exit":
    os._exit(0)  # what a killed run or an xdist worker that never reaches atexit does
sys.stdin.read()  # stays alive, holding its folder's lock, until the test closes stdin
"""


def _start(tmp_path: Path, how: str) -> tuple[subprocess.Popen, Path]:
    env = {**os.environ, pch.ENV: str(tmp_path / "pch"), "PYTHONPATH": str(FAMILY.parents[1])}
    env.pop("SPARKTRACE_NO_PCH", None)
    out = tmp_path / f"{how}.json"
    proc = subprocess.Popen([sys.executable, "-c", _LEAKER, str(FAMILY), str(out), how], env=env, stdin=subprocess.PIPE)
    return proc, out


def _wait_for(out: Path, proc: subprocess.Popen) -> dict:
    for _ in range(3000):
        if out.is_file():
            return json.loads(out.read_text())
        assert proc.poll() is None or out.is_file(), f"the compiling process ended with {proc.returncode}"
        time.sleep(0.1)
    raise AssertionError("the compiling process wrote nothing in 300 s")


def test_an_abruptly_ended_process_leaves_its_pch_only_in_its_own_folder_and_the_next_sweeps_it(tmp_path):
    proc, out = _start(tmp_path, "exit")
    proc.communicate(timeout=300)
    assert proc.returncode == 0
    got = _wait_for(out, proc)
    folder = Path(got["folder"])
    assert folder.parent == tmp_path / "pch" and folder.is_dir()
    assert pch.LOCK in got["files"] and any(f.endswith(".pch") for f in got["files"]), got["files"]
    assert not list(Path(tempfile.gettempdir()).glob(f"__nvrtc_auto_pch_{got['pid']}_*")), "NVRTC still wrote to /tmp"
    assert pch.sweep(tmp_path / "pch") == [folder]
    assert not folder.exists()


def test_the_sweep_leaves_live_processes_and_folders_that_are_not_its_own_alone(tmp_path):
    proc, out = _start(tmp_path, "live")
    try:
        folder = Path(_wait_for(out, proc)["folder"])
        foreign = tmp_path / "pch" / "someone-else"  # no lock file: not a PCH folder of ours
        foreign.mkdir()
        (tmp_path / "pch" / ".new-x").mkdir()  # a folder being made: never looked at
        assert pch.sweep(tmp_path / "pch") == []
        assert folder.is_dir() and list(folder.glob("*.pch"))
    finally:
        proc.communicate(b"", timeout=60)  # stdin closed: it exits normally, and NVRTC removes its PCH files
    assert proc.returncode == 0
    folder.mkdir(exist_ok=True)
    (folder / pch.LOCK).touch()  # as a killed process would leave it
    assert pch.sweep(tmp_path / "pch") == [folder]
    assert foreign.is_dir() and (tmp_path / "pch" / ".new-x").is_dir()


def test_prune_removes_the_least_recently_used_pch_files_down_to_the_cap_and_keeps_the_last(tmp_path):
    files = {name: tmp_path / f"{name}.pch" for name in ("a_0", "b_1", "c_2", "d_3")}
    for f, size in zip(files.values(), [400, 300, 200, 100]):
        f.write_bytes(b"x" * size)
    (tmp_path / "notes.txt").write_bytes(b"x" * 1000)  # not NVRTC's: never touched
    for name in ("d_3", "a_0", "c_2", "b_1"):  # the order NVRTC's messages name them in
        pch.note_use(tmp_path, f'"k.cu": using precompiled header file "{files[name]}"')
    assert pch.prune(tmp_path, max_bytes=650) == [files["d_3"], files["a_0"]]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["b_1.pch", "c_2.pch", "notes.txt"]
    assert pch.prune(tmp_path, max_bytes=0) == [files["c_2"]]  # the last used stays even over the cap
    assert pch.prune(tmp_path, max_bytes=0) == []
    shutil.rmtree(tmp_path)
    assert pch.prune(tmp_path) == []  # a folder removed under it is no error


def test_nvrtcs_pch_messages_mark_what_was_used_and_leave_the_log(tmp_path):
    mine, other = tmp_path / "mine", tmp_path / "other"
    used, elsewhere = mine / "pipeline_1.pch", other / "x_0.pch"
    made, evicted = COUNTS["nvrtc_pch_create"], COUNTS["nvrtc_pch_evict"]
    log = (f'"a.cu": using precompiled header file "{used}"\n'
           f'"a.cu": creating precompiled header file "{elsewhere}"\n'
           "ptxas info    : Used 8 registers")
    assert pch.note_use(mine, log) == "ptxas info    : Used 8 registers"
    assert COUNTS["nvrtc_pch_create"] == made + 1  # the work report counts what NVRTC made
    assert used in pch._USED and elsewhere not in pch._USED  # outside the folder: not ours
    mine.mkdir()
    (mine / "kernel_0.pch").write_bytes(b"x")
    used.write_bytes(b"x")
    assert pch.prune(mine, max_bytes=1) == [mine / "kernel_0.pch"]  # never noted: first out
    assert COUNTS["nvrtc_pch_evict"] == evicted + 1


@pytest.fixture
def own_pch_folder(tmp_path, monkeypatch):
    """A PCH folder of the test's own: release() then cannot remove the worker's."""
    monkeypatch.setenv(pch.ENV, str(tmp_path))
    monkeypatch.delenv("SPARKTRACE_NO_PCH", raising=False)
    monkeypatch.setattr(pch, "_OWNED", {})
    monkeypatch.setattr(pch, "_USED", {})
    yield tmp_path
    pch.release()


def test_a_compile_after_its_pch_was_used_or_removed_gives_the_same_record(own_pch_folder):
    a, b = load_family(FAMILY).all_candidates[:2]
    first = _nvrtc_compile(a.source, "sm_80", a.path.name)
    folder = pch.folder()
    made = {p: seq for p, seq in pch._USED.items()}
    assert made and all(p.parent == folder and p.is_file() for p in made), made  # NVRTC's paths are ours
    assert _nvrtc_compile(b.source, "sm_80", b.path.name).ok  # the same headers first: it uses a's PCH
    assert any(pch._USED[p] > seq for p, seq in made.items()), "the PCH b used was not marked as used"
    shutil.rmtree(folder)
    again = _nvrtc_compile(a.source, "sm_80", a.path.name)
    assert (folder / pch.LOCK).is_file() and list(folder.glob("*.pch"))
    assert again.ok and again.cubin == first.cubin and again.resources == first.resources
    assert _steady(again.log) == _steady(first.log)
    assert "Warning" not in again.log and "precompiled" not in again.log, again.log[:300]
    pch.release()
    assert not folder.exists()


def test_a_session_pytester_runs_inside_a_test_leaves_the_outer_sessions_folder(pytester, own_pch_folder):
    folder = pch.folder()  # the outer session's, as a compile test would have made it
    pytester.makepyfile("def test_nothing(): assert True")
    result = pytester.runpytest_inprocess("-p", "plugins.family.hooks", f"--families-root={pytester.path}",
                                          "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)
    assert (folder / pch.LOCK).is_file(), "the inner session's end removed the outer session's PCH folder"
