"""End to end: `pytest --model ...` in a scratch copy of the project (pytester, subprocess).

Items are the SYNTHETIC FIXTURE items of tests/fixtures/scoring (answers
arbitrary); models are the baselines and a fake OpenAI-compatible server on
loopback. Nothing here is a measurement or a real model's score.
"""
import json
import shutil
import threading
import uuid
import xml.etree.ElementTree as ET
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from plugins.items.build import read_jsonl, write_jsonl


ROOT = Path(__file__).resolve().parents[2]
ITEMS = Path(__file__).parents[1] / "fixtures" / "scoring" / "synthetic_items.jsonl"  # SYNTHETIC FIXTURE
N_ITEMS = len(read_jsonl(ITEMS))


@pytest.fixture
def project(project):
    """The scratch project (tests/conftest.py) plus the item test and the synthetic items."""
    shutil.copy(ROOT / "tests" / "score" / "test_items_model.py", project.path / "tests")
    shutil.copy(ITEMS, project.path / "items.jsonl")
    return project


def run(project, *args):
    return project.runpytest_subprocess("-p", "no:cacheprovider", "--items", "items.jsonl", *args, timeout=180)


def junit(path):
    """testcase name -> (status, properties)."""
    out = {}
    for tc in ET.parse(path).getroot().iter("testcase"):
        status = next((c.tag for c in tc if c.tag in ("failure", "skipped", "error")), "passed")
        out[tc.get("name")] = (status, {p.get("name"): p.get("value") for p in tc.iter("property")})
    return out


def test_always_a_under_xdist_scores_from_disk(project):
    items = {it.id: it for it in read_jsonl(ITEMS)}
    n_a = sum(it.answer == "A" for it in items.values())
    (project.path / "tests" / "test_other.py").write_text("def test_other():\n    pass\n")
    r = run(project, "--model", "always-a", "--junitxml", "j.xml", "-n", "2")
    r.assert_outcomes(passed=n_a, failed=N_ITEMS - n_a)
    cases = junit(project.path / "j.xml")
    assert len(cases) == N_ITEMS and "test_other" not in cases  # scoring runs only the item tests
    for name, (status, p) in cases.items():
        it = items[name[len("test_item["):-1]]
        assert (p["model"], p["family"], p["condition"], p["order"]) == ("always-a", it.family, it.condition, it.order)
        assert (p["expected"], p["chosen"], p["strict"], p["pass"], p["key_measured"]) == (it.answer, "A", "A", "1", "true")
        assert p["outcome"] == ("correct" if it.answer == "A" else "wrong")
        assert status == ("passed" if it.answer == "A" else "failure")
        assert float(p["latency_s"]) >= 0 and p["tokens"] == ""
        assert (project.path / p["transcript"]).is_file()
    # the controller never ran an item: its table comes from the transcripts the workers wrote
    out = r.stdout.str()
    assert "SparkTrace score" in out
    row = next(l for l in r.outlines if l.startswith("| always-a"))
    assert row.split("|")[6].strip() == str(n_a)
    md = (project.path / "reports" / "runs" / "always-a" / "score.md").read_text()
    assert row in md.splitlines()
    js = json.loads((project.path / "reports" / "runs" / "always-a" / "score.json").read_text())
    assert js["passes"][0]["total"]["correct"] == n_a and js["key_measured"] is True


def test_random_passes_are_per_pass_and_reruns_are_identical(project):
    r1 = run(project, "--model", "random", "--passes", "2", "--junitxml", "a.xml", "-n", "2")
    a = junit(project.path / "a.xml")
    assert len(a) == 2 * N_ITEMS
    assert any(n.endswith("#p2]") for n in a) and any(n.endswith("#p1]") for n in a)
    assert {p["chosen"] for _, p in a.values()} <= set("ABCD")
    r2 = run(project, "--model", "random", "--passes", "2", "--junitxml", "b.xml")
    b = junit(project.path / "b.xml")
    assert {n: p["chosen"] for n, (_, p) in a.items()} == {n: p["chosen"] for n, (_, p) in b.items()}
    assert {p["reused_transcript"] for _, p in b.values()} == {"true"}
    files = list((project.path / "reports" / "runs" / "random" / "transcripts").rglob("*.json"))
    assert len(files) == 2 * N_ITEMS  # one per item-pass, nothing duplicated
    # same table both times; mean row over the passes
    rows1 = [l for l in r1.outlines if l.startswith("| random")]
    rows2 = [l for l in r2.outlines if l.startswith("| random")]
    assert rows1 == rows2 and len(rows1) == 3 and "| mean" in rows1[2]


def test_two_step_records_both_picks(project):
    items = {it.id: it for it in read_jsonl(ITEMS)}
    run(project, "--model", "random", "--two-step", "--junitxml", "t.xml")
    cases = junit(project.path / "t.xml")
    assert len(cases) == N_ITEMS
    for name, (_, p) in cases.items():
        it = items[p["item"]]
        assert p["mode"] == "two-step" and p["first_choice"] in "ABCD" and p["chosen"] in "ABCD"
        t = json.loads((project.path / p["transcript"]).read_text())
        assert len(t["turns"]) == 2
        shown = t["turns"][1]["request"][-1]["content"]
        assert f"option {p['first_choice']}" in shown
        assert "reports/runs/random.two-step/" in p["transcript"]
        assert p["outcome"] == ("correct" if p["chosen"] == it.answer else "wrong")


def test_intended_key_is_a_labelled_dry_run(project):
    items = [it for it in read_jsonl(ITEMS)]
    import dataclasses

    dry = [dataclasses.replace(it, runtimes_ms={}, key=dataclasses.replace(it.key, measured=False)) for it in items]
    write_jsonl(dry, project.path / "items.jsonl")
    refused = run(project, "--model", "always-a")
    assert refused.ret == 4 and "was not measured" in refused.stderr.str() and "--key-intended" in refused.stderr.str()
    two = run(project, "--model", "always-a", "--key-intended", "--two-step")
    assert two.ret == 4 and "--two-step shows the model the measured runtime" in two.stderr.str()
    r = run(project, "--model", "always-a", "--key-intended", "--junitxml", "d.xml")
    lines = r.outlines
    first = lines[next(i for i, l in enumerate(lines) if "SparkTrace score" in l) + 1]
    assert first.startswith("NOT A MEASURED SCORE")
    assert "(intended winner: the key was NOT measured)" in r.stdout.str()
    md = (project.path / "reports" / "runs" / "always-a" / "score.md").read_text().splitlines()
    assert md[0].startswith("NOT A MEASURED SCORE")
    js = json.loads((project.path / "reports" / "runs" / "always-a" / "score.json").read_text())
    assert js["warning"].startswith("NOT A MEASURED SCORE") and js["key_measured"] is False
    assert {p["key_measured"] for _, p in junit(project.path / "d.xml").values()} == {"false"}


def test_no_model_means_no_item_tests(project):
    r = project.runpytest_subprocess("-p", "no:cacheprovider", "--collect-only", "-q", timeout=120)
    assert "test_item" not in r.stdout.str()
    assert "SparkTrace score" not in r.stdout.str()


def test_no_buildable_item_says_why_and_names_the_dry_run(project):
    (project.path / "families" / "fixture_broken").mkdir(parents=True)  # no family.toml
    unchosen = project.runpytest_subprocess("-p", "no:cacheprovider", "--model", "always-a", timeout=120)
    err = unchosen.stderr.str()  # no --key and no measured key: one usage error that says how to get one
    assert unchosen.ret == 4 and "no GPU has measured a key yet" in err and "--key-intended" in err
    r = project.runpytest_subprocess("-p", "no:cacheprovider", "--model", "always-a", "--key", "h200", timeout=120)
    out = r.stdout.str()
    assert "no item could be built on key h200, so model always-a was not scored" in out
    assert "- fixture_broken: not a valid family" in out and "--key-intended" in out
    assert r.ret == 0
    missing = project.runpytest_subprocess("-p", "no:cacheprovider", "--model", "always-a", "--key", "h200",
                                           "--families-root", "nowhere", timeout=120)
    assert missing.ret == 4 and "building items from nowhere on key h200" in missing.stderr.str()


# -- a fake OpenAI-compatible server on loopback -------------------------------


class FakeServer:
    """Answers /v1/chat/completions; `mode` picks the behaviour; every request is counted."""

    def __init__(self, mode="answer", letter="B"):
        self.mode, self.letter, self.auth, self.bodies = mode, letter, [], []
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                fake.auth.append(self.headers.get("Authorization"))
                fake.bodies.append(body)
                if fake.mode == "401":
                    self._send(401, {"error": {"message": "invalid api key"}})
                    return
                content = None if fake.mode == "null" else f"Reasoning about the options.\nAnswer: {fake.letter}"
                self._send(200, {
                    "id": "fake", "model": body["model"],
                    "choices": [{"index": 0, "message": {"role": "assistant", "content": content},
                                 "finish_reason": "stop"}],
                    "usage": {"prompt_tokens": 11, "completion_tokens": 4},
                    # a careless server echoing the caller's header: must never reach a file
                    "echo": {"authorization": self.headers.get("Authorization")},
                })

            def _send(self, status, obj):
                data = json.dumps(obj).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(timeout=10)


@pytest.fixture
def server():
    s = FakeServer()
    yield s
    s.close()


def test_fake_server_run_leaks_no_key(project, server, monkeypatch):
    secret = f"sk-sparktrace-test-{uuid.uuid4().hex}"
    monkeypatch.setenv("SPARKTRACE_FAKE_KEY", secret)
    items = {it.id: it for it in read_jsonl(ITEMS)}
    r = run(project, "--model-url", server.url, "--model-id", "fake-model", "--model-key-env", "SPARKTRACE_FAKE_KEY",
            "--junitxml", "k.xml", "--log-file", "run.log", "--log-file-level", "DEBUG")
    n_b = sum(it.answer == "B" for it in items.values())
    r.assert_outcomes(passed=n_b, failed=N_ITEMS - n_b)
    assert server.auth == [f"Bearer {secret}"] * N_ITEMS  # the key was really used...
    assert {b["model"] for b in server.bodies} == {"fake-model"}
    cases = junit(project.path / "k.xml")
    assert {p["tokens"] for _, p in cases.values()} == {"15"}
    assert {p["model"] for _, p in cases.values()} == {"fake-model"}
    t = json.loads((project.path / next(iter(cases.values()))[1]["transcript"]).read_text())
    assert t["model"]["base_url"] == server.url and t["model"]["id"] == "fake-model"
    written = [f for f in project.path.rglob("*") if f.is_file() and "__pycache__" not in f.parts
               and f.suffix != ".py"]
    assert any(f.name == "run.log" for f in written) and len(written) > N_ITEMS
    leaks = [str(f) for f in written if secret.encode() in f.read_bytes()]
    assert leaks == []  # ...and written nowhere: transcripts, junit, reports, logs
    assert secret not in r.stdout.str() + r.stderr.str()


def test_fatal_status_stops_the_run(project, server):
    server.mode = "401"
    r = run(project, "--model-url", server.url, "--model-id", "fake-model", "--junitxml", "f.xml")
    assert r.ret == 2  # interrupted, not a list of 24 failures
    assert len(server.bodies) == 1
    out = r.stdout.str()
    assert "model 'fake-model' failed fatally" in out and "HTTP 401" in out
    assert len(junit(project.path / "f.xml")) == 1


def test_omitted_items_skip_and_are_asked_again(project, server):
    server.mode = "null"
    (project.path / "reg.toml").write_text(
        f'[models.fake]\nbase_url = "{server.url}"\nmodel_id = "fake-model"\nmax_attempts = 1\n')
    r = run(project, "--model", "fake", "--registry", "reg.toml", "--junitxml", "o.xml")
    r.assert_outcomes(skipped=N_ITEMS)
    reasons = [tc.find("skipped").get("message") for tc in ET.parse(project.path / "o.xml").getroot().iter("testcase")]
    assert len(reasons) == N_ITEMS and all(m.startswith("omitted: model 'fake'") for m in reasons)
    cases = junit(project.path / "o.xml")
    assert {(s, p["outcome"]) for s, p in cases.values()} == {("skipped", "omitted")}
    row = next(l for l in r.outlines if l.startswith("| fake"))
    assert row.split("|")[11].strip() == str(N_ITEMS)  # the "omitted: no answer" column
    server.mode = "answer"
    r2 = run(project, "--model", "fake", "--registry", "reg.toml")
    assert len(server.bodies) == 2 * N_ITEMS  # every omitted item was asked again
    assert r2.ret == 1
