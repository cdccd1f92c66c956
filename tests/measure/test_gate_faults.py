"""A wrong variant that faults costs only its own verdict, never the pass.

On the first H200 pass, shade_coherent's sorted_inclusive (an inclusive scan, so
unwritten index slots hold the poison 2147483647 and k3 gathers about 32 GiB past
hit) killed the process's CUDA context in the gate, and every family after it went
unmeasured. Three defences, each tested here on a labelled FAKE cupy or executor:
red zones around every gate buffer, a child process for variants that declare
`faults`, and a lost context on a wrong variant carried into the rerun.
Nothing here is a measurement.
"""
from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from plugins.gate.check import gate_candidate
from plugins.measure.gate_child import ISOLATED, IsolatedGateError, child_timeout, gate_isolated
from plugins.measure.gpu_run import rerun_families
from plugins.measure.session import CARRIED, MeasureConfig
from tests.measure.test_measure_protocol import FIXTURES, FakeExecutor, _session, fake_cupy  # noqa: F401 (the FAKE cupy fixture)

pytestmark = pytest.mark.measure
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def scale_fixture():
    from plugins.family.manifest import load_family

    return load_family(FIXTURES / "scale_fixture")


def _owner(arr):
    while getattr(arr, "base", None) is not None:
        arr = arr.base
    return arr


def _writing_outside(ex, buffer: str, offset: int):
    """A launch_plan that runs the plan, then writes one byte at `offset` from the end (>= 0) or
    the start (< 0) of `buffer`'s data: what an out-of-bounds store does on the device."""
    real = ex.launch_plan

    def launch_plan(cand, plan, dev):
        real(cand, plan, dev)
        view = dev[buffer]
        owner = _owner(view)
        start = view.ctypes.data - owner.ctypes.data
        pos = start + view.nbytes + offset if offset >= 0 else start + offset
        owner.reshape(-1).view(np.uint8)[pos] = 0

    return launch_plan


def test_guards_are_at_least_64_kib_and_the_buffer_and_keep_alignment():
    from plugins.measure.device import GUARD_MAX_BYTES, guard_bytes

    assert guard_bytes(0) == 64 * 1024 and guard_bytes(20012) == 64 * 1024
    assert guard_bytes(100_000) == 102_400 and guard_bytes(100_000) % 4096 == 0
    assert guard_bytes(1 << 30) == GUARD_MAX_BYTES


@pytest.mark.parametrize("offset, words", [(8, "past the end of buffer 'out'"), (0, "bytes 0 to 0 past its end"),
                                            (-3, "before the start of buffer 'out'")])
def test_an_overrun_on_the_gpu_is_a_rejection_naming_the_buffer_and_the_context_lives(fake_cupy, scale_fixture, monkeypatch,
                                                                                       offset, words):
    from plugins.measure.device import CupyExecutor

    ex = CupyExecutor()
    r_one = scale_fixture.candidate("r_one")
    assert gate_candidate(scale_fixture, r_one, ex, (1, 2)).passed, "in bounds, the red zones change nothing"
    monkeypatch.setattr(ex, "launch_plan", _writing_outside(ex, "out", offset))
    verdict = gate_candidate(scale_fixture, r_one, ex, (1, 2))
    assert not verdict.passed and "OutOfBounds: wrote" in verdict.reason and words in verdict.reason, verdict.reason
    assert ex.context_error() == "", "an overrun the guards catch leaves the context alive"


def test_a_variant_declaring_faults_is_gated_by_the_isolated_runner_only(tmp_path, scale_fixture):
    w = scale_fixture.wrong[0]
    fam = dataclasses.replace(scale_fixture, wrong=(dataclasses.replace(w, faults="reads far out of bounds (fixture)"),))
    calls = []

    class NoFaulting(FakeExecutor):
        def run(self, fam, cand, shape, buffers):
            assert cand.id != w.id, "the faulting variant never runs in the pass's own process"
            return super().run(fam, cand, shape, buffers)

    s = _session(tmp_path, NoFaulting())
    s.isolate = lambda f, c, seeds: calls.append(c.id) or gate_candidate(f, c, FakeExecutor(), seeds)
    out = s.measure(fam)
    assert calls == [w.id] and out.error == "" and not out.gate[w.id].passed and out.key_path is not None


def _completed(rc, stdout="", stderr=""):
    return lambda cmd, **kw: subprocess.CompletedProcess(cmd, rc, stdout, stderr)


def test_the_isolated_verdict_a_crash_a_hang_and_a_child_that_never_started(scale_fixture, tmp_path):
    w = scale_fixture.wrong[0]
    go = dict(families_root=FIXTURES)
    running = json.dumps({"running": "x"}) + "\n"
    v = gate_isolated(scale_fixture, w, (4, 5), **go, run=_completed(0, running + json.dumps({"passed": False, "reason": "out: NaN"})))
    assert not v.passed and v.reason == ISOLATED + "out: NaN" and v.seeds == (4, 5) and v.executor == "cupy (a child process)"
    v = gate_isolated(scale_fixture, w, (4,), **go, run=_completed(-6, running, "CUDA_ERROR_ILLEGAL_ADDRESS\nAborted"))
    assert not v.passed and "died running it (signal SIGABRT)" in v.reason and "CUDA_ERROR_ILLEGAL_ADDRESS | Aborted" in v.reason

    def hang(cmd, **kw):
        raise subprocess.TimeoutExpired(cmd, kw["timeout"], output=running.encode())

    v = gate_isolated(scale_fixture, w, (4,), **go, timeout_s=0.5, run=hang)
    assert not v.passed and "still running after 0.5 s" in v.reason
    with pytest.raises(IsolatedGateError, match="before running the variant: Traceback [|] ImportError: no cupy"):
        gate_isolated(scale_fixture, w, (4,), **go, run=_completed(1, "", "Traceback\nImportError: no cupy"))
    with pytest.raises(IsolatedGateError, match="of no fault signal and no CUDA error: Killed"):  # the OOM killer, an interrupt
        gate_isolated(scale_fixture, w, (4,), **go, run=_completed(-9, running, "Killed"))
    with pytest.raises(IsolatedGateError, match="could not gate the variant: ValueError: make_inputs"):
        gate_isolated(scale_fixture, w, (4,), **go, run=_completed(4, running + json.dumps({"error": "ValueError: make_inputs"})))
    v = gate_isolated(scale_fixture, w, (4,), **go, run=_completed(1, running, "cudaErrorIllegalAddress: an illegal memory access"))
    assert not v.passed and "died running it (exit status 1)" in v.reason
    v = gate_isolated(scale_fixture, w, (4,), **go, run=_completed(-11, running + json.dumps({"passed": True, "reason": ""})))
    assert v.passed and "then exited with status -11" in v.reason, "a verdict stands, so a passing wrong variant is never hidden"
    with pytest.raises(IsolatedGateError, match="did not start the variant"):
        gate_isolated(scale_fixture, w, (4,), **go, timeout_s=0.5,
                      run=lambda cmd, **kw: (_ for _ in ()).throw(subprocess.TimeoutExpired(cmd, 0.5, output=b"")))


def test_a_child_that_segfaults_with_bytes_that_are_not_utf8_is_a_rejection(scale_fixture, tmp_path):
    """A real process (a stand-in for python): says it is running, writes undecodable bytes, dies of SIGSEGV."""
    fake = tmp_path / "python"
    fake.write_text("#!/bin/sh\necho '{\"running\": \"x\"}'\nprintf 'bad \\377\\376 bytes\\n' >&2\nkill -SEGV $$\n")
    fake.chmod(0o755)
    v = gate_isolated(scale_fixture, scale_fixture.wrong[0], (1,), families_root=FIXTURES, python=str(fake), timeout_s=30)
    assert not v.passed and "signal SIGSEGV" in v.reason and "bad" in v.reason


def test_the_child_times_out_inside_the_family_watchdog():
    assert child_timeout(60.0) == 24.0 and child_timeout(None) == 120.0 and child_timeout(10.0) == 10.0


def _device_present() -> bool:
    from plugins.measure.device import probe

    return probe().available


@pytest.mark.skipif(_device_present(), reason="a CUDA device is present: the real child gates the variant there")
def test_the_real_child_without_a_gpu_is_an_error_never_a_rejection(scale_fixture):
    """The child process itself, here (no CUDA device): it cannot start the variant, so no verdict."""
    w = scale_fixture.wrong[0]
    with pytest.raises(IsolatedGateError) as err:
        gate_isolated(scale_fixture, w, (1,), families_root=FIXTURES, repo=ROOT, python=sys.executable, timeout_s=120)
    assert "status 3 before running the variant: no CUDA device" in str(err.value) and "gate_child scale_fixture w_tail --seeds 1" in str(err.value)


class _KillsContext(FakeExecutor):
    """A FAKE executor whose `victim` run kills the (fake) context, as an illegal address does."""

    def __init__(self, state, victim):
        super().__init__()
        self.state, self.victim, self.ran = state, victim, []

    def run(self, fam, cand, shape, buffers):
        self.ran.append(cand.id)
        if cand.id == self.victim:
            self.state["dead"] = "cudaErrorIllegalAddress (fake)"
            raise RuntimeError("cudaErrorIllegalAddress: an illegal memory access was encountered (fake)")
        return super().run(fam, cand, shape, buffers)


def _dying_session(tmp_path, victim):
    state = {"dead": ""}
    ex = _KillsContext(state, victim)
    s = _session(tmp_path, ex)
    s.health = lambda: state["dead"]
    return s, ex


def _rerun(s):
    s.config = MeasureConfig(**{**vars(s.config), "rerun": True})
    from plugins.measure.session import crashed_before

    s.carried = crashed_before(tmp_root(s), s.slug)
    return s


def tmp_root(s):
    return Path(s.config.out_root)


def test_a_context_lost_on_a_wrong_variant_is_carried_into_the_rerun(tmp_path, scale_fixture):
    other = dataclasses.replace(scale_fixture, name="other_fixture")
    first, _ = _dying_session(tmp_path, "w_tail")
    first.select([scale_fixture, other])
    out = first.measure(scale_fixture)
    assert out.error.startswith("context: ") and out.rerun_gate and "gated again in a new process" in out.error
    assert first.measure(other).error.startswith("context: not measured")
    summary = json.loads((tmp_path / "reports" / "measure" / "fake-test-gpu" / "scale_fixture.json").read_text())
    assert summary["rerun_gate"] is True and "cudaErrorIllegalAddress" in summary["gate_crashed"]["w_tail"]["reason"]
    assert rerun_families(tmp_path) == ["scale_fixture", "other_fixture"]
    not_rerun, ex = _dying_session(tmp_path, "none")
    assert not_rerun.carried == {}, "only the script's rerun (--measure-rerun) carries crashes: a new pass runs everything"

    second, ex = _dying_session(tmp_path, "none")  # the script's rerun: a new process, the same output folder
    again = _rerun(second).measure(scale_fixture)
    assert again.error == "" and "w_tail" not in ex.ran, "the crashed variant is not run again"
    gate = json.loads(again.key_path.read_text())["gate"]["w_tail"]
    assert gate["passed"] is False and gate["reason"].startswith(CARRIED) and "cudaErrorIllegalAddress" in gate["reason"]
    assert gate["executor"] == "an earlier process of this pass"
    second.measure(other)
    assert rerun_families(tmp_path) == [], "measured: nothing left to rerun"


def test_a_rerun_that_loses_the_context_elsewhere_is_not_rerun_again(tmp_path, scale_fixture):
    """The carried crash must not make a later loss (here a rewrite's gate run) look like a wrong variant's."""
    first, _ = _dying_session(tmp_path, "w_tail")
    first.select([scale_fixture])
    first.measure(scale_fixture)
    second, _ = _dying_session(tmp_path, "r_two")
    out = _rerun(second).measure(scale_fixture)
    assert out.error.startswith("context: ") and not out.rerun_gate and "gated again" not in out.error
    assert rerun_families(tmp_path) == []


def test_a_crash_is_carried_only_for_the_source_that_crashed(tmp_path, scale_fixture):
    first, _ = _dying_session(tmp_path, "w_tail")
    first.measure(scale_fixture)
    w = scale_fixture.wrong[0]
    edited = dataclasses.replace(scale_fixture, wrong=(dataclasses.replace(w, source=w.source + "\n// edited\n"),))
    second, ex = _dying_session(tmp_path, "none")
    _rerun(second).measure(edited)
    assert "w_tail" in ex.ran, "an edited variant is gated again"


def test_a_family_not_measured_after_a_loss_keeps_its_carried_crash(tmp_path, scale_fixture):
    other = dataclasses.replace(scale_fixture, name="other_fixture")
    first, _ = _dying_session(tmp_path, "w_tail")
    first.measure(scale_fixture)
    second, _ = _dying_session(tmp_path, "r_two")
    second = _rerun(second)
    second.measure(other)  # r_two kills the context in other_fixture first
    assert second.measure(scale_fixture).error.startswith("context: not measured")
    summary = json.loads((tmp_path / "reports" / "measure" / "fake-test-gpu" / "scale_fixture.json").read_text())
    assert "w_tail" in summary["gate_crashed"], "the next rerun still carries it"


def test_empty_faults_is_one_clear_error(tmp_path):
    import shutil

    from plugins.family.manifest import FamilyError, load_family

    fam = tmp_path / "scale_fixture"
    shutil.copytree(FIXTURES / "scale_fixture", fam)
    toml = fam / "family.toml"
    text = toml.read_text()
    assert "[[wrong]]" in text
    toml.write_text(text.replace("[[wrong]]\n", '[[wrong]]\nfaults = " "\n', 1))
    with pytest.raises(FamilyError, match=r"faults.*is empty.*remove the field"):
        load_family(fam)


def test_a_context_lost_on_a_rewrite_is_not_rerun(tmp_path, scale_fixture):
    first, _ = _dying_session(tmp_path, "r_two")
    first.select([scale_fixture])
    out = first.measure(scale_fixture)
    assert out.error.startswith("context: ") and not out.rerun_gate
    assert rerun_families(tmp_path) == [], "a rewrite that kills the context would do it again"
