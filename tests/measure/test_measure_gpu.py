"""The measure pass on a GPU: keys for every selected family, then the slips, then a repeat.

Runs only under `pytest -m measure` on a machine with a CUDA device (skips
with the reason otherwise). pytest runs these tests in the order they are
defined, so every key (test_measure_family) is written before any slip is
taken. Slips and repeats are numbered slots, not families: their order is
decided only once the keys exist (slips by priority, repeats at random), so
a slot test names its family in its properties and messages. Each
candidate's block samples are replayed into pytest-benchmark, so its table
and `--benchmark-json` carry the CUDA-event times of the block protocol.
"""
from __future__ import annotations

from pathlib import Path

import pytest

from plugins.family.hooks import CATALOG
from plugins.measure.hooks import MEASURE
from plugins.measure.keyfile import load_key
from plugins.measure.timing import replay_into

pytestmark = [pytest.mark.measure, pytest.mark.gpu]


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    state = metafunc.config.stash[MEASURE]
    found = [d for d in metafunc.config.stash[CATALOG].found if state.wants(d.name)]
    if "measured" in metafunc.fixturenames:
        metafunc.parametrize("measured", found, ids=[d.name for d in found])
    for slot in ("slip_slot", "repeat_slot"):
        if slot in metafunc.fixturenames:
            n = len(found)
            metafunc.parametrize(slot, range(n), ids=[f"{i + 1:02d}-of-{n:02d}" for i in range(n)])
    if "measured_candidate" in metafunc.fixturenames:
        pairs = [(d, c.id if c else None) for d in found for c in (d.family.candidates if d.family else [None])]
        metafunc.parametrize("measured_candidate", pairs, ids=[f"{d.name}/{cid or 'malformed'}" for d, cid in pairs])


def _family(d):
    if d.family is None:
        pytest.skip(f"{d.name} is malformed and is not measured (tests/family/test_families.py reports it): {d.error}")
    return d.family


def _families(request) -> list:
    """Every selected, well-formed family, in catalog order (what the slots are drawn from)."""
    state = request.config.stash[MEASURE]
    return [d.family for d in request.config.stash[CATALOG].found if state.wants(d.name) and d.family is not None]


def test_measure_family(measured, measure_session, record_property, request):
    fam = _family(measured)
    measure_session.select(_families(request))  # so a rerun after a hang knows every family left
    out = measure_session.measure(fam)
    s = out.summary()
    for k in ("winner", "runner_up", "ratio", "kept", "noisy", "fragile", "reason", "slip", "key"):
        record_property(k, s[k])
    if out.not_measured:
        pytest.skip(f"{fam.name}: {out.not_measured}")
    problems = []
    if out.error:
        problems.append(f"the pass crashed at {out.error}")
    problems += out.gate_problems
    if out.key_path is not None:
        gpu = measure_session.slug
        key_dir = Path(measure_session.config.out_root) / "families" / fam.name
        if out.key_path.name == f"{gpu}.json":
            key = load_key(key_dir, gpu)
            assert key is not None and key.family == fam.name and key.kept == s["kept"]
    if problems:
        pytest.fail(f"{fam.name}:\n  " + "\n  ".join(problems), pytrace=False)
    assert out.key_path is not None and out.key_path.is_file()


def test_benchmark_candidate(measured_candidate, measure_session, request):
    d, cid = measured_candidate
    fam = _family(d)
    out = measure_session.measure(fam)
    if out.record is None:
        pytest.skip(f"{fam.name}: {out.not_measured}" if out.not_measured else
                    f"{fam.name} has no measurement ({out.error}); test_measure_family[{fam.name}] fails with it")
    entry = out.record["candidates"][cid]
    if not entry["samples_ms"]:
        pytest.skip(f"{fam.name}/{cid} was not timed: {entry.get('not_timed', 'every sample was skipped as throttled')}")
    prov, gpu = out.record["provenance"], out.record["gpu"]
    benchmark = request.getfixturevalue("benchmark")
    replay_into(benchmark, entry["samples_ms"], group=fam.name, extra_info={
        "units": "pytest-benchmark seconds; one round = one block's mean CUDA-event time of one launch plan (the key stores time_ms)",
        "family": fam.name, "candidate": cid, "role": entry["role"],
        "time_ms": entry["time_ms"], "spread": entry["spread"], "speedup_vs_start": entry["speedup_vs_start"],
        "bytes_per_s": entry["bytes_per_s"], "fraction_of_copy": entry["fraction_of_copy"],
        "launches_per_block": entry["launches_per_block"], "block_seed": out.record["protocol"]["block_seed"],
        "gpu": gpu.get("name"), "gpu_slug": gpu.get("slug"), "compute_capability": gpu.get("compute_capability"),
        "driver": prov.get("driver"), "cuda_runtime": prov.get("cuda_runtime"), "cupy": prov.get("cupy"),
        "ncu": prov.get("ncu"), "git_commit": prov.get("git_commit"), "git_dirty": prov.get("git_dirty"),
        "date": prov.get("date"), "key": str(out.key_path),
    })
    if benchmark.enabled:
        assert benchmark.stats.stats.data == pytest.approx([s / 1e3 for s in entry["samples_ms"]])


def test_slip_family(slip_slot, measure_session, record_property, request):
    """The slips come after every family's key (this test is defined after them), in priority order."""
    fams = _families(request)
    if slip_slot >= len(fams):
        pytest.skip("a malformed family holds this slot: it has no slip")
    out = measure_session.slip_slot(slip_slot, fams)
    record_property("family", out.family)
    record_property("slip", out.slip.get("status"))
    record_property("slip_reason", out.slip.get("reason", ""))
    if out.error:
        pytest.skip(f"{out.family} has no measurement ({out.error}); test_measure_family[{out.family}] fails with it")
    status = out.slip.get("status")
    if status == "failed":
        pytest.fail(f"{out.family} slip: {out.slip.get('reason')}", pytrace=False)
    if status == "skipped":
        pytest.skip(f"{out.family} slip skipped: {out.slip.get('reason')}")
    assert status == "captured" and any(f.endswith(".csv") for f in out.slip["files"]), out.slip


def test_repeat_family(repeat_slot, measure_session, record_property, request):
    """After the slips, while time remains: the timing again in a new order, written beside the key."""
    fams = _families(request)
    if repeat_slot >= len(fams):
        pytest.skip("a malformed family holds this slot: it has no key to repeat")
    res = measure_session.repeat_slot(repeat_slot, fams)
    for k in ("family", "status", "reason", "first_winner", "winner", "differs"):
        record_property(k, res.get(k))
    if res["status"] == "failed":
        pytest.fail(f"{res['family']} repeat: {res['reason']}", pytrace=False)
    if res["status"] == "skipped":
        pytest.skip(f"{res['family']} repeat skipped: {res['reason']}")
    assert res["status"] == "measured" and res.get("key"), res
