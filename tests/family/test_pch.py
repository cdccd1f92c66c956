"""NVRTC's precompiled headers change the compile's speed only: the same cubin, the same ptxas report."""
from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import tempfile
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
import os, sys, pathlib
from plugins.family.compile import _nvrtc_compile
from plugins.family.manifest import load_family
from plugins.family import pch
cand = load_family(pathlib.Path(sys.argv[1])).all_candidates[0]
assert _nvrtc_compile(cand.source, "sm_90", cand.path.name).ok
print(os.getpid(), pch.folder(), *sorted(p.name for p in pch.folder().iterdir()), flush=True)
os._exit(0)  # what a killed run or an xdist worker that never reaches atexit does
"""


def test_an_abruptly_ended_process_leaves_its_pch_only_in_its_own_folder_and_the_next_sweeps_it(tmp_path):
    env = {**os.environ, pch.ENV: str(tmp_path), "PYTHONPATH": str(FAMILY.parents[1])}
    env.pop("SPARKTRACE_NO_PCH", None)
    out = subprocess.run([sys.executable, "-c", _LEAKER, str(FAMILY)], env=env, capture_output=True, text=True,
                         timeout=300, check=True).stdout.split()
    pid, folder, files = int(out[0]), Path(out[1]), out[2:]
    assert folder.parent == tmp_path and folder.is_dir()
    assert files and all(f.endswith(".pch") for f in files), files  # the PCH really went there
    assert not list(Path(tempfile.gettempdir()).glob(f"__nvrtc_auto_pch_{pid}_*")), "NVRTC still wrote to /tmp"
    assert pch.sweep(tmp_path) == [folder]
    assert not folder.exists()


def test_the_sweep_leaves_live_processes_and_other_hosts_alone(tmp_path):
    live = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        mine, other_host = tmp_path / pch._name(live.pid), tmp_path / f"not-{socket.gethostname()}-1"
        for d in (mine, other_host):
            (d / "k_0.pch").parent.mkdir()
            (d / "k_0.pch").write_bytes(b"x")
        assert pch.sweep(tmp_path) == []
    finally:
        live.kill()
        live.wait()
    assert pch.sweep(tmp_path) == [mine]
    assert other_host.is_dir()


def test_prune_removes_the_oldest_pch_files_down_to_the_cap_and_keeps_the_newest(tmp_path):
    for i, size in enumerate([400, 300, 200, 100]):
        f = tmp_path / f"k_{i}.pch"
        f.write_bytes(b"x" * size)
        os.utime(f, ns=(i * 10**9, i * 10**9))
    (tmp_path / "notes.txt").write_bytes(b"x" * 1000)  # not NVRTC's: never touched
    assert [p.name for p in pch.prune(tmp_path, max_bytes=350)] == ["k_0.pch", "k_1.pch"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["k_2.pch", "k_3.pch", "notes.txt"]
    assert [p.name for p in pch.prune(tmp_path, max_bytes=0)] == ["k_2.pch"]  # the newest stays even over the cap
    assert pch.prune(tmp_path, max_bytes=0) == []


def test_a_compile_after_its_pch_folder_was_removed_makes_it_again(tmp_path, monkeypatch):
    monkeypatch.setenv(pch.ENV, str(tmp_path))
    monkeypatch.delenv("SPARKTRACE_NO_PCH", raising=False)
    a, b = load_family(FAMILY).all_candidates[:2]
    first = _nvrtc_compile(a.source, "sm_80", a.path.name)
    folder = pch.folder()
    assert list(folder.glob("*.pch"))
    shutil.rmtree(folder)
    again = _nvrtc_compile(a.source, "sm_80", a.path.name)
    assert again.ok and again.cubin == first.cubin
    assert list(folder.glob("*.pch"))
    assert _nvrtc_compile(b.source, "sm_80", b.path.name).ok
    pch.release()
    assert not folder.exists()


def test_only_the_first_session_of_a_process_releases_the_folder(tmp_path):
    code = "from plugins.family import pch; print(pch.claim(), pch.claim())"
    out = subprocess.run([sys.executable, "-c", code], env={**os.environ, "PYTHONPATH": str(FAMILY.parents[1])},
                         capture_output=True, text=True, timeout=60, check=True).stdout.split()
    assert out == ["True", "False"]


def test_nvrtcs_pch_messages_mark_what_was_used_and_leave_the_log(tmp_path):
    used, idle, elsewhere = tmp_path / "pipeline_1.pch", tmp_path / "kernel_0.pch", tmp_path.parent / "x_0.pch"
    for f in (used, idle, elsewhere):
        f.write_bytes(b"x")
        os.utime(f, ns=(10**9, 10**9))
    log = (f'"a.cu": using precompiled header file "{used}"\n'
           f'"a.cu": creating precompiled header file "{elsewhere}"\n'
           "ptxas info    : Used 8 registers")
    made, evicted = COUNTS["nvrtc_pch_create"], COUNTS["nvrtc_pch_evict"]
    assert pch.note_use(tmp_path, log) == "ptxas info    : Used 8 registers"
    assert COUNTS["nvrtc_pch_create"] == made + 1  # the work report counts what NVRTC made
    assert used.stat().st_mtime_ns > 10**9
    assert idle.stat().st_mtime_ns == elsewhere.stat().st_mtime_ns == 10**9  # outside the folder: not ours
    assert pch.prune(tmp_path, max_bytes=1) == [idle]  # the least recently used goes first
    assert COUNTS["nvrtc_pch_evict"] == evicted + 1
    elsewhere.unlink()
