"""The per-item flow with fake models: transcripts, reuse, refresh, omitted, fatal, two-step, resume."""
import dataclasses
import re
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from plugins.score.baselines import AlwaysA, RandomBaseline, make_baseline
from plugins.items.build import read_jsonl
from plugins.score.modelapi import Completion, FatalModelError, GenerateConfig, OmittedError
from plugins.score.session import (
    Case,
    ModelInfo,
    Options,
    RunStopped,
    ScoringConfigError,
    ScoringSession,
    check_items,
    followup_message,
    format_ms,
    make_cases,
    redact_url,
    run_case,
)
from plugins.score.transcripts import read_transcript, transcript_path

ROOT = Path(__file__).resolve().parents[2]
ITEMS = Path(__file__).parents[1] / "fixtures" / "scoring" / "synthetic_items.jsonl"  # SYNTHETIC FIXTURE


@pytest.fixture(scope="module")
def items():
    return read_jsonl(ITEMS)


class Scripted:
    """A fake model: answers from a script (item prompt -> replies in turn order) and counts calls."""

    name = "scripted"

    def __init__(self, reply=lambda messages: "Answer: A", error=None):
        self.reply, self.error, self.calls = reply, error, []

    def generate(self, messages, config):
        self.calls.append(list(messages))
        if self.error is not None:
            raise self.error
        return Completion(text=self.reply(messages), model="fake-1", prompt_tokens=10, completion_tokens=5,
                          latency_s=0.25, attempts=2)


class RegexExtractor:
    """A test extractor (the plain `Answer: X` rule) so these tests do not depend on plugins.score.extract."""

    def letter(self, text):
        found = re.findall(r"Answer:\s*([ABCD])\b", text)
        return found[-1] if found else None

    strict = letter


def run(c, model, inf, run_dir, **kw):
    return run_case(c, model, inf, run_dir, extractor=RegexExtractor(), **kw)


def info(name="scripted"):
    return ModelInfo(name, "fake-1", "http://127.0.0.1:9/v1", GenerateConfig(temperature=0.0, max_tokens=64),
                     make=lambda: None)


def case(items, i=0, pass_index=1, passes=1):
    return Case(items[i], pass_index, passes)


def test_one_step_writes_a_complete_transcript(tmp_path, items):
    it = items[1]  # a mirror item
    m = Scripted(lambda msgs: f"Thinking...\nAnswer: {it.answer}")
    r = run(Case(it, 1, 1), m, info(), tmp_path)
    assert (r.outcome, r.chosen, r.strict, r.tokens, r.reused) == ("correct", it.answer, it.answer, 15, False)
    d = read_transcript(r.transcript)
    assert r.transcript == transcript_path(tmp_path, "scripted", 1, it.id)
    assert d["prompt_sha256"] == it.prompt_sha256 and d["item"] == it.id and d["pass"] == 1
    assert d["model"] == {"name": "scripted", "id": "fake-1", "base_url": "http://127.0.0.1:9/v1"}
    assert d["generation"] == {"temperature": 0.0, "max_tokens": 64, "reasoning": None, "seed": None,
                               "thinking_budget_tokens": None}
    assert d["turns"][0]["request"] == [{"role": "user", "content": it.prompt}]
    assert d["turns"][0]["response"].endswith(f"Answer: {it.answer}")
    assert (d["attempts"], d["latency_s"], d["mode"]) == (2, 0.25, "one-step")
    assert d["started_utc"] <= d["finished_utc"]


def test_outcomes_wrong_and_no_letter(tmp_path, items):
    it = items[0]
    wrong = next(L for L in "ABCD" if L != it.answer)
    assert run(case(items), Scripted(lambda m: f"Answer: {wrong}"), info(), tmp_path).outcome == "wrong"
    r = run(case(items), Scripted(lambda m: "I cannot decide."), info(), tmp_path, refresh=True)
    assert (r.outcome, r.chosen) == ("no-letter", None)
    assert "no answer letter" in r.explain()


class Replies:
    """A fake model whose completions (text, stop reason, reasoning) come from a list, in turn."""

    name = "scripted"

    def __init__(self, *completions):
        self.completions, self.calls = list(completions), 0

    def generate(self, messages, config):
        self.calls += 1
        out = self.completions.pop(0)
        if isinstance(out, BaseException):
            raise out
        return out


def test_truncated_is_its_own_outcome_kept_in_the_transcript(tmp_path, items):
    """A reasoning model that spends its budget: empty content, finish_reason length. Not a miss:
    truncated, the stop reason and the reasoning channel in the transcript, the letter it had
    reached (in its reasoning) never scored."""
    it = items[0]
    cut = Completion(text="", model="fake-1", stop_reason="length", reasoning=f"So far: Answer: {it.answer}")
    r = run(case(items), Replies(cut), info(), tmp_path)
    assert (r.outcome, r.chosen, r.strict, r.stop_reason) == ("truncated", None, None, "length")
    assert "truncated" in r.explain() and "'length'" in r.explain()
    d = read_transcript(r.transcript)
    t = d["turns"][0]
    assert (t["stop_reason"], t["truncated"], t["reasoning"], t["letter"]) == ("length", True, cut.reasoning, None)
    assert (d["outcome"], d["stop_reason"]) == ("truncated", "length")
    # kept like an answer on a rerun; asked again with --refresh, and when the budget changes
    again = Replies()
    assert run(case(items), again, info(), tmp_path).reused and again.calls == 0
    fresh = Replies(Completion(text=f"Answer: {it.answer}", model="fake-1", stop_reason="stop"))
    assert run(case(items), fresh, info(), tmp_path, refresh=True).outcome == "correct" and fresh.calls == 1
    run(case(items), Replies(cut), info(), tmp_path, refresh=True)
    bigger = ModelInfo("scripted", "fake-1", "", GenerateConfig(temperature=0.0, max_tokens=4096), make=lambda: None)
    raised = Replies(Completion(text=f"Answer: {it.answer}", model="fake-1", stop_reason="stop"))
    assert run(case(items), raised, bigger, tmp_path).outcome == "correct" and raised.calls == 1


def test_a_cut_off_reply_is_truncated_even_with_a_letter(tmp_path, items):
    it = items[0]
    r = run(case(items), Replies(Completion(text=f"Answer: {it.answer} because, first, the", model="f",
                                            stop_reason="max_tokens")), info(), tmp_path)
    assert (r.outcome, r.chosen) == ("truncated", None)


def test_reasoning_channel_is_never_scored(tmp_path, items):
    it = items[0]
    other = next(L for L in "ABCD" if L != it.answer)
    r = run(case(items), Replies(Completion(text=f"Answer: {other}", model="f", stop_reason="stop",
                                            reasoning=f"Answer: {it.answer}")), info(), tmp_path)
    assert (r.outcome, r.chosen) == ("wrong", other)
    r = run(case(items), Replies(Completion(text="", model="f", stop_reason="stop", reasoning=f"Answer: {it.answer}")),
            info(), tmp_path, refresh=True)
    assert (r.outcome, r.chosen) == ("no-letter", None)


def test_context_overflow_is_omitted_for_context_and_asked_again(tmp_path, items):
    from plugins.score.modelapi import ContextOverflowError

    r = run(case(items), Replies(ContextOverflowError("context: the prompt needs 9000 tokens ...")), info(), tmp_path)
    assert (r.outcome, r.omitted_for) == ("omitted", "context") and "9000 tokens" in r.omitted_reason
    d = read_transcript(r.transcript)
    assert (d["outcome"], d["omitted_for"], d["turns"]) == ("omitted", "context", [])
    other = run(case(items, 1), Replies(OmittedError("no answer after 4 attempts")), info(), tmp_path)
    assert (other.outcome, other.omitted_for) == ("omitted", "")  # the other kind of omission
    again = Replies(Completion(text="Answer: A", model="f", stop_reason="stop"))
    assert not run(case(items), again, info(), tmp_path).reused and again.calls == 1


def test_truncated_first_turn_ends_a_two_step_item(tmp_path, items):
    it = items[0]
    m = Replies(Completion(text="Answer: A and", model="f", stop_reason="length"))
    r = run(case(items), m, info(), tmp_path, two_step=True)
    assert r.outcome == "truncated" and m.calls == 1  # no follow-up after a cut-off first pick


def test_rerun_reuses_transcript_without_calling(tmp_path, items):
    first = Scripted()
    run(case(items), first, info(), tmp_path)
    again = Scripted(error=AssertionError("must not be called"))
    r = run(case(items), again, info(), tmp_path)
    assert r.reused and again.calls == []
    refreshed = Scripted()
    assert not run(case(items), refreshed, info(), tmp_path, refresh=True).reused
    assert len(refreshed.calls) == 1


def test_changed_prompt_is_asked_again(tmp_path, items):
    run(case(items), Scripted(), info(), tmp_path)
    it = items[0]
    prompt = it.prompt + "\n(edited)"
    import hashlib
    changed = dataclasses.replace(it, prompt=prompt, prompt_sha256=hashlib.sha256(prompt.encode()).hexdigest())
    m = Scripted()
    assert not run(Case(changed, 1, 1), m, info(), tmp_path).reused
    assert len(m.calls) == 1


def test_new_key_rescores_saved_reply_without_calling(tmp_path, items):
    it = items[0]
    run(Case(it, 1, 1), Scripted(lambda m: f"Answer: {it.answer}"), info(), tmp_path)
    other = next(L for L in "ABCD" if L != it.answer)
    rekeyed = dataclasses.replace(it, answer=other)
    m = Scripted(error=AssertionError("must not be called"))
    r = run(Case(rekeyed, 1, 1), m, info(), tmp_path)
    assert (r.reused, r.outcome, r.expected) == (True, "wrong", other)
    assert read_transcript(r.transcript)["expected"] == other  # the file now says what the table says


def test_omitted_is_recorded_then_asked_again(tmp_path, items):
    r = run(case(items), Scripted(error=OmittedError("no turn after 4 attempts")), info(), tmp_path)
    assert (r.outcome, r.omitted_reason) == ("omitted", "no turn after 4 attempts")
    assert read_transcript(r.transcript)["outcome"] == "omitted"
    m = Scripted()
    assert run(case(items), m, info(), tmp_path).outcome in ("correct", "wrong")
    assert len(m.calls) == 1


def test_fatal_writes_nothing_and_propagates(tmp_path, items):
    with pytest.raises(FatalModelError):
        run(case(items), Scripted(error=FatalModelError("HTTP 401")), info(), tmp_path)
    assert not transcript_path(tmp_path, "scripted", 1, items[0].id).exists()


def test_session_stops_the_run_on_fatal(tmp_path, items):
    class PytestSession:
        shouldstop = False

    s = ScoringSession(Options(model="scripted", rootdir=tmp_path, run_dir=Path("run")), worker=True,
                       extractor=RegexExtractor())
    s.info = dataclasses.replace(info(), make=lambda: Scripted(error=FatalModelError("HTTP 401: bad key")))
    ps, props = PytestSession(), []
    with pytest.raises(RunStopped, match="model 'scripted' failed fatally.*HTTP 401: bad key"):
        s.score(case(items), props, ps)
    assert "HTTP 401" in ps.shouldstop and props == []


def test_session_records_properties_and_reads_table_from_disk(tmp_path, items):
    s = ScoringSession(Options(model="scripted", rootdir=tmp_path, run_dir=Path("run")), worker=False,
                       extractor=RegexExtractor())
    s.info = dataclasses.replace(info(), make=lambda: Scripted(lambda m: "Answer: B"))
    s.cases = make_cases(items[:6], 1)
    for c in s.cases:
        props = []
        s.score(c, props, object())
        s.note("call", props)
    props = dict(props)
    fam, cond, order = items[5].id.split("/")
    assert props["transcript"] == str(Path("run", "transcripts", "scripted", "pass1", fam, cond, order + ".json"))
    assert props["expected"] == items[5].answer
    assert {"model", "family", "condition", "order", "expected", "chosen", "outcome", "tokens", "latency_s",
            "key_measured", "pass"} <= set(props)
    # the controller has no results in memory, only the transcript paths: the table comes from disk
    lines = s.finish()
    assert lines[0].startswith("SparkTrace score: model scripted, set classic, key synthetic-fixture (measured)")
    expected_correct = sum(it.answer == "B" for it in items[:6])
    total_row = next(l for l in lines if l.startswith("| scripted"))
    assert total_row.split("|")[6].strip() == str(expected_correct)
    assert (tmp_path / "run" / "score.md").read_text().splitlines()[0] == lines[0]


def test_two_step_shows_runtime_of_first_pick_and_scores_second(tmp_path, items):
    it = items[0]
    first = next(L for L in "ABCD" if L != it.answer)
    replies = iter([f"Answer: {first}", f"Switching.\nAnswer: {it.answer}"])
    m = Scripted(lambda msgs: next(replies))
    r = run(Case(it, 1, 1), m, info(), tmp_path, two_step=True)
    assert (r.first_choice, r.chosen, r.outcome) == (first, it.answer, "correct")
    follow = m.calls[1][-1]
    assert follow.role == "user" and f"{format_ms(it.runtimes_ms[first])} ms" in follow.content
    assert m.calls[1][1].role == "assistant" and m.calls[1][1].content == f"Answer: {first}"
    d = read_transcript(r.transcript)
    assert d["mode"] == "two-step" and len(d["turns"]) == 2 and d["first_choice"] == first
    assert d["tokens"] == 30  # both turns
    # a rerun reuses both turns; the same file read back in one-step mode is asked again
    assert run(Case(it, 1, 1), Scripted(error=AssertionError), info(), tmp_path, two_step=True).reused
    assert not run(Case(it, 1, 1), Scripted(), info(), tmp_path).reused


def test_two_step_without_a_first_letter_is_a_miss_with_no_second_turn(tmp_path, items):
    m = Scripted(lambda msgs: "Hmm.")
    r = run(case(items), m, info(), tmp_path, two_step=True)
    assert (r.outcome, r.first_choice, len(m.calls)) == ("no-letter", None, 1)


def test_two_step_reasks_when_the_shown_runtime_would_differ(tmp_path, items):
    it = items[0]
    m = Scripted(lambda msgs: "Answer: B")
    run(Case(it, 1, 1), m, info(), tmp_path, two_step=True)
    slower = dataclasses.replace(it, runtimes_ms={k: v * 2 for k, v in it.runtimes_ms.items()})
    m2 = Scripted(lambda msgs: "Answer: B")
    assert not run(Case(slower, 1, 1), m2, info(), tmp_path, two_step=True).reused
    assert len(m2.calls) == 2


def test_format_ms():
    assert format_ms(10.4651) == "10.47"
    assert format_ms(0.621) == "0.621"
    assert format_ms(0.0004567) == "0.000457"
    assert format_ms(12345.6) == "12,346"


def test_baselines_are_deterministic_and_per_item(items):
    rb = RandomBaseline()
    a = rb.for_item("x/full/forward", 1).generate([], GenerateConfig()).text
    assert a == rb.for_item("x/full/forward", 1).generate([], GenerateConfig()).text
    picks = {rb.for_item("x/full/forward", k).generate([], GenerateConfig()).text[-1] for k in range(1, 40)}
    assert picks == set("ABCD")  # the pass changes the seed
    assert AlwaysA().generate([], GenerateConfig()).text.endswith("Answer: A")
    assert make_baseline("random").name == "random" and make_baseline("gpt") is None


def test_random_baseline_in_run_case_matches_its_seed(tmp_path, items):
    r1 = run(case(items, 3, 2, 2), RandomBaseline(), info("random"), tmp_path)
    expect = RandomBaseline(items[3].id, 2).generate([object()], GenerateConfig()).text[-1]
    assert r1.chosen == expect


def test_options_check_refuses_bad_combinations(tmp_path):
    with pytest.raises(ScoringConfigError, match="--two-step shows the model the measured runtime"):
        Options(model="random", two_step=True, key_intended=True).check()
    with pytest.raises(ScoringConfigError, match="--model-url needs --model-id"):
        Options(model_url="http://x/v1").check()
    with pytest.raises(ScoringConfigError, match="only applies when scoring"):
        Options(two_step=True).check()
    with pytest.raises(ScoringConfigError, match="--passes 0"):
        Options(model="random", passes=0).check()
    assert Options(model="a/b").resolved_run_dir == Path(".", "reports", "runs", "a_b")
    assert Options(model="m", two_step=True).resolved_run_dir.name == "m.two-step"


def test_check_items_names_file_item_field_and_fix(items):
    opts = Options(model="random")
    with pytest.raises(ScoringConfigError, match=r"f\.jsonl: item .* appears twice"):
        check_items([items[0], items[0]], "f.jsonl", opts)
    bad_sha = dataclasses.replace(items[0], prompt_sha256="0" * 64)
    with pytest.raises(ScoringConfigError, match="field 'prompt_sha256'.*re-export"):
        check_items([bad_sha], "f.jsonl", opts)
    unmeasured = dataclasses.replace(items[0], key=dataclasses.replace(items[0].key, measured=False))
    with pytest.raises(ScoringConfigError, match="was not measured.*--key-intended"):
        check_items([unmeasured], "f.jsonl", opts)
    check_items([unmeasured], "f.jsonl", Options(model="random", key_intended=True))
    with pytest.raises(ScoringConfigError, match="--key h200"):
        check_items([items[0]], "f.jsonl", Options(model="random", key="h200"))


def test_followup_names_gpu_and_runtime(items):
    it = items[0]
    msg = followup_message(it, "C")
    assert it.key.gpu in msg and f"{format_ms(it.runtimes_ms['C'])} ms" in msg and "Answer: A" in msg


def test_redact_url_drops_credentials_and_query():
    assert redact_url("https://user:pw@host:8443/v1?key=abc") == "https://host:8443/v1"


# -- a run killed midway resumes ------------------------------------------------

KILL_SCRIPT = textwrap.dedent("""
    import os, re, sys
    from pathlib import Path
    from plugins.items.build import read_jsonl
    from plugins.score.modelapi import Completion, GenerateConfig
    from plugins.score.session import ModelInfo, make_cases, run_case

    class DiesAfter:
        name = "resumable"
        def __init__(self, k): self.k, self.n = k, 0
        def generate(self, messages, config):
            if self.n == self.k:
                os._exit(3)  # a hard kill: no cleanup, no finally
            self.n += 1
            return Completion(text="Answer: C", model="fake")

    class RegexExtractor:
        def letter(self, text):
            found = re.findall(r"Answer:\\s*([ABCD])\\b", text)
            return found[-1] if found else None
        strict = letter

    items_path, run_dir, k = sys.argv[1], Path(sys.argv[2]), int(sys.argv[3])
    info = ModelInfo("resumable", "fake", "", GenerateConfig(), make=lambda: None)
    model = DiesAfter(k)
    for c in make_cases(read_jsonl(items_path), 2):
        run_case(c, model, info, run_dir, extractor=RegexExtractor())
""")


def test_killed_run_resumes_without_loss_or_duplicates(tmp_path, items):
    k = 7
    proc = subprocess.run([sys.executable, "-c", KILL_SCRIPT, str(ITEMS), str(tmp_path), str(k)],
                          cwd=ROOT, capture_output=True, text=True, timeout=60,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert proc.returncode == 3, proc.stderr
    files = sorted(tmp_path.rglob("*"))
    done = [f for f in files if f.is_file()]
    assert len(done) == k and all(f.suffix == ".json" for f in done)  # no temp file, nothing half-written
    before = {f: f.read_text() for f in done}

    m = Scripted(lambda msgs: "Answer: C")
    cases = make_cases(items, 2)
    results = [run(c, m, info("resumable"), tmp_path) for c in cases]
    assert len(m.calls) == len(cases) - k  # only the unfinished items were asked
    assert sum(r.reused for r in results) == k
    after = [f for f in tmp_path.rglob("*") if f.is_file()]
    assert len(after) == len(cases) == len({r.transcript for r in results})  # one file per item-pass
    assert all(before[f] == f.read_text() for f in before)  # finished ones untouched
