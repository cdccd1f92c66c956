"""The confidence statement of a key: per-block ratios, the interval, block agreement, the fragile mark,
and the mark carried through the key file, the items and the score tables.

Every block timing here is fed in by the test; none is a measurement.
"""
from __future__ import annotations

import itertools
import json
import math
import shutil
from pathlib import Path

import numpy as np
import pytest

from plugins.measure.confidence import T975, assess, ratio_interval, t975
from plugins.measure.keyfile import load_key
from plugins.measure.session import MeasureConfig, MeasureSession, summary_rows
from plugins.measure.timing import Timed

pytestmark = pytest.mark.measure

FIXTURES = Path(__file__).parents[1] / "fixtures" / "measure"


def _t_cdf_minus_half(q: float, df: int) -> float:
    """∫_0^q of Student's t density, by the trapezoid rule on a fine grid (independent of the table)."""
    x = np.linspace(0.0, q, 200001)
    c = math.lgamma((df + 1) / 2) - math.lgamma(df / 2) - 0.5 * math.log(df * math.pi)
    return float(np.trapezoid(np.exp(c - (df + 1) / 2 * np.log1p(x * x / df)), x))


@pytest.mark.parametrize("df", [*sorted(T975), 31, 40, 60, 120])
def test_t_quantiles_are_the_0975_quantiles(df):
    assert _t_cdf_minus_half(t975(df), df) == pytest.approx(0.475, abs=2e-7)


def test_t_quantile_needs_a_degree_of_freedom():
    with pytest.raises(ValueError):
        t975(0)


def test_interval_by_hand_on_two_blocks():
    # ln 1.1 = 0.0953102, ln 1.2 = 0.1823216: mean 0.1388159, sd = 0.0870114 / sqrt 2,
    # half width = 12.7062 * sd / sqrt 2 = 12.7062 * 0.0435057 = 0.5527924
    lo, hi = ratio_interval([1.1, 1.2])
    assert lo == pytest.approx(math.exp(0.1388159 - 0.5527924), rel=1e-6)
    assert hi == pytest.approx(math.exp(0.1388159 + 0.5527924), rel=1e-6)
    assert ratio_interval([1.3]) is None
    assert ratio_interval([1.3, 1.3, 1.3]) == pytest.approx((1.3, 1.3))
    with pytest.raises(ValueError):
        ratio_interval([1.1, 0.0])


def _blocks(times: dict[str, list[float | None]]) -> dict[str, dict[int, float]]:
    """Per-candidate block samples; None is a sample skipped as throttled."""
    return {c: {b: t for b, t in enumerate(ts) if t is not None} for c, ts in times.items()}


def test_a_tight_clear_winner_is_not_fragile():
    c = assess(_blocks({"a": [1.0, 1.01, 0.99, 1.0, 1.0], "b": [1.30, 1.31, 1.29, 1.30, 1.30], "c": [2.0] * 5}),
               ["a", "b", "c"], "a", "b", kept=True)
    assert c.blocks == (0, 1, 2, 3, 4) and c.block_ratios[1] == pytest.approx(1.31 / 1.01)
    assert c.blocks_agree and c.block_winners == ("a",) * 5
    assert c.interval[0] > 1.25 and not c.fragile and c.fragile_reason == ""


def test_kept_by_its_medians_but_fragile_by_its_blocks():
    # runner-up median 1.10 >= 1.08 (kept), but one block reads 1.03: the interval reaches below 1.08
    c = assess(_blocks({"a": [1.0] * 5, "b": [1.20, 1.03, 1.10, 1.09, 1.15]}), ["a", "b"], "a", "b", kept=True)
    lo, hi = c.interval
    logs = [math.log(r) for r in (1.20, 1.03, 1.10, 1.09, 1.15)]
    half = 2.776445105 * float(np.std(logs, ddof=1)) / math.sqrt(5)
    assert lo == pytest.approx(math.exp(np.mean(logs) - half)) and hi == pytest.approx(math.exp(np.mean(logs) + half))
    assert lo < 1.08 < hi
    assert c.fragile and "reaching below 1.08" in c.fragile_reason and c.blocks_agree


def test_a_block_that_disagrees_is_reported():
    c = assess(_blocks({"a": [1.0, 1.0, 1.0, 1.0, 1.0], "b": [1.2, 1.2, 0.95, 1.2, 1.2]}), ["a", "b"], "a", "b", kept=True)
    assert not c.blocks_agree and c.block_winners == ("a", "a", "b", "a", "a")
    assert c.fragile, "a block with the runner-up ahead pulls the interval below the gate"


def test_a_dropped_family_is_never_fragile_and_throttled_blocks_are_not_paired():
    c = assess(_blocks({"a": [1.0] * 5, "b": [1.02, 1.03, 1.01, 1.02, 1.05]}), ["a", "b"], "a", "b", kept=False)
    assert not c.fragile and c.interval is not None
    c = assess(_blocks({"a": [1.0, None, 1.0, 1.0, 1.0], "b": [1.3, 1.3, None, 1.3, 1.3]}), ["a", "b"], "a", "b", kept=True)
    assert c.blocks == (0, 3, 4) and len(c.block_ratios) == 3
    one = assess(_blocks({"a": [1.0, None], "b": [1.3, 1.3]}), ["a", "b"], "a", "b", kept=True)
    assert one.interval is None and one.fragile and "no interval" in one.fragile_reason
    none = assess({}, ["a", "b"], "a", None, kept=False)
    assert none.interval is None and not none.fragile


def test_tied_blocks_go_to_the_earlier_option():
    c = assess(_blocks({"a": [1.0, 1.0], "b": [1.0, 1.2]}), ["b", "a"], "a", "b", kept=False)
    assert c.block_winners == ("b", "a"), "forward option order breaks an exact tie, as the ranking does"


# --------------------------------------------------------------------------- through the key, the items and the score


class BlockTimer:
    """A FAKE timer (test fixture): each call returns the next fed time of that candidate; call 0 is the estimate."""

    name = "block-timer (test fixture)"
    flush_bytes = 1 << 20
    copy_bytes = 2 << 20
    throttle_note = "fake"
    max_sm_clock_mhz = None

    def __init__(self, per_call: dict[str, list[float]]):
        self.per_call = per_call
        self.n = {k: 0 for k in per_call}

    def warmup(self, cid, launches):
        pass

    def time_launches(self, cid, launches):
        t = self.per_call[cid][min(self.n[cid], len(self.per_call[cid]) - 1)]
        self.n[cid] += 1
        return Timed((t,) * launches, None)

    def time_copy(self, launches):
        return Timed((0.5,) * launches, None)


class RefExecutor:
    """A FAKE executor (test fixture): every start/rewrite returns the reference, wrong variants a NaN."""

    name = "fake (test fixture)"
    sm_count = 4

    def run(self, fam, cand, shape, buffers):
        inputs = {k: v for k, v in buffers.items() if fam.buffer(k).role == "input"}
        out = dict(buffers)
        for name, val in fam.reference_module().reference(inputs, dict(shape)).items():
            arr = np.asarray(val, dtype=fam.buffer(name).dtype).copy()
            if cand.role == "wrong":
                arr[-1] = np.nan
            out[name] = arr
        return out


# start, then r_one..r_four: the estimate, then five blocks; r_two's blocks put its ratio's interval below 1.08
FRAGILE_FEED = {"start": [5.0] * 6, "r_one": [1.0] * 6, "r_two": [1.1, 1.20, 1.03, 1.10, 1.09, 1.15],
                "r_three": [2.0] * 6, "r_four": [2.2] * 6}


def test_the_fragile_mark_reaches_the_key_file(tmp_path):
    from plugins.family.manifest import load_family

    fam = load_family(FIXTURES / "scale_fixture")
    cfg = MeasureConfig(out_root=tmp_path, repo=Path("."), families_root=FIXTURES, command="t")
    seeds = itertools.count(1)
    s = MeasureSession(cfg, RefExecutor(), lambda f, shape, host, cands: BlockTimer({c.id: FRAGILE_FEED[c.id] for c in cands}),
                       gpu={"slug": "fake-test-gpu"}, provenance={}, seeds=lambda n: tuple(range(1, n + 1)), new_seed=lambda: next(seeds))
    out = s.measure(fam)
    key = load_key(tmp_path / "families" / "scale_fixture", "fake-test-gpu")
    assert key.kept and key.ratio == pytest.approx(1.10) and key.fragile and "reaching below 1.08" in key.fragile_reason
    conf = key.record["ranking"]["confidence"]
    order = key.record["protocol"]["block_orders"]
    assert len(conf["block_ratios"]) == 5 and conf["interval"][0] < 1.08 and conf["blocks_agree"]
    assert sorted(conf["block_ratios"]) == pytest.approx(sorted([1.20, 1.03, 1.10, 1.09, 1.15])) and len(order) == 5
    assert out.summary()["fragile"] and "(fragile)" in summary_rows([out.summary()])[0][6]


def _synthetic_key(fragile: bool) -> dict:
    from plugins.measure.keyfile import SCHEMA

    times = {"start": 12.3456789, "rw_one": 7.6543219, "rw_grid": 3.2109876, "rw_two": 1.0987654, "rw_stage": 9.8765432}
    return {"schema": SCHEMA, "family": "synth_scale", "gpu": {"slug": "h200", "name": "NVIDIA H200", "sm_count": 132, "compute_capability": "9.0"},
            "provenance": {"date": "2000-01-01T00:00:00Z", "git_commit": "synthetic", "command": "SYNTHETIC TEST DATA"},
            "protocol": {}, "gate": {}, "candidates": {k: {"time_ms": v} for k, v in times.items()},
            "ranking": {"order": ["rw_two", "rw_grid"], "winner": "rw_two", "runner_up": "rw_grid", "ratio": 3.2109876 / 1.0987654,
                        "kept": True, "reason": "", "fragile": fragile,
                        "fragile_reason": "the 95% interval reaches below 1.08 (SYNTHETIC)" if fragile else ""}}


def test_the_fragile_mark_reaches_the_items_and_every_score_table(tmp_path):
    from plugins.items.build import build_items
    from plugins.score.leaderboard import Entry, leaderboard_lines
    from plugins.score.report import RunReport, report_json, report_lines
    from plugins.score.tally import Record, score_by_pass
    from plugins.score.transcripts import record_of

    fam = tmp_path / "families" / "synth_scale"
    shutil.copytree(Path(__file__).parents[1] / "fixtures" / "items" / "synth_scale", fam)
    (fam / "measurements").mkdir()
    (fam / "measurements" / "h200.json").write_text(json.dumps(_synthetic_key(True)))
    items, notes = build_items(tmp_path / "families", "h200")
    assert items and all(it.key.fragile for it in items)
    assert any("FRAGILE" in n and "synth_scale" in n for n in notes)
    assert json.loads(json.dumps(items[0].to_json()))["key"]["fragile"] is True

    it = items[0]
    data = {"item": it.id, "family": it.family, "condition": it.condition, "order": it.order, "pass": 1,
            "expected": it.answer, "chosen": it.answer, "strict": it.answer, "outcome": "correct",
            "key": {"gpu": "h200", "measured": True, "fragile": it.key.fragile}}
    rec = record_of(data)
    assert rec.key_fragile
    plain = Record("other/source/forward", "other", "source", "forward", 1, "A", "B", "B", "wrong", key="h200")
    scores = score_by_pass([rec, plain])
    fams = {f.family: f for f in scores[0].families}
    assert fams["synth_scale"].key_fragile and not fams["other"].key_fragile
    lines = list(report_lines(RunReport("m", "h200", "one-step", scores)))
    assert any(line.startswith("| synth_scale (fragile key)") for line in lines), "the per-family table marks it"
    assert any(line.startswith("| other ") for line in lines)
    assert any(line.startswith("Fragile keys (1): synth_scale.") for line in lines)
    js = report_json(RunReport("m", "h200", "one-step", scores))
    assert js["passes"][0]["families"]["synth_scale"]["key_fragile"] is True and js["passes"][0]["fragile_families"] == ["synth_scale"]
    board = list(leaderboard_lines([Entry("m", "one-step", "h200", scores)]))
    assert any(line.startswith("Fragile keys (1): synth_scale.") for line in board)
    # an older transcript (no "fragile" in its key) reads as not fragile
    assert not record_of({**data, "key": {"gpu": "h200", "measured": True}}).key_fragile


def test_the_junit_sheet_carries_the_mark_to_the_leaderboard(tmp_path):
    from plugins.score.leaderboard import read_junit

    props = {"model": "m", "item": "f/source/forward", "family": "f", "condition": "source", "order": "forward",
             "pass": "1", "expected": "A", "outcome": "correct", "key": "h200", "key_measured": "true", "key_fragile": "true"}
    xml = "<testsuite><testcase name='t'><properties>" + "".join(
        f"<property name='{k}' value='{v}'/>" for k, v in props.items()) + "</properties></testcase></testsuite>"
    (tmp_path / "j.xml").write_text(xml)
    ((_, rec),) = read_junit(tmp_path / "j.xml")
    assert rec.key_fragile
