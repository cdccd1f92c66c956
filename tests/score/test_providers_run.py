"""End to end: `python -m plugins.score run --model-url ...` against the loopback server in each
API's shape (OpenAI-compatible and Anthropic's Messages API), in a scratch copy of the project.

The server answers per item (parsed from the SYNTHETIC FIXTURE prompt): one reply cut off by its
budget, one 400 saying the prompt does not fit, one reply with no letter, a reasoning channel
on every reply, the right letter elsewhere. Checked: the three counts (truncated, omitted for
context, missed) stay apart in the junit sheet and the table, stop reasons and reasoning reach
the transcripts and the sheet, the run completes (exit 0), and the key is written nowhere.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import uuid
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from loopback import FaultServer, error_body
from plugins.items.build import read_jsonl

ROOT = Path(__file__).resolve().parents[2]
ITEMS = Path(__file__).parents[1] / "fixtures" / "scoring" / "synthetic_items.jsonl"  # SYNTHETIC FIXTURE
ANSWERS = {it.prompt.splitlines()[0]: it for it in read_jsonl(ITEMS)}
TRUNCATED = "fixture_alpha/source/forward"
TOO_LONG = "fixture_beta/full/mirror"
NO_LETTER = "fixture_gamma/source/mirror"
WRONG = "fixture_delta/full/forward"


def item_of(request) -> str:
    body = json.loads(request["body"])
    prompt = next(m["content"] for m in body["messages"] if m["role"] == "user")
    return ANSWERS[prompt.splitlines()[0]].id


def responder(request):
    """One answer per item: the scripted exceptions, else the key's letter."""
    item = item_of(request)
    answer = next(it.answer for it in ANSWERS.values() if it.id == item)
    if item == TRUNCATED:
        return "truncated"
    if item == TOO_LONG:
        return "context_400"
    if item == NO_LETTER:
        return ("reply", "I would need to profile this first.", None, "thinking it over")
    letter = next(L for L in "ABCD" if L != answer) if item == WRONG else answer
    stop = "stop" if request["shape"] == "openai" else "end_turn"
    return ("reply", f"The wide loads win.\nAnswer: {letter}", stop, f"Considering {item}: maybe Answer: X")


@pytest.fixture
def scoring_project(project):
    shutil.copy(ROOT / "tests" / "score" / "test_items_model.py", project.path / "tests")
    shutil.copy(ITEMS, project.path / "items.jsonl")
    return project


def wrapper(project, *args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(project.path), **(env or {})}
    return subprocess.run([sys.executable, "-m", "plugins.score", "run", "-p", "no:cacheprovider", "--items",
                           "items.jsonl", *args], cwd=project.path, env=env, capture_output=True, text=True, timeout=300)


def sheet(path: Path) -> dict[str, tuple[str, dict]]:
    out = {}
    for tc in ET.parse(path).getroot().iter("testcase"):
        status = next((c.tag for c in tc if c.tag in ("failure", "skipped", "error")), "passed")
        props = {p.get("name"): p.get("value") for p in tc.iter("property")}
        out[props["item"]] = (status, props)
    return out


@pytest.mark.parametrize("shape", ["openai", "anthropic"])
def test_truncated_context_and_missed_are_three_counts_in_both_api_shapes(scoring_project, shape):
    secret = f"sk-fake-FIXTURE-{uuid.uuid4().hex}"
    extra = ["--model-set", "api=anthropic"] if shape == "anthropic" else []
    with FaultServer(responder=responder) as srv:
        r = wrapper(scoring_project, "--model-url", srv.url, "--model-id", "fixture-model", "--model-key-env",
                    "SPARKTRACE_FAKE_KEY", *extra, "--model-set", "max_attempts=1", "--junitxml=run.xml",
                    env={"SPARKTRACE_FAKE_KEY": secret})
        chat = list(srv.requests)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    assert "1 of them truncated" in r.stderr and "1 omitted: the prompt does not fit" in r.stderr
    assert {q["shape"] for q in chat} == {shape} and len(chat) == len(ANSWERS)
    header = "x-api-key" if shape == "anthropic" else "authorization"
    assert all(secret in q["headers"][header] for q in chat)
    cases = sheet(scoring_project.path / "run.xml")
    outcomes = {item: p["outcome"] for item, (_, p) in cases.items()}
    assert outcomes[TRUNCATED] == "truncated" and outcomes[NO_LETTER] == "no-letter" and outcomes[WRONG] == "wrong"
    assert (outcomes[TOO_LONG], cases[TOO_LONG][1]["omitted_for"], cases[TOO_LONG][0]) == ("omitted", "context", "skipped")
    assert cases[TRUNCATED][1]["stop_reason"] == ("length" if shape == "openai" else "max_tokens")
    assert cases[WRONG][1]["stop_reason"] == ("stop" if shape == "openai" else "end_turn")
    assert sum(o == "correct" for o in outcomes.values()) == len(ANSWERS) - 4
    # the table: each count in its own column
    md = (scoring_project.path / "reports" / "runs" / "fixture-model" / "score.md").read_text().splitlines()
    head = next(line for line in md if line.startswith("| model"))
    row = next(line for line in md if line.startswith("| fixture-model"))
    cols = dict(zip([c.strip() for c in head.split("|")[1:-1]], [c.strip() for c in row.split("|")[1:-1]]))
    assert (cols["no-letter"], cols["truncated"], cols["omitted: context"], cols["omitted: no answer"]) == ("1", "1", "1", "0")
    # transcripts keep the stop reason and the reasoning channel, never scored
    t = json.loads((scoring_project.path / cases[WRONG][1]["transcript"]).read_text())
    turn = t["turns"][0]
    assert turn["reasoning"].startswith("Considering") and turn["letter"] != "X"
    assert turn["stop_reason"] == cases[WRONG][1]["stop_reason"]
    # the key reached the server and nothing else
    written = [f for f in scoring_project.path.rglob("*") if f.is_file() and "__pycache__" not in f.parts]
    assert [str(f) for f in written if secret.encode() in f.read_bytes()] == []
    assert secret not in r.stdout + r.stderr


def gpt5_like(request):
    """A server that takes only temperature 1 and max_completion_tokens, as OpenAI's reasoning models do."""
    body = json.loads(request["body"])
    if "max_tokens" in body:
        return ("status", 400, error_body("Unsupported parameter: 'max_tokens' is not supported with this model. "
                                          "Use 'max_completion_tokens' instead."))
    if body.get("temperature") != 1.0:
        return ("status", 400, error_body("Unsupported value: 'temperature' does not support 0.0 with this model."))
    if body.get("reasoning_effort") != "minimal":
        return ("status", 400, error_body("reasoning_effort must be minimal in this fixture"))
    return ("reply", "Answer: A", "stop", None)


def test_model_url_takes_the_registry_settings(scoring_project):
    """`--model-url` with the registry's fields: a GPT-5-family server that rejects the defaults."""
    with FaultServer(responder=gpt5_like) as srv:
        refused = wrapper(scoring_project, "--model-url", srv.url, "--model-id", "gpt-5.4-nano", "--junitxml=a.xml")
        assert refused.returncode == 2 and "HTTP 400" in refused.stdout and "max_tokens" in refused.stdout
        ok = wrapper(scoring_project, "--model-url", srv.url, "--model-id", "gpt-5.4-nano",
                     "--model-set", "temperature=1", "--model-set", "max_tokens_field=max_completion_tokens",
                     "--model-set", "max_tokens=16000", "--model-set", "reasoning=false",
                     "--model-set", "reasoning_style=reasoning_effort", "--model-set", "reasoning_effort_off=minimal",
                     "--junitxml=b.xml")
        bodies = [json.loads(q["body"]) for q in srv.requests[1:]]
    assert ok.returncode == 0, ok.stdout[-2000:] + ok.stderr[-2000:]
    assert {b["max_completion_tokens"] for b in bodies} == {16000} and {b["temperature"] for b in bodies} == {1.0}
    t = json.loads(next((scoring_project.path / "reports" / "runs" / "gpt-5.4-nano" / "transcripts").rglob("*.json")).read_text())
    assert t["generation"]["temperature"] == 1.0 and t["generation"]["max_tokens"] == 16000
    bad = wrapper(scoring_project, "--model-url", srv.url, "--model-id", "m", "--model-set", "temperatur=1")
    assert bad.returncode == 4 and re.search(r"'temperatur' is not a setting", bad.stderr)
    base = wrapper(scoring_project, "--model", "always-a", "--model-set", "temperature=1")
    assert base.returncode == 4 and "baseline" in base.stderr
