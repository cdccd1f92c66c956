"""build_items end to end on a SYNTHETIC family, measurement and slip built in
tmp_path (never committed, never a measurement), plus the JSONL export."""
from __future__ import annotations

import csv
import hashlib
import io
import json
import re
import shutil
from pathlib import Path

import pytest

from plugins.items.build import (
    CONDITIONS,
    LETTERS,
    ORDERS,
    Item,
    KeyInfo,
    Option,
    SnapshotCases,
    build_items,
    family_digest,
    main,
    read_jsonl,
    task_name,
    write_jsonl,
)
from plugins.measure.keyfile import SCHEMA, KeyFileError
from plugins.items.slip import CONFLICT_WORDS

SYNTH = Path(__file__).parents[1] / "fixtures" / "items" / "synth_scale"
# Synthetic times, chosen to be recognisable digits if they ever leak into a prompt.
SYNTH_TIMES_MS = {"start": 12.3456789, "rw_one": 7.6543219, "rw_grid": 3.2109876, "rw_two": 1.0987654, "rw_stage": 9.8765432}
RUNTIME = re.compile(r"\d(?:[\d,]*\.?\d*)\s*(?:ms|µs|us|msec|usec|seconds?)\b", re.IGNORECASE)


def synthetic_measurement(times: dict[str, float], kept: bool = True, winner: str | None = None, ratio: float | None = None) -> dict:
    rewrites = sorted((k for k in times if k != "start"), key=times.get)
    winner = winner or rewrites[0]
    return {
        "schema": SCHEMA,
        "family": "synth_scale",
        "gpu": {"name": "NVIDIA H200", "slug": "h200", "compute_capability": "9.0", "sm_count": 132},
        "provenance": {"date": "2000-01-01T00:00:00Z", "git_commit": "synthetic", "command": "SYNTHETIC TEST DATA"},
        "protocol": {},
        "sizes": {"n": 1048576},
        "gate": {},
        "candidates": {k: {"time_ms": v} for k, v in times.items()},
        "ranking": {"order": rewrites, "winner": winner, "runner_up": rewrites[1],
                    "ratio": ratio if ratio is not None else times[rewrites[1]] / times[rewrites[0]],
                    "kept": kept, "reason": ""},
    }


def synthetic_slip_csv() -> str:
    """The newest details-page layout with two kernels; placeholder values, host 'synthetic-e2e-test'."""
    head = ["ID", "Process ID", "Process Name", "Host Name", "Kernel Name", "Context", "Stream", "Block Size",
            "Grid Size", "Device", "CC", "Section Name", "Metric Name", "Metric Unit", "Metric Value",
            "Rule Name", "Rule Type", "Rule Description", "Estimated Speedup Type", "Estimated Speedup"]
    out = io.StringIO()
    w = csv.writer(out, quoting=csv.QUOTE_ALL, lineterminator="\n")
    out.write("==PROF== Connected to process 1 (synthetic)\n")
    w.writerow(head)
    for kid, kernel, grid, block in (("0", "k0", "(4096, 1, 1)", "(256, 1, 1)"), ("1", "k1", "(528, 1, 1)", "(128, 2, 1)")):
        base = [kid, "1", "synthetic", "synthetic-e2e-test", kernel, "1", "7", block, grid, "0", "9.0"]
        for sec, name, unit, val in (("GPU Speed Of Light Throughput", "Duration", "us", "42.42"),
                                     ("Launch Statistics", "Registers Per Thread", "register/thread", "16"),
                                     ("Memory Workload Analysis Tables", "Shared Load Bank Conflicts", "", "1,234"),
                                     ("Command line profiler metrics", "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum", "", "5,678")):
            w.writerow(base + [sec, name, unit, val, "", "", "", "", ""])
        w.writerow(base + ["MemoryWorkloadAnalysis_Tables", "", "", "", "SharedMemoryConflicts", "OPT",
                           "causes on average a 4.0 - way bank conflict across all shared load requests", "local", "12"])
    return out.getvalue()


@pytest.fixture
def repo(tmp_path) -> Path:
    """A tmp checkout: families/synth_scale with a synthetic key, slips/h200/synth_scale.csv."""
    fam = tmp_path / "families" / "synth_scale"
    shutil.copytree(SYNTH, fam)
    (fam / "measurements").mkdir()
    (fam / "measurements" / "h200.json").write_text(json.dumps(synthetic_measurement(SYNTH_TIMES_MS)))
    (tmp_path / "slips" / "h200").mkdir(parents=True)
    (tmp_path / "slips" / "h200" / "synth_scale.csv").write_text(synthetic_slip_csv())
    return tmp_path


def test_six_items_with_mirror_mapping(repo):
    items, notes = build_items(repo / "families", "h200")
    assert notes == []
    assert [it.id for it in items] == [f"synth_scale/{c}/{o}" for c in CONDITIONS for o in ORDERS]
    ids = [r for r in ("rw_one", "rw_grid", "rw_two", "rw_stage")]
    for it in items:
        assert it.task == task_name(it.condition, it.order)
        assert [o.letter for o in it.options] == list(LETTERS)
        want = ids if it.order == "forward" else ids[::-1]
        assert [o.rewrite for o in it.options] == want
        assert it.options[LETTERS.index(it.answer)].rewrite == "rw_two"  # the measured winner
        assert it.answer == ("C" if it.order == "forward" else "B")
        assert it.runtimes_ms == {o.letter: SYNTH_TIMES_MS[o.rewrite] for o in it.options}
        assert it.key == KeyInfo("h200", True, "families/synth_scale/measurements/h200.json", "synthetic", "2000-01-01T00:00:00Z",
                                 gpu_name="NVIDIA H200", sm_count=132, compute_capability="9.0")
        assert it.prompt_sha256 == hashlib.sha256(it.prompt.encode()).hexdigest()
    assert {it.task for it in items} == {f"kernel-compass-{w}-{o}" for w in ("source", "full", "ablated") for o in ORDERS}


def test_no_runtime_or_key_in_any_prompt(repo):
    items, _ = build_items(repo / "families", "h200")
    for it in items:
        for t in SYNTH_TIMES_MS.values():
            for text in (repr(t), f"{t:.3f}", f"{t:.4f}", f"{t:.2f}"):
                assert text not in it.prompt, f"{it.id} shows a runtime {text}"
        body = it.prompt.split("## Nsight Compute report")[0]
        assert not RUNTIME.search(body), it.id
        assert "rw_" not in it.prompt and "intended" not in it.prompt.lower()
    by_cond = {it.condition: it.prompt for it in items if it.order == "forward"}
    assert "Nsight Compute" not in by_cond["source"]
    assert "Shared Load Bank Conflicts" in by_cond["full"] and "Kernel launch 2 of 2: k1" in by_cond["full"]
    assert not CONFLICT_WORDS.search(by_cond["no-conflicts"])
    assert "Registers Per Thread" in by_cond["no-conflicts"]


def test_no_measurement_no_items(repo):
    (repo / "families" / "synth_scale" / "measurements" / "h200.json").unlink()
    items, notes = build_items(repo / "families", "h200")
    assert items == []
    assert notes == ["synth_scale: no measurement for h200 (families/synth_scale/measurements/h200.json), no items"]


def test_dropped_family_says_why(repo):
    times = {**SYNTH_TIMES_MS, "rw_grid": SYNTH_TIMES_MS["rw_two"] * 1.03}
    (repo / "families" / "synth_scale" / "measurements" / "h200.json").write_text(json.dumps(synthetic_measurement(times, kept=False)))
    items, notes = build_items(repo / "families", "h200")
    assert items == [] and notes == ["synth_scale: dropped on h200: runner-up only 1.03x"]


def test_no_slip_only_source_items(repo):
    (repo / "slips" / "h200" / "synth_scale.csv").unlink()
    items, notes = build_items(repo / "families", "h200")
    assert [it.id for it in items] == ["synth_scale/source/forward", "synth_scale/source/mirror"]
    assert len(notes) == 1 and "no slip for h200" in notes[0] and "only the source items" in notes[0]


def test_intended_key_is_labelled_not_measured(repo):
    items, notes = build_items(repo / "families", "h200", allow_intended=True)
    assert len(items) == 6
    for it in items:
        assert it.key.measured is False and "NOT MEASURED" in it.key.file
        assert it.runtimes_ms == {}
        assert it.answer == ("A" if it.order == "forward" else "D")  # rw_one, the author's hypothesis
    assert "not measured" in notes[0].lower()
    # without a measurement at all, the dry run still says so and never reads times
    shutil.rmtree(repo / "families" / "synth_scale" / "measurements")
    items, notes = build_items(repo / "families", "h200", allow_intended=True)
    assert len(items) == 6 and "KEY NOT MEASURED" in notes[0]


def test_stale_and_corrupt_keys(repo):
    path = repo / "families" / "synth_scale" / "measurements" / "h200.json"
    old = {k: v for k, v in SYNTH_TIMES_MS.items() if k != "rw_stage"}
    path.write_text(json.dumps(synthetic_measurement(old)))
    items, notes = build_items(repo / "families", "h200")
    assert items == [] and "stale" in notes[0] and "rw_stage" in notes[0]
    path.write_text(json.dumps(synthetic_measurement(SYNTH_TIMES_MS, winner="rw_stage")))
    with pytest.raises(KeyFileError, match="ranking.winner"):
        build_items(repo / "families", "h200")
    path.write_text("{not json")
    with pytest.raises(KeyFileError, match="h200.json"):
        build_items(repo / "families", "h200")


def test_invalid_family_is_a_note(repo):
    (repo / "families" / "broken").mkdir()
    items, notes = build_items(repo / "families", "h200")
    assert len(items) == 6
    assert notes[0].startswith("broken: not a valid family") and "family.toml" in notes[0]


def test_jsonl_round_trip(repo, tmp_path):
    items, _ = build_items(repo / "families", "h200")
    out = tmp_path / "out" / "h200.jsonl"
    write_jsonl(items, out)
    assert read_jsonl(out) == items
    rec = json.loads(out.read_text().splitlines()[0])
    assert set(rec) == {"id", "task", "family", "condition", "order", "prompt", "prompt_sha256", "options",
                        "answer", "runtimes_ms", "key", "set", "pair", "group", "family_sha256"}
    assert (rec["set"], rec["group"], rec["pair"]) == ("classic", "", "")
    assert rec["key"]["measured"] is True
    # the GPU of the key file, its flags, and the family's source digest
    assert (rec["key"]["gpu_name"], rec["key"]["sm_count"], rec["key"]["compute_capability"]) == ("NVIDIA H200", 132, "9.0")
    assert rec["key"]["noisy"] is False and rec["key"]["fragile"] is False
    assert rec["family_sha256"] == family_digest(repo / "families" / "synth_scale") and len(rec["family_sha256"]) == 64
    assert (rec["pair"], rec["group"]) == ("", "")
    assert list(tmp_path.joinpath("out").iterdir()) == [out], "no temp file left behind"


def test_read_jsonl_names_the_bad_line(tmp_path):
    it = Item("f/source/forward", task_name("source", "forward"), "f", "source", "forward", "p",
              hashlib.sha256(b"p").hexdigest(), tuple(Option(x, f"r{x}", "t") for x in LETTERS), "A", {}, KeyInfo("h200", False, "x"))
    path = tmp_path / "x.jsonl"
    write_jsonl([it], path)
    path.write_text(path.read_text() + '{"id": 1}\n')
    with pytest.raises(ValueError, match=r"x.jsonl:2: not an item record"):
        read_jsonl(path)


def test_family_digest_follows_the_files_but_not_the_key(repo):
    fam = repo / "families" / "synth_scale"
    before = family_digest(fam)
    (fam / "measurements" / "h200.json").write_text("{}")
    assert family_digest(fam) == before  # the answer key is not the family's source
    kernel = next(fam.glob("*.cu"))
    kernel.write_text(kernel.read_text() + "\n// edited\n")
    assert family_digest(fam) != before


def test_flags_and_pair_reach_the_items(repo):
    rec = synthetic_measurement(SYNTH_TIMES_MS)
    rec["ranking"].update(noisy=True, fragile=True, fragile_reason="SYNTHETIC")
    (repo / "families" / "synth_scale" / "measurements" / "h200.json").write_text(json.dumps(rec))
    toml = repo / "families" / "synth_scale" / "family.toml"
    if "set = " in toml.read_text():
        pytest.skip("the synthetic family declares a set; pair is for the hard set")
    items, _ = build_items(repo / "families", "h200")
    assert {(it.key.noisy, it.key.fragile) for it in items} == {(True, True)}


def test_cli_export(repo, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(repo)
    assert main(["export", "--key", "h200", "--out", str(tmp_path / "items.jsonl")]) == 0
    said = capsys.readouterr().out
    assert said.startswith("wrote 6 items from 1 families") and "measured" in said
    assert len(read_jsonl(tmp_path / "items.jsonl")) == 6
    line = json.loads((tmp_path / "items.jsonl").read_text().splitlines()[0])
    assert line["schema"] == "sparktrace.item/2" and set(line["export"]) == {"git_commit", "git_dirty", "tool"}
    assert main(["export", "--key", "h200", "--out", str(tmp_path / "dry.jsonl"), "--key-intended"]) == 0
    said = capsys.readouterr().out
    assert "NOT MEASURED" in said and "KEY NOT MEASURED" in said
    assert all(not it.key.measured for it in read_jsonl(tmp_path / "dry.jsonl"))


def test_export_with_no_items_says_so_and_fails(repo, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(repo)
    out = tmp_path / "none.jsonl"
    assert main(["export", "--key", "gb10", "--out", str(out)]) == 1
    err = capsys.readouterr().err
    assert "no item on key gb10" in err and "nothing written" in err and "--key-intended" in err
    assert not out.exists()  # no 0-byte file


def test_unknown_schema_is_refused(tmp_path):
    it = Item("f/source/forward", task_name("source", "forward"), "f", "source", "forward", "p",
              hashlib.sha256(b"p").hexdigest(), tuple(Option(x, f"r{x}", "t") for x in LETTERS), "A", {}, KeyInfo("h200", False, "x"))
    path = tmp_path / "x.jsonl"
    write_jsonl([it], path, export={"git_commit": "x", "git_dirty": False, "tool": "t"})
    assert read_jsonl(path) == [it]
    path.write_text(path.read_text().replace("sparktrace.item/2", "sparktrace.item/99"))
    with pytest.raises(ValueError, match="sparktrace.item/99"):
        read_jsonl(path)


def test_snapshot_cases(repo):
    """What the snapshot tests cover: captured slips x both renderings, every renderable prompt."""
    cases = SnapshotCases.load(repo, "h200")
    assert cases.error == ""
    assert [(c.gpu, c.family, c.variant) for c in cases.slips] == [("h200", "synth_scale", "full"), ("h200", "synth_scale", "no-conflicts")]
    assert [it.id for it in cases.prompts] == [f"synth_scale/{c}/{o}" for c in CONDITIONS for o in ORDERS]
    assert cases.cases("prompt_case")[1][0] == "synth_scale-source-forward"  # ids name snapshot files: no '/'
    unknown = SnapshotCases.load(repo, "gb10")  # no record names its device, and it is not the stand-in
    assert "key 'gb10': no measurement" in unknown.error and "--key" in unknown.error and unknown.prompts == ()
    gb10 = {**synthetic_measurement(SYNTH_TIMES_MS), "gpu": {"name": "NVIDIA GB10", "slug": "gb10",
                                                            "compute_capability": "12.1", "sm_count": 48}}
    (repo / "families" / "synth_scale" / "measurements" / "gb10.json").write_text(json.dumps(gb10))
    other = SnapshotCases.load(repo, "gb10")
    assert "Target GPU: NVIDIA GB10 (48 SMs, compute capability 12.1)" in other.prompts[0].prompt
    assert other.slips[-1].skip == "no slip captured on gb10 yet: run the measure pass on a GPU"
    assert [it.id for it in other.prompts] == ["synth_scale/source/forward", "synth_scale/source/mirror"]
    (repo / "families" / "synth_scale" / "measurements" / "h200.json").write_text("{not json")
    broken = SnapshotCases.load(repo, "h200")
    assert "h200.json" in broken.error and broken.prompts == ()


def test_stale_slip_gives_source_items_only(repo):
    path = repo / "slips" / "h200" / "synth_scale.csv"
    path.write_text(path.read_text().replace('"k1"', '"k9"'))
    items, notes = build_items(repo / "families", "h200")
    assert [it.condition for it in items] == ["source", "source"]
    assert "slip for h200 is stale" in notes[0] and "['k0', 'k9']" in notes[0]


def test_task_names_keep_the_seed_pattern_and_add_the_set(repo):
    assert task_name("no-conflicts", "mirror") == "kernel-compass-ablated-mirror"
    assert task_name("full", "mirror", "hard") == "kernel-compass-hard-full-mirror"
    toml = repo / "families" / "synth_scale" / "family.toml"
    toml.write_text(toml.read_text().replace('name = "synth_scale"', 'name = "synth_scale"\nset = "hard"'))
    assert build_items(repo / "families", "h200")[0] == []  # the default selection is the classic set
    items, _ = build_items(repo / "families", "h200", sets=("hard",))
    assert {it.set for it in items} == {"hard"}
    assert {it.task for it in items} == {task_name(c, o, "hard") for c in CONDITIONS for o in ORDERS}


def test_items_name_their_shape_pair(repo):
    """A shape pair's items carry the pair id (both names sorted), in the JSONL too; an old JSONL reads without it."""
    toml = repo / "families" / "synth_scale" / "family.toml"
    toml.write_text(toml.read_text().replace('name = "synth_scale"', 'name = "synth_scale"\nset = "hard"\npair = "synth_other"'))
    items, _ = build_items(repo / "families", "h200", sets=("hard",))
    assert {it.pair for it in items} == {"synth_other+synth_scale"} and {it.group for it in items} == {""}
    old = {k: v for k, v in items[0].to_json().items() if k not in ("group", "pair")}
    assert Item.from_json(old).pair == ""
