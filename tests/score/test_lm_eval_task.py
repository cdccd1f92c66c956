"""The lm-evaluation-harness task definition (harnesses/lm_eval/sparktrace/), loaded as lm_eval
loads it: TaskManager over --include_path, the export read by `datasets` from
reports/items/sparktrace.jsonl, requests built, replies scored by SparkTrace's extractor. No model
runs (lm_eval's core needs no torch); the replies are typed here, and their letters are the point."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

pytest.importorskip("lm_eval", reason="lm-eval is not installed (requirements.txt pins it)")

from plugins.items.build import read_jsonl, write_jsonl  # noqa: E402
from plugins.items.options import CONDITIONS  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
ITEMS = ROOT / "tests" / "fixtures" / "scoring" / "synthetic_items.jsonl"  # SYNTHETIC FIXTURE


@pytest.fixture
def tasks(tmp_path, monkeypatch):
    """The export where the YAML expects it, in a scratch working directory; datasets offline."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HF_DATASETS_CACHE", str(tmp_path / "hf-cache"))
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf-home"))
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    write_jsonl(read_jsonl(ITEMS), tmp_path / "reports" / "items" / "sparktrace.jsonl",
                export={"git_commit": "SYNTHETIC", "git_dirty": False, "tool": "test"})
    from lm_eval.tasks import TaskManager

    # include_defaults=False: only our folder is indexed (lm-eval ships thousands of task files)
    tm = TaskManager(include_path=str(ROOT / "harnesses" / "lm_eval"), include_defaults=False)
    assert {"sparktrace", "sparktrace_source", "sparktrace_full", "sparktrace_no_conflicts", "sparktrace_no_cue"} <= set(tm.all_tasks)
    loaded = tm.load(["sparktrace"])
    assert set(loaded["group_map"]["sparktrace"]) == {"sparktrace_source", "sparktrace_full", "sparktrace_no_conflicts"}
    return loaded


def _leaves(loaded) -> dict:
    return dict(loaded["tasks"])


def test_lm_eval_loads_one_task_per_condition_over_the_export(tasks):
    items = read_jsonl(ITEMS)
    leaves = _leaves(tasks)
    assert set(leaves) == {"sparktrace_source", "sparktrace_full", "sparktrace_no_conflicts"}
    for cond in CONDITIONS:
        task = leaves[f"sparktrace_{cond.replace('-', '_')}"]
        docs = list(task.test_docs())
        want = [it for it in items if it.condition == cond]
        assert [d["id"] for d in docs] == [it.id for it in want]
        assert all(task.doc_to_text(d) == it.prompt and task.doc_to_target(d) == it.answer for d, it in zip(docs, want))
        task.build_all_requests(limit=2, rank=0, world_size=1)
        assert len(task.instances) == 2
        inst = task.instances[0]
        assert inst.request_type == "generate_until" and inst.args[0].endswith(want[0].prompt)
        assert inst.args[1]["max_gen_toks"] == 4096 and inst.args[1]["do_sample"] is False


def test_replies_are_scored_by_sparktraces_extractor(tasks):
    task = _leaves(tasks)["sparktrace_source"]
    doc = next(iter(task.test_docs()))
    other = next(L for L in "ABCD" if L != doc["answer"])
    assert task.process_results(doc, [f"Reasoning.\nAnswer: {doc['answer']}"]) == {"acc": 1.0, "no_letter": 0.0}
    assert task.process_results(doc, [f"Answer: {other}"]) == {"acc": 0.0, "no_letter": 0.0}
    assert task.process_results(doc, ["I cannot tell."]) == {"acc": 0.0, "no_letter": 1.0}
    if doc["answer"] != "A":  # Inspect's letter scorer reads "Answer: a bit" as A; SparkTrace's does not
        assert task.process_results(doc, ["Answer: a bit unclear"])["acc"] == 0.0
    agg = task.aggregation()
    assert agg["acc"]([1.0, 0.0, 1.0, 1.0]) == 0.75
