"""A key says how to draw its inputs again: the data generator and its parameters ([data]),
reference.py by sha256, and the seeds of the gate, the timing and the slip. On labelled fakes
(executor, timer); nothing here is a measurement."""
from __future__ import annotations

import hashlib
import itertools
import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from plugins.family.manifest import load_family
from plugins.gate.check import host_buffers
from plugins.measure.keyfile import load_key
from plugins.measure.provenance import inputs_sha256
from plugins.measure.session import MeasureConfig, MeasureSession
from plugins.measure.timing import Timed

pytestmark = pytest.mark.measure

GROUPS = Path(__file__).parents[1] / "fixtures" / "datagroups"
SCALE = Path(__file__).parents[1] / "fixtures" / "measure" / "scale_fixture"


class RefExecutor:
    """A FAKE executor (test fixture): the reference's outputs for start and rewrites, a NaN for wrong ones."""

    name, sm_count = "fake-executor (test fixture)", 4

    def run(self, fam, cand, shape, buffers):
        inputs = {k: v for k, v in buffers.items() if fam.buffer(k).role == "input"}
        out = dict(buffers)
        for name, val in fam.reference_module().reference(inputs, dict(shape)).items():
            arr = np.asarray(val, dtype=fam.buffer(name).dtype).reshape(-1).copy()
            if cand.role == "wrong":
                arr[-1] = np.nan
            out[name] = arr
        return out


class FixedTimer:
    """A FAKE timer (test fixture): each candidate "takes" its fed time, the winner the least."""

    name, flush_bytes, copy_bytes, throttle_note, max_sm_clock_mhz = "fake-timer (test fixture)", 1 << 20, 2 << 20, "fake", 2000.0

    def __init__(self, times):
        self.times = times

    def warmup(self, cid, launches):
        pass

    def time_launches(self, cid, launches):
        return Timed(tuple([self.times[cid]] * launches), 1980.0)

    def time_copy(self, launches):
        return Timed(tuple([0.5] * launches), 1980.0)


def _measure(tmp_path, fam):
    seen = {}

    def timer_factory(f, shape, host, cands):
        seen["host"] = {k: v.copy() for k, v in host.items() if f.buffer(k).role == "input"}
        return FixedTimer({c.id: (1.0 if c.id == f.intended_winner else 3.0 + i) for i, c in enumerate(cands)})

    seeds = itertools.count(7000)
    cfg = MeasureConfig(out_root=tmp_path / "out", repo=tmp_path, families_root=fam.path.parent, command="t (test)")
    s = MeasureSession(cfg, RefExecutor(), timer_factory, gpu={"name": "FAKE GPU (test fixture)", "slug": "fake-test-gpu"},
                       provenance={"git_commit": "fixture"}, seeds=lambda n: (11, 12, 13), new_seed=lambda: next(seeds))
    out = s.measure(fam)
    assert out.error == "", out.error
    return load_key(tmp_path / "out" / "families" / fam.name, "fake-test-gpu"), seen["host"]


def test_a_data_group_key_records_its_generator_parameters_and_seeds(tmp_path):
    shutil.copytree(GROUPS / "gather_sorted", tmp_path / "fams" / "gather_sorted")
    toml = tmp_path / "fams" / "gather_sorted" / "family.toml"
    toml.write_text(toml.read_text().replace("R = 262144 ", "R = 512 ").replace("C = 256\n", "C = 16\n", 1))
    fam = load_family(tmp_path / "fams" / "gather_sorted")
    key, host = _measure(tmp_path, fam)
    inputs = key.record["inputs"]
    assert inputs["generator"] == "sorted" and inputs["data"] == {"generator": "sorted"}
    assert inputs["gate_seeds"] == [11, 12, 13] and inputs["slip_seed"] == inputs["timing_seed"], "the slip profiles the key's inputs"
    assert inputs["timing_seed"] == key.record["protocol"]["input_seed"] and inputs["timing_seed"] >= 7000
    assert inputs["rng"] == "numpy.random.default_rng" and "make_inputs(rng, shape, data)" in inputs["make_inputs"]
    assert inputs["reference_sha256"] == hashlib.sha256((fam.path / "reference.py").read_bytes()).hexdigest()
    # what the record says is enough to draw the timed inputs again, byte for byte
    redrawn = host_buffers(fam, fam.shapes("timing")[0], inputs["timing_seed"])
    assert inputs_sha256(redrawn, ["x", "idx"]) == inputs["timing_inputs_sha256"] == inputs_sha256(host, ["x", "idx"])
    other = host_buffers(fam, fam.shapes("timing")[0], inputs["timing_seed"] + 1)
    assert inputs_sha256(other, ["x", "idx"]) != inputs["timing_inputs_sha256"], "the digest tells draws apart"
    assert np.all(np.diff(redrawn["idx"]) >= 0), "the sorted member's generator drew these"


def test_a_classic_key_records_its_seeds_with_no_data(tmp_path):
    key, _ = _measure(tmp_path, load_family(SCALE))
    inputs = key.record["inputs"]
    assert inputs["data"] == {} and inputs["generator"] == "" and "make_inputs(rng, shape)," in inputs["make_inputs"]
    assert inputs["gate_seeds"] == [11, 12, 13] and len(inputs["timing_inputs_sha256"]) == 64
    json.dumps(key.record)  # the block is plain JSON
