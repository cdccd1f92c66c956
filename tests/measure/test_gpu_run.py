"""The one-command pass around pytest: preflight, exit statuses, archives against the return limits.

The script itself runs here on a machine with no GPU (it must stop within 10
seconds, saying why); everything GPU-shaped is a labelled fake: a fake CuPy
module object, a fake `ncu` executable put first on PATH. No number here is
a measurement.
"""
from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tarfile
import time
from pathlib import Path

import numpy as np
import pytest

from plugins.measure import gpu_run
from plugins.measure.archive import plan_archives
from plugins.measure.gpu_run import (
    INTERRUPTED,
    LAYOUT,
    NO_DEVICE,
    NO_KEY,
    NO_PROFILER,
    OK,
    PYTEST_ERROR,
    REFUSED,
    SLIPS_LEFT,
    TESTS_FAILED,
    Limits,
    exit_status,
    finish,
    layout_problems,
    out_dir_problem,
    preflight,
)

pytestmark = pytest.mark.measure

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "measure-gpu.sh"
HAS_CUPY = importlib.util.find_spec("cupy") is not None


# --------------------------------------------------------------------------- the output folder


def test_out_dir_inside_or_around_the_repository_is_refused(tmp_path):
    repo = tmp_path / "repo"
    repo.mkdir()
    assert "inside the repository" in out_dir_problem(repo / "out", repo)
    assert "inside the repository" in out_dir_problem(repo, repo)
    assert "holds the repository" in out_dir_problem(tmp_path, repo)
    assert out_dir_problem(tmp_path / "out", repo) == ""
    with pytest.raises(RuntimeError, match="inside the repository"):
        gpu_run.clean_loose(repo / "out", repo)


# --------------------------------------------------------------------------- the script on this machine (no GPU)


def _script(out: Path, *args: str, env: dict | None = None, cwd: Path = ROOT) -> tuple[subprocess.CompletedProcess, float]:
    t0 = time.monotonic()
    p = subprocess.run(["bash", str(cwd / "scripts" / "measure-gpu.sh"), *args, str(out)], cwd=cwd, capture_output=True, text=True,
                       timeout=60, env={**os.environ, "PYTHON": sys.executable, "MEASURE_STATE_DIR": str(out) + "-state", **(env or {})})
    return p, time.monotonic() - t0


@pytest.mark.skipif(HAS_CUPY, reason="CuPy is importable here: this checks the exit on a machine without a device")
def test_no_device_exits_non_zero_within_ten_seconds_with_the_reason(tmp_path):
    p, seconds = _script(tmp_path / "out", env={"SPARKTRACE_GIT_COMMIT": "0" * 40})
    out = p.stdout + p.stderr
    assert p.returncode == NO_DEVICE, out
    assert seconds < 10, f"took {seconds:.1f} s"
    assert "no CUDA device: cupy is not importable" in out and "nothing was measured" in out
    rec = json.loads((tmp_path / "out" / "preflight.json").read_text())
    assert rec["status"] == NO_DEVICE and [s["name"] for s in rec["steps"]] == ["commit", "output folder", "CUDA device"]
    assert not (tmp_path / "out" / "families").exists()


def test_the_script_refuses_an_output_folder_inside_the_repository(tmp_path):
    inside = ROOT / "reports" / f"refused-out-{os.getpid()}"
    p, seconds = _script(inside)
    assert p.returncode == REFUSED and "inside the repository" in p.stderr and not inside.exists()
    p, _ = _script(tmp_path, "--bogus")
    assert p.returncode == REFUSED and "unknown option --bogus" in p.stderr


def test_the_script_refuses_to_measure_without_a_commit(tmp_path):
    """A copy of the tree with no .git, as the GPU machine gets it: no SPARKTRACE_GIT_COMMIT, no run."""
    copy = tmp_path / "tree"
    for d in ("plugins", "scripts"):
        shutil.copytree(ROOT / d, copy / d, ignore=shutil.ignore_patterns("__pycache__"))
    env = {k: v for k, v in os.environ.items() if k != "SPARKTRACE_GIT_COMMIT"}
    env["GIT_CEILING_DIRECTORIES"] = str(tmp_path)  # git must not find a repository above the copy
    p = subprocess.run(["bash", str(copy / "scripts" / "measure-gpu.sh"), str(tmp_path / "out")], cwd=copy, capture_output=True,
                       text=True, timeout=60, env={**env, "PYTHON": sys.executable})
    out = p.stdout + p.stderr
    assert p.returncode == REFUSED, out
    assert "SPARKTRACE_GIT_COMMIT is not set" in out and "--allow-unknown-commit" in out
    assert not (tmp_path / "out" / "preflight.json").exists(), "nothing is written for a refused run"


# --------------------------------------------------------------------------- the preflight on fakes


class _Dev:
    def __init__(self, i=0):
        pass

    def synchronize(self):
        pass


class FakeCupyForPreflight:
    """A FAKE `cupy` (test fixture): a device that runs the one-line kernel, on the host."""

    __version__ = "0.0.0-fake"
    int32 = np.int32
    written = 42

    class cuda:
        Device = _Dev

        class runtime:
            @staticmethod
            def getDeviceCount():
                return 1

            @staticmethod
            def getDeviceProperties(i):
                return {"name": b"FAKE GPU (test fixture)", "major": 9, "minor": 0}

        @staticmethod
        def get_cuda_path():
            return None

    @staticmethod
    def zeros(n, dtype):
        return np.zeros(n, dtype=dtype)

    @staticmethod
    def asnumpy(a):
        return np.asarray(a)

    loaded: list = []

    class RawModule:
        def __init__(self, path):  # compile_source's cubin of the one-line kernel, never CuPy's own compile
            FakeCupyForPreflight.loaded.append(Path(path).read_bytes())

        def get_function(self, name):
            def k(grid, block, args):
                args[0][0] = FakeCupyForPreflight.written
            return k


FAKE_NCU = r'''#!/usr/bin/env python3
"""A FAKE ncu (test fixture): answers like Nsight Compute's CLI in the mode named by $FAKE_NCU_MODE."""
import os, sys
args = sys.argv[1:]
mode = os.environ.get("FAKE_NCU_MODE", "ok")
with open(os.environ["FAKE_NCU_LOG"], "a") as f:
    f.write(" ".join(args) + "\n")
if args[:1] == ["--version"]:
    print("NVIDIA (R) Nsight Compute Command Line Profiler (FAKE)\nVersion 2025.3.1.0 (build 1) (fake)")
    sys.exit(0)
if args[:1] == ["--list-sections"]:
    print("----------------------- ------------------------- ------- ---------")
    print("Identifier              Display Name              Enabled Filename")
    print("----------------------- ------------------------- ------- ---------")
    for s in ("ComputeWorkloadAnalysis", "InstructionStats", "LaunchStats", "MemoryWorkloadAnalysis",
              "MemoryWorkloadAnalysis_Chart", "MemoryWorkloadAnalysis_Tables", "Occupancy", "SpeedOfLight", "WarpStateStats"):
        if not (mode == "nosection" and s == "WarpStateStats"):
            print(f"{s:<30} {s} (fake)  no  /fake/sections/{s}.section")
    sys.exit(0)
metrics = args[args.index("--metrics") + 1].split(",") if "--metrics" in args else []
if mode == "perm":
    print("==PROF== Connected to process 1 (fake)")
    print("==ERROR== ERR_NVGPUCTRPERM - The user does not have permission to access NVIDIA GPU Performance Counters on the target device 0.", file=sys.stderr)
    sys.exit(1)
if mode == "notloaded":
    print("==ERROR== Failed to initialize the profiler: LibraryNotLoaded", file=sys.stderr)
    sys.exit(1)
if mode == "silent":
    print("==PROF== Connected to process 1 (fake)")
    print("==WARNING== No kernels were profiled.")
    sys.exit(0)
if mode == "picky" and len(metrics) > 2:
    print("==ERROR== Failed to find metric " + metrics[-1], file=sys.stderr)
    sys.exit(1)
print("==PROF== Connected to process 1 (fake)")
print("  sparktrace_preflight() (1, 1, 1)x(1, 1, 1), Context 1, Stream 7, Device 0, CC 9.0")
for m in metrics:
    print(f"    {m}    0")
'''


@pytest.fixture
def fake_ncu(tmp_path, monkeypatch):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    ncu = bin_dir / "ncu"
    ncu.write_text(FAKE_NCU.replace("#!/usr/bin/env python3", f"#!{sys.executable}"))
    ncu.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("FAKE_NCU_LOG", str(tmp_path / "ncu.log"))
    return tmp_path / "ncu.log"


@pytest.fixture(autouse=True)
def _cubins_in_tmp(tmp_path, monkeypatch):
    monkeypatch.setattr("plugins.measure.device.CUBIN_DIR", tmp_path / "cubins")


def _pre(tmp_path, mode, monkeypatch, **kw):
    monkeypatch.setenv("FAKE_NCU_MODE", mode)
    return preflight(tmp_path / "out", ROOT, importer=lambda: FakeCupyForPreflight, env={"SPARKTRACE_GIT_COMMIT": "f" * 40}, **kw)


def test_preflight_passes_on_a_device_and_a_profiler_that_reads_counters(tmp_path, monkeypatch, fake_ncu):
    pf = _pre(tmp_path, "ok", monkeypatch)
    assert pf.status == OK and pf.ncu_unusable == "" and pf.ncu_metrics == "all", pf.as_record()
    assert [s.name for s in pf.steps] == ["commit", "output folder", "CUDA device", "ncu --version", "ncu sections", "ncu counters"]
    assert pf.ncu_path == shutil.which("ncu")
    from plugins.family.compile import compile_source

    assert FakeCupyForPreflight.loaded[-1] == compile_source(gpu_run.PREFLIGHT_SOURCE, "sm_90", "sparktrace_preflight.cu").cubin
    assert "compile_source for sm_90" in pf.steps[2].detail
    calls = fake_ncu.read_text().splitlines()
    assert calls[:2] == ["--version", "--list-sections"]
    assert "--clock-control none" in calls[2] and "regex:^(sparktrace_preflight)$" in calls[2]


def test_preflight_finds_the_counter_permission_error(tmp_path, monkeypatch, fake_ncu):
    pf = _pre(tmp_path, "perm", monkeypatch)
    assert pf.status == NO_PROFILER and "ERR_NVGPUCTRPERM" in pf.ncu_unusable
    assert pf.steps[-1].name == "ncu counters" and not pf.steps[-1].ok
    pf = _pre(tmp_path, "notloaded", monkeypatch)
    assert pf.status == NO_PROFILER and "LibraryNotLoaded" in pf.ncu_unusable


def test_an_unexplained_counter_failure_is_inconclusive_not_fatal(tmp_path, monkeypatch, fake_ncu):
    pf = _pre(tmp_path, "silent", monkeypatch)
    assert pf.status == OK and pf.ncu_unusable == "", "an output the preflight cannot read never costs every slip"
    assert pf.steps[-1].name == "ncu counters" and not pf.steps[-1].ok and pf.steps[-1].detail.startswith("inconclusive")


def test_preflight_checks_the_sections_against_what_ncu_lists(tmp_path, monkeypatch, fake_ncu):
    from plugins.measure.gpu_run import listed_sections

    pf = _pre(tmp_path, "nosection", monkeypatch)
    assert pf.status == NO_PROFILER and "WarpStateStats" in pf.ncu_unusable and "--list-sections" in pf.ncu_unusable
    assert pf.steps[-1].name == "ncu sections" and not pf.steps[-1].ok
    assert fake_ncu.read_text().splitlines() == ["--version", "--list-sections"], "no profile is started after that"
    assert listed_sections("Identifier  Display Name\n------ ----\nSpeedOfLight  GPU Speed Of Light  yes  f\n"
                           "==WARNING== x\nOccupancy") == {"SpeedOfLight", "Occupancy"}


def test_preflight_learns_a_rejected_optional_metric(tmp_path, monkeypatch, fake_ncu):
    pf = _pre(tmp_path, "picky", monkeypatch)
    assert pf.status == OK and pf.ncu_metrics == "required", pf.as_record()
    assert len(fake_ncu.read_text().splitlines()) == 4, "--version, --list-sections, the full list (refused), the required list"


def test_preflight_stops_at_the_first_fatal_step(tmp_path, monkeypatch, fake_ncu):
    FakeCupyForPreflight.written = 7
    try:
        pf = _pre(tmp_path, "ok", monkeypatch)
    finally:
        FakeCupyForPreflight.written = 42
    assert pf.status == NO_DEVICE and "wrote 7, not 42" in pf.reason() and not fake_ncu.exists()

    def no_cupy():
        raise ModuleNotFoundError("No module named 'cupy'")

    pf = preflight(tmp_path / "out", ROOT, importer=no_cupy, env={})
    assert pf.status == NO_DEVICE and "cupy is not importable" in pf.reason()
    pf = preflight(ROOT / "out", ROOT, importer=no_cupy, env={})
    assert pf.status == REFUSED and "inside the repository" in pf.reason()
    monkeypatch.setenv("FAKE_NCU_MODE", "ok")
    pf = preflight(tmp_path / "out", ROOT, importer=lambda: FakeCupyForPreflight, want_ncu=False)
    assert pf.status == OK and [s.name for s in pf.steps][-1] == "CUDA device", "--no-ncu: no ncu step"


def test_preflight_without_ncu_says_where_it_looked(tmp_path):
    from plugins.measure.capture import NcuLocation

    pf = preflight(tmp_path / "out", ROOT, importer=lambda: FakeCupyForPreflight,
                   find=lambda: NcuLocation(None, "ncu (Nsight Compute CLI) not found: not on PATH (fake)"))
    assert pf.status == NO_PROFILER and "not found" in pf.ncu_unusable


def test_preflight_commit_rules(tmp_path, monkeypatch):
    bare = tmp_path / "bare"
    bare.mkdir()
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path))  # git must not find a repository above it
    pf = preflight(tmp_path / "out", bare, importer=lambda: FakeCupyForPreflight, env={}, want_ncu=False)
    assert pf.status == REFUSED and "SPARKTRACE_GIT_COMMIT" in pf.reason()
    pf = preflight(tmp_path / "out", bare, importer=lambda: FakeCupyForPreflight, env={}, want_ncu=False, allow_unknown_commit=True)
    assert pf.status == OK and "--measure-allow-unknown-commit" in pf.steps[0].detail
    pf = preflight(tmp_path / "out", bare, importer=lambda: FakeCupyForPreflight, env={"SPARKTRACE_GIT_COMMIT": "abc"}, want_ncu=False)
    assert pf.status == OK and pf.steps[0].detail == "git_commit abc"


# --------------------------------------------------------------------------- exit statuses


def _row(family, key=True, slip="captured", reason=""):
    return {"family": family, "key": f"families/{family}/measurements/g.json" if key else None, "slip": slip, "slip_reason": reason}


def test_exit_status_for_each_outcome():
    good = [_row("a"), _row("b")]
    assert exit_status(0, good) == (OK, [])
    assert exit_status(0, [_row("a", key=False, slip="skipped")])[0] == NO_KEY
    assert exit_status(0, [])[0] == NO_KEY
    assert exit_status(0, good, layout=["x is 3 folders down"])[0] == LAYOUT
    assert exit_status(124, good)[0] == INTERRUPTED and exit_status(2, good)[0] == INTERRUPTED
    assert exit_status(1, good)[0] == TESTS_FAILED
    assert exit_status(4, good)[0] == PYTEST_ERROR
    assert exit_status(0, [_row("a", slip="skipped", reason="the preflight found ...")], preflight_status=NO_PROFILER)[0] == NO_PROFILER
    left = [_row("a"), _row("b", slip="skipped", reason="time budget: 10 s left ...")]
    code, reasons = exit_status(0, left)
    assert code == SLIPS_LEFT and reasons == ["6 slips skipped for time: b"]
    code, reasons = exit_status(1, left, preflight_status=NO_PROFILER)
    assert code == TESTS_FAILED and len(reasons) == 3, "every reason is listed, the first in precedence is the status"
    assert exit_status(0, [_row("a", key=False, slip="captured")], slips_only=True)[0] == OK
    assert exit_status(0, [_row("a", key=False, slip="skipped")], slips_only=True)[0] == NO_KEY
    done = [_row("a", key=False, slip="skipped", reason="already captured by the earlier pass in /tmp/state")]
    assert exit_status(0, done, slips_only=True)[0] == OK, "nothing left to take is not a failure"


# --------------------------------------------------------------------------- archives against the return limits

SMALL = Limits(max_files=8, max_file_bytes=64 * 1024, max_total_bytes=256 * 1024, max_depth=2, slack_bytes=4 * 1024)


def _write(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)


def _pass_output(out: Path, reports: dict[str, int], kept: set[str], gpu: str = "fake-test-gpu") -> None:
    """An output tree shaped like a pass's (contents are FIXTURES, incompressible where they stand for reports)."""
    rng = np.random.default_rng(0)
    for fam, rep_bytes in reports.items():
        _write(out / "families" / fam / "measurements" / f"{gpu}.json", json.dumps({"family": fam, "fixture": True}).encode())
        _write(out / "slips" / gpu / f"{fam}.csv", b"fixture csv\n" * 50)
        _write(out / "slips" / gpu / f"{fam}.json", b"{}")
        _write(out / "slips" / gpu / f"{fam}.ncu-rep", rng.bytes(rep_bytes))
        summary = {"family": fam, "set": "classic", "winner": "r_one" if fam in kept else None, "kept": fam in kept,
                   "key": f"families/{fam}/measurements/{gpu}.json", "slip": "captured", "slip_reason": "", "reason": "",
                   "slip_files": [f"slips/{gpu}/{fam}{ext}" for ext in (".ncu-rep", ".csv", ".json")]}
        _write(out / "reports" / "measure" / gpu / f"{fam}.json", json.dumps(summary).encode())
    _write(out / "measure.log", b"log line (fixture)\n" * 100)
    _write(out / "junit.xml", b"<testsuite/>")


def test_the_old_loose_layout_breaks_the_limits(tmp_path):
    _pass_output(tmp_path, {"a": 100, "b": 100}, {"a"})
    problems = layout_problems(tmp_path)
    assert any("families/a/measurements/fake-test-gpu.json is 3 folders down" in p for p in problems)
    assert any("files in" in p for p in problems)


def test_archives_only_output_comes_back_whole(tmp_path):
    out = tmp_path / "out"
    # six families, a 40 KiB report each: one report per 60 KiB archive, and only five archives fit beside
    # the keys archive and the two loose files (8 files): the report of the last family in priority is left out
    fams = {f"fam_{i}": 40 * 1024 for i in range(6)}
    _pass_output(out, fams, kept={"fam_4", "fam_5"})
    code = finish(out, ROOT, 0, limits=SMALL, emit=lambda s: None)
    names = sorted(p.name for p in out.iterdir())
    assert layout_problems(out, SMALL) == [], names
    assert set(names) <= {"measure.log", "summary.txt", *(f"measure-keys{s}.tar.gz" for s in ("", "-2")),
                          *(f"measure-ncu-rep{s}.tar.gz" for s in ("", "-2", "-3", "-4", "-5", "-6"))}
    members = {}
    for a in out.glob("measure-*.tar.gz"):
        with tarfile.open(a) as t:
            members.update({m.name: a.name for m in t.getmembers()})
    for fam in fams:
        assert f"families/{fam}/measurements/fake-test-gpu.json" in members and f"slips/fake-test-gpu/{fam}.csv" in members
    reps = [m for m in members if m.endswith(".ncu-rep")]
    assert "slips/fake-test-gpu/fam_4.ncu-rep" in reps and "slips/fake-test-gpu/fam_5.ncu-rep" in reps, \
        "kept families' reports come first"
    assert sorted(reps) == [f"slips/fake-test-gpu/fam_{i}.ncu-rep" for i in (0, 1, 2, 4, 5)], "fam_3 is last in priority"
    text = (out / "summary.txt").read_text()
    assert "left out of the archives:" in text and f"exit status {code}" in text
    # a report that does not come back is no captured slip: its summary and key say so, and so does the status
    assert code == LAYOUT and "slip reports left out of the archives (they will not come back): fam_3" in text, text
    assert "fam_3: " in text and "slip: left out its report slips/fake-test-gpu/fam_3.ncu-rep was left out" in text
    with tarfile.open(out / members["reports/measure/fake-test-gpu/fam_3.json"]) as t:
        s3 = json.load(t.extractfile("reports/measure/fake-test-gpu/fam_3.json"))
        k3 = json.load(t.extractfile("families/fam_3/measurements/fake-test-gpu.json"))
        s0 = json.load(t.extractfile("reports/measure/fake-test-gpu/fam_0.json"))
    assert s3["slip"] == "left out" and "no room left under the return limits" in s3["slip_reason"]
    assert k3["slip"]["status"] == "left out" and k3["slip"]["reason"] == s3["slip_reason"]
    assert s0["slip"] == "captured", "a report that came back still counts"


def test_plan_archives_respects_count_size_and_total():
    # 4 files, 100 B each (90 B of input per archive), 300 B in all, 10 B slack per archive; a 20 B log stays loose
    lim = Limits(max_files=4, max_file_bytes=100, max_total_bytes=300, slack_bytes=10)
    plan = plan_archives([("k", [("a", 50), ("b", 40)]), ("r", [("x", 90), ("y", 80), ("z", 95), ("w", 200)])], [("log", 20)], lim)
    # a+b share one 90 B part; x opens a second (20 + 100 + 100 = 220 B); y would need 90 more: over 300
    assert plan.archives == (("k.tar.gz", ("a", "b")), ("r.tar.gz", ("x",)))
    left = dict(plan.left_out)
    assert set(left) == {"y", "z", "w"} and "no room left" in left["y"]
    assert "larger than" in left["z"] and "larger than" in left["w"], "a file over one archive's size is named, never dropped silently"
    many = plan_archives([("r", [(f"f{i}", 60) for i in range(9)])], [], Limits(max_files=3, max_file_bytes=100,
                                                                                 max_total_bytes=10_000, slack_bytes=10))
    assert [n for n, _ in many.archives] == ["r.tar.gz", "r-2.tar.gz", "r-3.tar.gz"] and len(many.left_out) == 6


def test_real_limits_are_the_tools():
    lim = Limits()
    assert (lim.max_files, lim.max_file_bytes, lim.max_total_bytes, lim.max_depth) == (8, 16 << 20, 64 << 20, 2)


def test_a_second_run_unpacked_over_the_repository_lands_beside_the_first(tmp_path):
    """Defect 8: the committed key stays; the new one arrives as <gpu>.<stamp>.json."""
    import itertools

    from plugins.family.manifest import load_family
    from plugins.measure.session import MeasureConfig, MeasureSession
    from plugins.measure.timing import Timed

    fixtures = ROOT / "tests" / "fixtures" / "measure"
    repo = tmp_path / "repo"
    committed = repo / "families" / "scale_fixture" / "measurements" / "fake-test-gpu.json"
    _write(committed, b'{"the committed key": "fixture"}')

    class Timer:  # a FAKE timer (test fixture): fed times
        name, flush_bytes, copy_bytes, throttle_note, max_sm_clock_mhz = "fake", 1, 2, "fake", None
        FED = {"start": 5.0, "r_one": 1.0, "r_two": 1.3, "r_three": 2.0, "r_four": 2.2}

        def warmup(self, cid, n):
            pass

        def time_launches(self, cid, n):
            return Timed((self.FED[cid],) * n, None)

        def time_copy(self, n):
            return Timed((0.5,) * n, None)

    class Executor:  # a FAKE executor (test fixture)
        name, sm_count = "fake", 4

        def run(self, fam, cand, shape, buffers):
            inputs = {k: v for k, v in buffers.items() if fam.buffer(k).role == "input"}
            out = dict(buffers)
            for n, v in fam.reference_module().reference(inputs, dict(shape)).items():
                arr = np.asarray(v, dtype=fam.buffer(n).dtype).copy()
                if cand.role == "wrong":
                    arr[-1] = np.nan
                out[n] = arr
            return out

    out = tmp_path / "out"
    cfg = MeasureConfig(out_root=out, repo=repo, families_root=fixtures, command="t", also_check=(repo,))
    s = MeasureSession(cfg, Executor(), lambda *a: Timer(), gpu={"slug": "fake-test-gpu"}, provenance={},
                       seeds=lambda n: (1,), new_seed=itertools.count(1).__next__)
    key = s.measure(load_family(fixtures / "scale_fixture")).key_path
    assert key.name.startswith("fake-test-gpu.") and key.name != "fake-test-gpu.json"
    finish(out, repo, 0, emit=lambda s: None)
    for a in sorted(out.glob("measure-*.tar.gz")):
        subprocess.run(["tar", "-xzf", str(a), "--keep-old-files", "-C", str(repo)], check=True)
    assert committed.read_text() == '{"the committed key": "fixture"}'
    assert (repo / "families" / "scale_fixture" / "measurements" / key.name).is_file()


def test_finish_reports_repeats_clocks_and_saves_state(tmp_path):
    out, state = tmp_path / "out", tmp_path / "state"
    _pass_output(out, {"a": 10, "b": 10}, kept={"a", "b"})
    rep = out / "reports" / "measure" / "fake-test-gpu" / "repeat"
    _write(rep / "a.json", json.dumps({"family": "a", "status": "measured", "first_winner": "r_one", "winner": "r_two",
                                       "differs": True, "kept": True, "first_kept": True}).encode())
    _write(rep / "b.json", json.dumps({"family": "b", "status": "skipped", "reason": "time budget: 3 s left ...",
                                       "first_winner": "r_one", "differs": False}).encode())
    clocks = [{"block": i, "sm_clock_mhz": mhz, "start": {"throttle_reasons": ["SwThermalSlowdown"] if i == 2 else []}, "end": {}}
              for i, mhz in enumerate([1980.0, 1980.0, 1975.0, 1700.0, 1980.0])]
    _write(out / "families" / "a" / "measurements" / "fake-test-gpu.json",
           json.dumps({"family": "a", "protocol": {"block_clocks": clocks}}).encode())
    code = finish(out, tmp_path / "repo", 0, state_dir=state, emit=lambda s: None)
    text = (out / "summary.txt").read_text()
    assert "WINNER DIFFERS: a: first r_one, repeat r_two" in text
    assert "b: skipped: time budget" in text
    assert "a (fake-test-gpu.json) block 2: throttled at start: SwThermalSlowdown" in text
    assert "block 3: 1700 MHz, -14.1% from the pass median" in text
    assert (state / "reports" / "measure" / "fake-test-gpu" / "a.json").is_file()
    assert code == OK


def test_the_main_entry_points(tmp_path, capsys):
    assert gpu_run.main(["check-out", str(ROOT / "x")]) == REFUSED
    assert gpu_run.main(["check-out", str(tmp_path / "x")]) == OK
    _pass_output(tmp_path / "o", {"a": 10}, {"a"})
    assert gpu_run.main(["finish", str(tmp_path / "o"), "--pytest-rc", "0", "--keep-loose"]) == OK
    assert (tmp_path / "o" / "families").is_dir(), "--keep-loose keeps the loose files"


def test_the_state_for_a_slips_only_command_is_merged_not_replaced(tmp_path):
    from plugins.measure.gpu_run import save_state

    first, second, state = tmp_path / "first", tmp_path / "second", tmp_path / "state"
    _pass_output(first, {"a": 10, "b": 10}, kept={"a", "b"})
    for fam, slip in (("a", "captured"), ("b", "skipped")):
        p = first / "reports" / "measure" / "fake-test-gpu" / f"{fam}.json"
        p.write_text(json.dumps({**json.loads(p.read_text()), "slip": slip}))
    save_state(first, state)
    for fam, slip, reason in (("a", "skipped", "already captured by the earlier pass"), ("b", "captured", "")):
        _write(second / "reports" / "measure" / "fake-test-gpu" / f"{fam}.json",
               json.dumps({"family": fam, "slip": slip, "slip_reason": reason, "kept": False, "winner": None}).encode())
    save_state(second, state, merge=True)
    got = {f: json.loads((state / "reports" / "measure" / "fake-test-gpu" / f"{f}.json").read_text()) for f in ("a", "b")}
    assert got["a"]["slip"] == "captured" and got["b"]["slip"] == "captured"
    assert got["b"]["kept"] is True and got["b"]["winner"] == "r_one", "the first pass's key facts stay for the priority order"


def test_preflight_stops_on_a_gpu_below_every_family(tmp_path):
    """A Turing card (7.5) is one message before any work: no compile, no launch."""

    class T4(FakeCupyForPreflight):
        class cuda(FakeCupyForPreflight.cuda):
            class runtime(FakeCupyForPreflight.cuda.runtime):
                @staticmethod
                def getDeviceProperties(i):
                    return {"name": b"Tesla T4", "major": 7, "minor": 5}

    FakeCupyForPreflight.loaded.clear()
    pf = preflight(tmp_path / "out", ROOT, importer=lambda: T4, env={"SPARKTRACE_GIT_COMMIT": "f" * 40}, want_ncu=False)
    assert pf.status == NO_DEVICE
    assert "this GPU is Tesla T4, 7.5: SparkTrace's families need compute capability 8.0 or newer" in pf.reason()
    assert FakeCupyForPreflight.loaded == [], "nothing was compiled or loaded"
