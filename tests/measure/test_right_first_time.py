"""Issue 19, "right the first time": the review's smaller defects of the GPU path, each on CPU.

Everything GPU-shaped here is a labelled fake (a fake device probe, a fake cupy
module, fake executors and timers); nothing here is a measurement.
"""
from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import numpy as np
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


# --------------------------------------------------------------------------- timing inputs drawn once


def _counting_make_inputs(monkeypatch, fam):
    """Counts make_inputs calls at the family's timing shape (the gate's own shapes are not counted)."""
    from plugins.family.manifest import Family

    timing = dict(fam.shapes("timing")[0])
    calls = []
    real = Family.make_inputs

    def counted(self, rng, shape):
        if dict(shape) == timing:
            calls.append(self.name)
        return real(self, rng, shape)

    monkeypatch.setattr(Family, "make_inputs", counted)
    return calls


def test_timing_inputs_are_drawn_once_for_the_key_the_slip_and_the_repeat(tmp_path, monkeypatch):
    import itertools

    from plugins.family.manifest import load_family
    from plugins.measure import launch_once
    from plugins.measure.capture import profile_command
    from plugins.measure.inputs import INPUTS_DIR, InputsMismatch
    from plugins.measure.provenance import inputs_sha256
    from plugins.measure.session import MeasureConfig, MeasureSession, slip_inputs
    from tests.measure.test_measure_protocol import FAKE_TIMES_MS, FIXTURES, FakeExecutor, FakeTimer

    fam = load_family(FIXTURES / "scale_fixture")
    calls = _counting_make_inputs(monkeypatch, fam)
    child = {}

    def capture(f, gpu, budget=None, name=None, inputs=None):
        """A FAKE slip: the command ncu would run, and the profiled process's inputs, on the host."""
        kw = slip_inputs(inputs)
        cmd = profile_command("ncu", f.name, tmp_path / "slip", ["k0"], 1, FIXTURES, **kw)
        args = cmd[cmd.index("plugins.measure.launch_once") + 1:]
        path, sha = args[args.index("--inputs") + 1], args[args.index("--inputs-sha256") + 1]
        child["seed"] = int(args[args.index("--seed") + 1])
        child["buffers"] = launch_once.profiled_buffers(f, f.shapes("timing")[0], child["seed"], path, sha)
        child["path"] = Path(path)
        from plugins.measure.capture import SlipResult

        return SlipResult("captured", "", [], {})

    def timer_factory(f, shape, host, cands):
        return FakeTimer({c.id: FAKE_TIMES_MS[c.id] for c in cands})

    seeds = itertools.count(500)
    cfg = MeasureConfig(out_root=tmp_path / "out", repo=tmp_path, families_root=FIXTURES, command="t (test)", repeat=True)
    s = MeasureSession(cfg, FakeExecutor(), timer_factory, gpu={"slug": "fake-test-gpu"}, provenance={}, capture=capture,
                       seeds=lambda n: (1, 2, 3), new_seed=lambda: next(seeds))
    out = s.measure(fam)
    assert out.error == "" and calls == ["scale_fixture"], out.error
    key_sha = out.record["inputs"]["timing_inputs_sha256"]
    assert out.inputs.path is not None and out.inputs.path.parent == tmp_path / "out" / INPUTS_DIR
    assert out.inputs.path.name.startswith(f"scale_fixture.{out.inputs.seed}.{key_sha[:16]}")
    assert out.record["inputs"]["slip_seed"] == out.record["inputs"]["timing_seed"] == out.inputs.seed
    assert out.seconds["inputs"] >= 0

    assert s.slip(fam).slip["status"] == "captured"
    assert child["seed"] == out.inputs.seed and inputs_sha256(child["buffers"], ["x"]) == key_sha
    assert calls == ["scale_fixture"], "ncu's child loads the key's inputs, it does not draw them again"

    rep = s.repeat(fam)
    assert rep["status"] == "measured", rep
    assert calls == ["scale_fixture"], "the repeat times the key's inputs, drawn once"
    rec = json.loads((tmp_path / "out" / rep["key"]).read_text())
    assert rec["inputs"]["timing_inputs_sha256"] == key_sha and rec["protocol"]["input_seed"] == out.inputs.seed
    assert rec["protocol"]["block_seed"] != out.record["protocol"]["block_seed"], "a new block order"
    assert not child["path"].exists(), "the file goes once its last user (the repeat) is done"

    # the child checks what it loads: another family's or a changed file stops it
    bad = tmp_path / "bad.npz"
    np.savez(bad, x=np.zeros(4096, np.float32).view(np.uint8))
    with pytest.raises(InputsMismatch, match="sha256"):
        launch_once.profiled_buffers(fam, fam.shapes("timing")[0], 1, str(bad), key_sha)


def test_the_archives_never_carry_the_timing_inputs(tmp_path):
    from plugins.measure.archive import _members
    from plugins.measure.inputs import INPUTS_DIR

    (tmp_path / INPUTS_DIR).mkdir()
    (tmp_path / INPUTS_DIR / "f.1.abc.npz").write_bytes(b"x" * 100)
    (tmp_path / "preflight.json").write_text("{}")
    keys, reps = _members(tmp_path)
    assert [k for k, _ in keys] == ["preflight.json"] and reps == []


def test_the_slip_budget_plans_each_family_from_its_own_input_draw():
    from plugins.measure.budget import FIRST_SLIP_GUESS_S, StepBudget
    from plugins.measure.inputs import TimingInputs
    from plugins.measure.session import FamilyOutcome, MeasureSession

    now = [0.0]
    b = StepBudget(100.0, lambda: now[0])
    assert b.decide(extra_s=23.0).reason.endswith(f"= {1.5 * (FIRST_SLIP_GUESS_S + 23.0):.0f} s")
    b.record(30.0, extra_s=23.0)  # a slip whose child drew 23 s of inputs
    assert b.planned_s == 7.0, "the next family is not planned with another family's inputs"
    assert "1.5 x 17.0 s" in b.decide(extra_s=10.0).reason and "10.0 s of it this family's own input draw" in b.decide(extra_s=10.0).reason
    loaded = FamilyOutcome("f", inputs=TimingInputs("f", 1, "s" * 64, 23.0, Path("/x.npz")))
    drawn = FamilyOutcome("g", inputs=TimingInputs("g", 1, "s" * 64, 23.0, None, "not written"))
    assert MeasureSession._slip_input_seconds(loaded) == 0.0, "its child loads the file: no draw to plan"
    assert MeasureSession._slip_input_seconds(drawn) == 23.0, "its child draws them: its own measured draw"
    assert MeasureSession._slip_input_seconds(FamilyOutcome("h")) == 0.0


# --------------------------------------------------------------------------- the binary CI checked


from tests.measure.test_measure_protocol import fake_cupy  # noqa: E402,F401  (the FAKE cupy fixture)


def test_a_cubin_file_that_is_not_compile_sources_is_one_clear_error(tmp_path, fake_cupy):
    import hashlib

    from plugins.family.compile import compile_source
    from plugins.family.manifest import load_family
    from plugins.measure.device import CupyExecutor, checked_cubin
    from tests.measure.test_measure_protocol import FIXTURES

    fam = load_family(FIXTURES / "scale_fixture")
    ci = compile_source(fam.start.source, "sm_90", fam.start.path.name).cubin
    sha = hashlib.sha256(ci).hexdigest()
    good = checked_cubin(fam.start.source, "sm_90", fam.start.path.name, "start", tmp_path)
    assert good.sha256 == sha and good.path.read_bytes() == ci
    good.path.write_bytes(bytes(len(ci)))  # same size, other bytes: what would run is not CI's binary
    with pytest.raises(RuntimeError, match="not the binary CI checked"):
        checked_cubin(fam.start.source, "sm_90", fam.start.path.name, "start", tmp_path)
    ex = CupyExecutor()
    assert ex.arch == "sm_90" and ex.cubin_sha256(fam.start) == sha


def test_the_slip_records_and_checks_the_cubin_the_key_ran(tmp_path, fake_cupy, monkeypatch):
    from plugins.family.manifest import load_family
    from plugins.measure import launch_once
    from plugins.measure.capture import NcuLocation, capture_slip
    from plugins.measure.device import CupyExecutor
    from tests.measure.test_capture import FakeNcu
    from tests.measure.test_measure_protocol import FIXTURES

    fam = load_family(FIXTURES / "scale_fixture")
    sha = CupyExecutor().cubin_sha256(fam.start)
    fake = FakeNcu()
    res = capture_slip("fam", ["k0"], "g", tmp_path, tmp_path, tmp_path, ncu=NcuLocation("/fake/ncu", "t"), run=fake,
                       cubin_sha256=sha)
    rec = json.loads((tmp_path / "slips" / "g" / "fam.json").read_text())
    assert res.status == "captured" and rec["cubin_sha256"] == sha
    assert rec["profile_command"][-2:] == ["--cubin-sha256", sha], "the profiled process is told which binary to run"

    written = []
    monkeypatch.setattr("sys.stdout.write", written.append)
    monkeypatch.setattr("sys.stderr.write", written.append)
    args = ["scale_fixture", "--families-root", str(FIXTURES), "--seed", "9"]
    fake_cupy.calls.clear()
    assert launch_once.main([*args, "--cubin-sha256", "0" * 64]) == 2
    assert "the key's is " + "0" * 64 in written[-1] and "k0" not in fake_cupy.calls, "nothing is launched"
    assert launch_once.main([*args, "--cubin-sha256", sha]) == 0 and fake_cupy.calls == ["k0"]
    assert json.loads(written[-1])["cubin_sha256"] == sha
