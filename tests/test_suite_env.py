"""The environment `make test` runs the suite in (Makefile: SUITE_ENV).

Why: glibc's malloc on transparent huge pages makes each emulator fork of a large
worker cheaper. It must reach every pytest the Makefile and scripts/work-report.sh
start, come before the caller's tunables (so theirs win), and really make glibc
advise huge pages where glibc and the kernel support it. The parallel runs let an idle
worker steal pending tests (one worker ran the emulated gate alone for a third of a run).
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
TUNABLE = "glibc.malloc.hugetlb=1"
STUB = '#!/bin/sh\necho "STUB GLIBC_TUNABLES=${GLIBC_TUNABLES-unset} ARGS=$*"\n'


def _stub_venv(folder: Path) -> Path:
    """A venv whose pytest prints the environment it was started with; stamps newer than
    the requirements, so make installs nothing."""
    (folder / "bin").mkdir(parents=True)
    (folder / "bin" / "pytest").write_text(STUB)
    (folder / "bin" / "pytest").chmod(0o755)
    for stamp in (".installed", ".local-model"):
        (folder / stamp).touch()
    return folder


def _env(**extra: str) -> dict[str, str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith("MAKE") and k != "GLIBC_TUNABLES"}
    return {**base, **extra}


def _started(args: list[str], env: dict[str, str], cwd: Path = ROOT) -> list[str]:
    done = subprocess.run(args, capture_output=True, text=True, env=env, cwd=cwd, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    return [line for line in done.stdout.splitlines() if line.startswith("STUB ")]


needs_make = pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")


@needs_make
@pytest.mark.parametrize("target", [["test"], ["family", "NAME=gather_rows"]])
def test_every_pytest_of_make_gets_the_tunable(tmp_path, target):
    venv = _stub_venv(tmp_path / "venv")
    lines = _started(["make", "-s", "-C", str(ROOT), *target, f"VENV={venv}"], _env())
    assert len(lines) == (2 if target == ["test"] else 1), lines  # make test: the suite, then the benchmarks
    assert all(line.startswith(f"STUB GLIBC_TUNABLES={TUNABLE} ARGS=") for line in lines), lines


@needs_make
@pytest.mark.parametrize("target", [["test"], ["family", "NAME=gather_rows"], ["test", "JOBS=3"]])
def test_parallel_runs_let_idle_workers_steal_tests(tmp_path, target):
    venv = _stub_venv(tmp_path / "venv")
    lines = _started(["make", "-s", "-C", str(ROOT), *target, f"VENV={venv}"], _env())
    jobs = target[1].removeprefix("JOBS=") if len(target) > 1 and target[1].startswith("JOBS=") else "2"
    parallel = [line for line in lines if "ARGS=-n " in line]
    assert len(parallel) == 1 and f" ARGS=-n {jobs} --dist worksteal " in parallel[0], lines
    if target[0] == "test":  # the benchmarks stay serial: they are timed
        assert any("--benchmark-only" in line and "-n" not in line.split() for line in lines), lines


@needs_make
@pytest.mark.parametrize("where", ["environment", "command line"])
def test_the_callers_tunables_come_after_so_they_win(tmp_path, where):
    venv = _stub_venv(tmp_path / "venv")
    theirs = "glibc.malloc.hugetlb=0:glibc.malloc.arena_max=2"
    args = ["make", "-s", "-C", str(ROOT), "test", f"VENV={venv}"]
    env = _env(GLIBC_TUNABLES=theirs) if where == "environment" else _env()
    lines = _started(args + ([f"GLIBC_TUNABLES={theirs}"] if where == "command line" else []), env)
    assert lines and all(line.startswith(f"STUB GLIBC_TUNABLES={TUNABLE}:{theirs} ARGS=") for line in lines), lines


@pytest.mark.parametrize("theirs", [None, "glibc.malloc.hugetlb=0"])
def test_work_report_starts_pytest_with_the_tunable(tmp_path, theirs):
    (tmp_path / "scripts").mkdir()
    shutil.copy(ROOT / "scripts" / "work-report.sh", tmp_path / "scripts")
    _stub_venv(tmp_path / ".venv")
    env = _env(**({"GLIBC_TUNABLES": theirs} if theirs else {}))
    lines = _started(["bash", str(tmp_path / "scripts" / "work-report.sh"), "--set", "classic"], env, cwd=tmp_path)
    want = TUNABLE + (f":{theirs}" if theirs else "")
    assert len(lines) == 1 and lines[0].startswith(f"STUB GLIBC_TUNABLES={want} ARGS=-n 2 --dist worksteal --set all"), lines


def _glibc_at_least(major: int, minor: int) -> bool:
    try:
        name, version = os.confstr("CS_GNU_LIBC_VERSION").split()
    except (ValueError, OSError, AttributeError):
        return False
    parts = tuple(int(p) for p in re.findall(r"\d+", version)[:2])
    return name == "glibc" and parts >= (major, minor)


PROBE = """
import ctypes
libc = ctypes.CDLL(None)
libc.malloc.restype = ctypes.c_void_p
n = 64 << 20
p = libc.malloc(n)
ctypes.memset(p, 1, n)
flags, inside = [], False
for line in open("/proc/self/smaps").read().splitlines():
    head = line.split()[0] if line else ""
    if "-" in head and all(c in "0123456789abcdef-" for c in head):
        lo, hi = (int(x, 16) for x in head.split("-"))
        inside = lo <= p < hi
    elif inside and line.startswith("VmFlags:"):
        flags = line.split(":", 1)[1].split()
print(" ".join(flags))
"""


def test_glibc_advises_huge_pages_with_the_tunable_and_not_without():
    """Not a no-op: with the tunable glibc marks a large malloc'd block MADV_HUGEPAGE ("hg" in
    its VmFlags); without it, it does not. Deterministic: the advice, not the kernel's allocation."""
    if not _glibc_at_least(2, 35):
        pytest.skip(f"glibc.malloc.hugetlb needs glibc 2.35 or later (this C library: "
                    f"{os.confstr('CS_GNU_LIBC_VERSION') if hasattr(os, 'confstr') else 'unknown'}); older ones ignore it")
    thp = Path("/sys/kernel/mm/transparent_hugepage/enabled")
    mode = thp.read_text().strip() if thp.is_file() else "missing"
    if "[madvise]" not in mode:
        pytest.skip(f"the kernel's THP mode is not madvise ({thp}: {mode}): glibc does not advise, and the tunable changes nothing")

    def flags(env: dict[str, str]) -> list[str]:
        out = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, env=env, timeout=60)
        assert out.returncode == 0, out.stderr
        return out.stdout.split()

    assert "hg" in flags(_env(GLIBC_TUNABLES=TUNABLE))
    assert "hg" not in flags(_env())
