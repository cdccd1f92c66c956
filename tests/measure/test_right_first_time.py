"""Issue 19, "right the first time": the review's smaller defects of the GPU path, each on CPU.

Everything GPU-shaped here is a labelled fake (a fake device probe, a fake cupy
module, fake executors and timers); nothing here is a measurement.
"""
from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from plugins.measure.provenance import GIT_COMMIT_ENV, git_state, gpu_record, is_unavailable
from tests.measure.test_measure_protocol import BrokenProbe, FakeProbe

pytestmark = pytest.mark.measure

ROOT = Path(__file__).resolve().parents[2]


# --------------------------------------------------------------------------- provenance


def _git(cwd: Path, *args: str) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@t", "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_SYSTEM": os.devnull}
    return subprocess.run(["git", "-C", str(cwd), *args], check=True, capture_output=True, text=True, env=env).stdout.strip()


def test_the_given_commit_wins_over_an_enclosing_git_repository(tmp_path):
    outer = tmp_path / "home"
    tree = outer / "copies" / "sparktrace"  # a copy of the tree with no .git, inside someone else's repository
    tree.mkdir(parents=True)
    _git(outer, "init", "-q")
    (outer / "notes.txt").write_text("not SparkTrace\n")
    _git(outer, "add", "notes.txt")
    _git(outer, "commit", "-q", "-m", "someone else's")
    theirs = _git(outer, "rev-parse", "HEAD")
    st = git_state(tree, env={GIT_COMMIT_ENV: "0123abc"})
    assert st["git_commit"] == "0123abc", "the enclosing repository's HEAD is not this code's commit"
    assert GIT_COMMIT_ENV in st["git_commit_source"]
    assert is_unavailable(st["git_dirty"]) and theirs in st["git_dirty"]
    same = git_state(tree, env={GIT_COMMIT_ENV: theirs[:10]})
    assert same["git_commit"] == theirs[:10] and same["git_dirty"] is False, "git's dirty flag is kept where HEAD agrees"
    assert git_state(tree, env={})["git_commit"] == theirs, "without the variable, git's HEAD as before"


# --------------------------------------------------------------------------- the device record


def test_the_device_record_states_the_memory_bus_width():
    class WideProbe(FakeProbe):
        def properties(self):
            return {**super().properties(), "memoryBusWidth": 5120}

    gpu = gpu_record(WideProbe())
    assert gpu["memory_bus_width_bits"] == 5120 and gpu["mem_clock_max_mhz"] == 1000
    assert is_unavailable(gpu_record(FakeProbe())["memory_bus_width_bits"]), "a property the device lacks says so"
    assert "cudaErrorNoDevice" in gpu_record(BrokenProbe())["memory_bus_width_bits"]


# --------------------------------------------------------------------------- make measure-gpu


def _make(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(["make", "--no-print-directory", *args], cwd=ROOT, capture_output=True, text=True, timeout=60,
                          env={**os.environ, **(env or {})})


def test_make_measure_gpu_writes_outside_the_repository_by_default():
    p = _make("-n", "measure-gpu")
    assert p.returncode == 0, p.stderr
    cmd = [line for line in p.stdout.splitlines() if "scripts/measure-gpu.sh" in line][0]
    out = Path(cmd.split("scripts/measure-gpu.sh", 1)[1].split()[0].strip('"'))
    assert out.is_absolute() and ROOT.resolve() not in out.resolve().parents and out.resolve() != ROOT.resolve(), cmd


@pytest.mark.skipif(__import__("importlib").util.find_spec("cupy") is not None,
                    reason="CuPy is importable here: this checks the status on a machine without a device")
def test_make_measure_gpu_reaches_the_preflight_and_reports_the_scripts_status(tmp_path):
    import sys

    from plugins.measure.gpu_run import NO_DEVICE

    p = _make("measure-gpu", f"MEASURE_OUT={tmp_path / 'out'}",
              env={"PYTHON": sys.executable, "SPARKTRACE_GIT_COMMIT": "0" * 40, "MEASURE_STATE_DIR": str(tmp_path / "state")})
    text = p.stdout + p.stderr
    assert "inside the repository" not in text, text[-2000:]
    assert "no CUDA device" in text and f"Error {NO_DEVICE}" in text, text[-2000:]
    assert (tmp_path / "out" / "preflight.json").is_file()


# --------------------------------------------------------------------------- the package probe


def test_the_package_probe_asks_for_ml_dtypes_and_the_script_uses_it(capsys):
    from plugins.measure import gpu_run

    assert "ml_dtypes" in gpu_run.PACKAGES, "bfloat16 and e4m3 inputs need ml_dtypes"
    assert gpu_run.missing_packages(lambda name: None) == list(gpu_run.PACKAGES)
    assert gpu_run.missing_packages(lambda name: None if name == "ml_dtypes" else object()) == ["ml_dtypes"]

    def broken(name):
        raise ModuleNotFoundError(f"No module named {name!r} (fake)")

    assert "ml_dtypes" in gpu_run.missing_packages(broken)
    assert gpu_run.main(["packages"]) == 0
    assert capsys.readouterr().out.split() == gpu_run.missing_packages()
    script = (ROOT / "scripts" / "measure-gpu.sh").read_text()
    assert "plugins.measure.gpu_run packages" in script, "the script's probe is this list, not a copy of it"
