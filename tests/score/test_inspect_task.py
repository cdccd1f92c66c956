"""The Inspect AI task shipped in harnesses/inspect/sparktrace.py, end to end and offline.

Inspect (its own openai-api provider) drives the loopback server over the SYNTHETIC FIXTURE
items; SparkTrace's own client and scorer ask the same deterministic server the same items.
The two must agree item by item (the reply, the letter, the outcome) and in every aggregate
(accuracy by condition and set, full minus source and its McNemar test, the three counts).
Under `local_model` the same comparison runs against llama.cpp's server with SmolLM2.
"""
from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("inspect_ai", reason="inspect-ai is not installed (requirements.txt pins it)")

from loopback import FaultServer  # noqa: E402
from plugins.items.build import read_jsonl, write_jsonl  # noqa: E402
from plugins.items.options import CONDITIONS  # noqa: E402
from plugins.score.inspect_task import UnmeasuredKeyError, inspect_outcomes, sparktrace_task  # noqa: E402
from plugins.score.modelapi import GenerateConfig  # noqa: E402
from plugins.score.registry import make_model, spec_from_url  # noqa: E402
from plugins.score.session import Case, ModelInfo, run_case  # noqa: E402
from plugins.score.tally import Record, score_pass  # noqa: E402
from plugins.score.transcripts import read_transcript, record_of  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
TASK = "harnesses/inspect/sparktrace.py"  # as a user passes it, from the repository root
ITEMS = ROOT / "tests" / "fixtures" / "scoring" / "synthetic_items.jsonl"  # SYNTHETIC FIXTURE
BY_FIRST_LINE = {it.prompt.splitlines()[0]: it for it in read_jsonl(ITEMS)}
MAX_TOKENS = 64


def responder(request):
    """One deterministic reply per item: every outcome SparkTrace counts, and both letters wrong and right."""
    body = json.loads(request["body"])
    it = BY_FIRST_LINE[body["messages"][-1]["content"].splitlines()[0]]
    n = sorted(BY_FIRST_LINE.values(), key=lambda x: x.id).index(it)
    if n == 0:
        return "truncated"
    if n == 1:
        return "context_400"
    if n == 2:
        return ("reply", "I would have to profile it.", "stop", None)
    if n == 3:
        return ("reply", "Answer: a bit of everything, but **B**", "stop", None)  # "Answer: a bit" is not A
    letter = it.answer if n % 3 else next(L for L in "ABCD" if L != it.answer)
    return ("reply", f"Reasoning about the loads.\nAnswer: {letter}", "stop", f"Maybe Answer: {letter}?")


def inspect_cli(log_dir: Path, model: str, base_url: str, key_env: str, *, max_tokens: int = MAX_TOKENS,
                **task_args):
    """`inspect eval harnesses/inspect/sparktrace.py ...` as a researcher types it, from the repository root;
    the eval log read back."""
    from inspect_ai.log import list_eval_logs, read_eval_log

    args = [sys.executable, "-m", "inspect_ai", "eval", TASK, "--model", model, "--model-base-url", base_url,
            "--temperature", "0", "--max-tokens", str(max_tokens), "--max-retries", "1", "--max-connections", "1",
            "--display", "none", "--log-dir", str(log_dir)]
    for k, v in task_args.items():
        args += ["-T", f"{k}={v}"]
    r = subprocess.run(args, cwd=ROOT, capture_output=True, text=True, timeout=600,
                       env={**os.environ, key_env: "sk-fake-FIXTURE-inspect", "INSPECT_LOG_LEVEL": "warning"})
    logs = list_eval_logs(str(log_dir))
    assert logs, r.stdout[-3000:] + r.stderr[-3000:]
    log = read_eval_log(logs[0])
    assert log.status == "success", (log.error, r.stderr[-3000:])
    return log, r


def run_inspect(url: str, log_dir: Path, **task_args):
    return inspect_cli(log_dir, "openai-api/loopback/fixture-model", url, "LOOPBACK_API_KEY", **task_args)[0]


def run_sparktrace(url: str, items, run_dir: Path, passes: int = 1) -> list[Record]:
    spec = spec_from_url(url, "fixture-model", name="fixture-model", max_tokens=MAX_TOKENS, max_attempts=1)
    info = ModelInfo(spec.name, spec.model_id, url, spec.generate_config(), make=lambda: make_model(spec))
    model = info.make()
    try:
        results = [run_case(Case(it, k, passes), model, info, run_dir) for k in range(1, passes + 1) for it in items]
    finally:
        model.close()
    return [record_of(read_transcript(r.transcript), r.transcript) for r in results]


def metrics(log) -> dict[str, float]:
    return {name: m.value for s in log.results.scores for name, m in s.metrics.items()}


def test_inspect_scores_equal_sparktraces_item_by_item(tmp_path):
    items = read_jsonl(ITEMS)
    with FaultServer(responder=responder) as srv:
        log = run_inspect(srv.url, tmp_path / "logs", items=str(ITEMS))
        records = run_sparktrace(srv.url, items, tmp_path / "run")
    inspect = inspect_outcomes(log.samples)
    assert len(inspect) == len(items) == len(records)
    for r in records:
        got = inspect[(r.item, 1)]
        assert got["outcome"] == r.outcome, r.item
        assert got["letter"] == r.chosen, r.item
    seen = {r.outcome for r in records}
    assert seen == {"correct", "wrong", "no-letter", "truncated", "omitted"}  # every outcome was exercised
    # the same replies: SparkTrace's transcripts hold what Inspect's log holds
    for it in items:
        t = read_transcript(next(p for p in (tmp_path / "run").rglob("*.json") if read_transcript(p)["item"] == it.id))
        got = inspect[(it.id, 1)]
        if t["outcome"] == "omitted":
            assert t["omitted_for"] == "context" and got["stop_reason"] == "model_length"
            continue
        assert t["turns"][0]["response"] == got["text"], it.id
    # and the same table
    s = score_pass(records)
    m = metrics(log)
    for c in CONDITIONS:
        cell = s.conditions[c]
        if cell.n:
            assert m[c] == pytest.approx(cell.correct / cell.n), c
    assert m["classic"] == pytest.approx(s.total.correct / s.total.n)
    assert m["scored_accuracy"] == pytest.approx(s.total.correct / s.total.n)
    assert m["full_minus_source"] == s.full_minus_source
    assert (m["pairs"], m["b_source_only"], m["c_full_only"]) == (s.paired.pairs, s.paired.b, s.paired.c)
    assert m["p_exact_mcnemar"] == pytest.approx(s.paired.p)
    assert (m["no_letter"], m["truncated"], m["omitted_context"], m["omitted_no_answer"]) == (
        s.total.no_letter, s.total.truncated, s.total.omitted_context, s.total.omitted_no_answer)
    # samples carry their metadata
    sample = next(x for x in log.samples if x.id == items[0].id)
    assert {k: sample.metadata[k] for k in ("family", "condition", "order", "set", "key")} == {
        "family": items[0].family, "condition": items[0].condition, "order": items[0].order, "set": items[0].set,
        "key": items[0].key.gpu}


def test_epochs_are_passes(tmp_path):
    items = read_jsonl(ITEMS)[:6]
    path = tmp_path / "items.jsonl"
    write_jsonl(items, path)
    with FaultServer(responder=responder) as srv:
        log = run_inspect(srv.url, tmp_path / "logs", items=str(path), passes=2)
        records = run_sparktrace(srv.url, items, tmp_path / "run", passes=2)
    inspect = inspect_outcomes(log.samples)
    assert {e for _, e in inspect} == {1, 2} and len(inspect) == 12
    for r in records:
        assert inspect[(r.item, r.pass_index)]["outcome"] == r.outcome


def test_an_unmeasured_key_is_refused_unless_asked_and_then_said(tmp_path):
    dry = [dataclasses.replace(it, runtimes_ms={}, key=dataclasses.replace(it.key, measured=False))
           for it in read_jsonl(ITEMS)[:4]]
    path = tmp_path / "dry.jsonl"
    write_jsonl(dry, path)
    with pytest.raises(UnmeasuredKeyError, match="key_intended=true"):
        sparktrace_task(items=str(path))
    with FaultServer(responder=responder) as srv:
        log = run_inspect(srv.url, tmp_path / "logs", items=str(path), key_intended=True)
    assert log.eval.metadata["warning"].startswith("NOT A MEASURED SCORE")
    assert log.eval.metadata["sparktrace_key_measured"] is False


# -- against llama.cpp's server with the local model ----------------------------------


@pytest.mark.local_model
def test_inspect_and_sparktrace_agree_on_the_local_model(tmp_path):
    from plugins.score.localserver import LocalServer, find_model_file, llama_cpp_installed

    if not llama_cpp_installed():
        pytest.skip("llama-cpp-python is not installed; run scripts/install-local-model.sh")
    find_model_file()
    # three short SYNTHETIC FIXTURE prompts (a real item is 2,000-12,000 tokens, minutes each on two
    # shared cores): the plumbing, not SmolLM2's letters, is under test
    items = read_jsonl(ITEMS)[:3]
    path = tmp_path / "items.jsonl"
    write_jsonl(items, path)
    with LocalServer(tmp_path / "server", startup_timeout_s=120) as srv:
        log, _ = inspect_cli(tmp_path / "logs", "openai-api/local/smollm2-135m-instruct", srv.base_url,
                             "LOCAL_API_KEY", max_tokens=48, items=str(path))
        spec = spec_from_url(srv.base_url, "smollm2-135m-instruct", name="local", max_tokens=48, max_attempts=1)
        info = ModelInfo("local", spec.model_id, srv.base_url, GenerateConfig(temperature=0.0, max_tokens=48),
                         make=lambda: make_model(spec))
        model = info.make()
        results = [run_case(Case(it, 1, 1), model, info, tmp_path / "run") for it in items]
        model.close()
    inspect = inspect_outcomes(log.samples)
    for it, r in zip(items, results):
        t = read_transcript(r.transcript)
        got = inspect[(it.id, 1)]
        assert t["turns"][0]["response"] == got["text"], it.id  # greedy decoding: the same reply
        assert (got["outcome"], got["letter"]) == (r.outcome, r.chosen), it.id
