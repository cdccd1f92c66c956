"""Registry, request shape, retry policy and bounded concurrency (no network, no server)."""
from __future__ import annotations

import random
import threading
import time
from pathlib import Path

import pytest

import plugins.score.registry as models_mod
from plugins.score.client import BoundedModel, OpenAIClient, RetryingModel, redact, redact_obj, run_bounded
from plugins.score.context import ContextCheckedModel
from plugins.score.modelapi import Completion, FatalModelError, GenerateConfig, Message, OmittedError, RetryableError
from plugins.score.registry import (
    DEFAULT_REGISTRY,
    LocalModel,
    ModelSpec,
    RegistryError,
    load_registry,
    make_model,
    register_factory,
    resolve_model,
    spec_from_url,
)

MSGS = [Message("system", "You pick the fastest rewrite."), Message("user", "A, B, C or D?")]


class Scripted:
    """A ModelAPI double: plays a list of completions / exceptions, counting calls."""

    name = "scripted"

    def __init__(self, outcomes):
        self.outcomes = list(outcomes)
        self.calls = 0

    def generate(self, messages, config):
        self.calls += 1
        out = self.outcomes.pop(0)
        if isinstance(out, BaseException):
            raise out
        return out


def done(text="Answer: A"):
    return Completion(text=text, model="scripted")


# -- registry ------------------------------------------------------------------

def test_repo_registry_loads_and_has_the_seed_models():
    reg = load_registry(DEFAULT_REGISTRY)
    for name in ("gpt-5.4-nano", "gpt-5.4-mini", "nemotron-3-nano", "nemotron-3-super", "local"):
        assert name in reg
    for name in ("nemotron-3-nano", "nemotron-3-super"):
        s = reg[name]
        assert s.base_url == "https://integrate.api.nvidia.com/v1"
        assert s.api_key_env == "NVIDIA_API_KEY"
        assert s.reasoning is False and s.reasoning_style == "chat_template_kwargs"
    assert {s.api_key_env for s in reg.values()} >= {"OPENAI_API_KEY", "GEMINI_API_KEY", "ANTHROPIC_API_KEY"}
    assert reg["local"].kind == "local" and reg["local"].api_key_env is None
    assert reg["local"].max_concurrency == 1
    for s in reg.values():
        assert s.kind == "local" or s.base_url.startswith("https://")


def write(tmp_path: Path, text: str) -> Path:
    p = tmp_path / "models.toml"
    p.write_text(text)
    return p


GOOD = '[models.m]\nbase_url = "https://x.example/v1"\nmodel_id = "m-1"\n'


@pytest.mark.parametrize("body,needles", [
    (GOOD + "temprature = 0.5\n", ["[models.m]", "temprature", "allowed"]),
    ('[models.m]\nmodel_id = "m-1"\n', ["[models.m]", "base_url", "missing"]),
    ('[models.m]\nbase_url = "ftp://x.example/v1"\nmodel_id = "m"\n', ["base_url", "http(s)"]),
    ('[models.m]\nbase_url = "https:///v1"\nmodel_id = "m"\n', ["base_url", "host"]),
    ('[models.m]\nbase_url = "https://x.example/v1"\n', ["model_id", "missing"]),
    (GOOD + 'max_tokens = "lots"\n', ["max_tokens", "positive integer"]),
    (GOOD + "max_tokens = 0\n", ["max_tokens", "positive integer"]),
    (GOOD + 'reasoning = "off"\n', ["reasoning", "true or false"]),
    (GOOD + 'reasoning_style = "thinking"\n', ["reasoning_style", "chat_template_kwargs"]),
    (GOOD + 'api_key_env = "sk-live-abc"\n', ["api_key_env", "NAME of an environment variable"]),
    (GOOD + "temperature = -1\n", ["temperature", ">= 0"]),
    (GOOD + "extra_body = 3\n", ["extra_body", "table"]),
    ('[models.m]\nkind = "local"\nmodel_id = "x"\nbase_url = "http://h/v1"\n', ["local", "base_url"]),
    ('[models.m]\nkind = "remote"\nmodel_id = "x"\n', ["kind", "http, local"]),
    ('[models.gpt-5.4]\nbase_url = "https://x/v1"\nmodel_id = "g"\n', ["[models.gpt-5]", "unknown field"]),
    ("[models]\n", ["no [models.NAME] entries"]),
    (GOOD + "[other]\nx = 1\n", ["top-level", "other"]),
    ("[models.m\n", ["not valid TOML"]),
])
def test_registry_errors_name_file_entry_field_and_fix(tmp_path, body, needles):
    path = write(tmp_path, body)
    with pytest.raises(RegistryError) as info:
        load_registry(path)
    msg = str(info.value)
    assert str(path) in msg and "fix" in msg
    for n in needles:
        assert n in msg


def test_registry_missing_file(tmp_path):
    with pytest.raises(RegistryError, match="not found"):
        load_registry(tmp_path / "nope.toml")


def test_registry_fields_and_url_normalisation(tmp_path):
    reg = load_registry(write(tmp_path, (
        '[models."a.b"]\nbase_url = "https://x.example/v1/chat/completions/"\nmodel_id = "vendor/m"\n'
        'api_key_env = "X_KEY"\ntemperature = 1\nmax_tokens = 99\nreasoning = false\n'
        'reasoning_style = "reasoning_effort"\nreasoning_effort_off = "minimal"\n'
        'max_tokens_field = "max_completion_tokens"\n[models."a.b".extra_body]\ntop_p = 0.9\n'
    )))
    s = reg["a.b"]
    assert s.base_url == "https://x.example/v1"
    assert isinstance(s.temperature, float) and s.temperature == 1.0
    assert s.generate_config(seed=3) == GenerateConfig(temperature=1.0, max_tokens=99, reasoning=False, seed=3)
    assert s.extra_body == {"top_p": 0.9}


@pytest.mark.parametrize("body,needles", [
    (GOOD + 'api = "grpc"\n', ["api", "openai, anthropic"]),
    (GOOD + 'api = "anthropic"\nreasoning_style = "reasoning_effort"\n', ["reasoning_style", "anthropic_thinking"]),
    (GOOD + 'reasoning_style = "anthropic_thinking"\n', ["reasoning_style", "api 'openai'"]),
    (GOOD + 'api = "anthropic"\nmax_tokens_field = "max_completion_tokens"\n', ["max_tokens_field", "max_tokens"]),
    (GOOD + 'api = "anthropic"\nreasoning_style = "anthropic_thinking"\nreasoning = true\ntemperature = 1.0\n',
     ["thinking_budget_tokens", ">= 1024"]),
    (GOOD + 'api = "anthropic"\nreasoning_style = "anthropic_thinking"\nreasoning = true\ntemperature = 1.0\n'
     'thinking_budget_tokens = 8000\nmax_tokens = 4096\n', ["thinking_budget_tokens", "below max_tokens (4096)"]),
    (GOOD + 'api = "anthropic"\nreasoning_style = "anthropic_thinking"\nreasoning = true\nthinking_budget_tokens = 2000\n',
     ["temperature", "temperature = 1.0"]),
    (GOOD + 'thinking_budget_tokens = 2000\n', ["thinking_budget_tokens", "anthropic_thinking"]),
    (GOOD + 'api_key_env = "K"\napi_key_header = "x api key"\n', ["api_key_header", "header name"]),
    (GOOD + 'api_key_header = "x-api-key"\n', ["api_key_header", "api_key_env"]),
    ('[models.m]\nkind = "local"\nmodel_id = "x"\napi = "anthropic"\n', ["local", "OpenAI API"]),
])
def test_provider_fields_are_checked(tmp_path, body, needles):
    path = write(tmp_path, body)
    with pytest.raises(RegistryError) as info:
        load_registry(path)
    msg = str(info.value)
    assert str(path) in msg and "fix" in msg
    for n in needles:
        assert n in msg


def test_one_field_chooses_the_anthropic_client(monkeypatch):
    from plugins.score.anthropic_api import AnthropicClient
    from plugins.score.registry import make_client

    monkeypatch.setenv("X_TEST_KEY", "k")
    reg = load_registry(DEFAULT_REGISTRY)
    native = reg["claude-sonnet-4.5-messages"]
    assert native.api == "anthropic" and native.base_url == "https://api.anthropic.com/v1"
    c = make_client(native)
    assert isinstance(c, AnthropicClient) and c.url == "https://api.anthropic.com/v1/messages"
    assert c.headers("k") == {"Content-Type": "application/json", "x-api-key": "k", "anthropic-version": "2023-06-01"}
    assert isinstance(make_client(reg["claude-sonnet-4.5"]), OpenAIClient)  # the compatibility endpoint
    full = spec_from_url("https://api.anthropic.com/v1/messages", "claude-x", api="anthropic")
    assert make_client(full).url == "https://api.anthropic.com/v1/messages"
    thinking = reg["claude-sonnet-4.5-thinking"].generate_config()
    assert thinking.reasoning is True and thinking.thinking_budget_tokens == 8000 and thinking.temperature == 1.0


def test_model_set_takes_every_registry_field_with_its_defaults():
    from plugins.score.registry import parse_settings

    got = parse_settings(["temperature=1", "max_tokens=16000", "max_tokens_field=max_completion_tokens",
                          "reasoning=false", "reasoning_style=reasoning_effort", 'reasoning_effort_off="minimal"',
                          "extra_body={top_p = 0.9}", "context_tokens=32768"])
    s = spec_from_url("http://127.0.0.1:8000/v1", "gpt-5.4-nano", **got)
    assert (s.temperature, s.max_tokens, s.max_tokens_field, s.reasoning, s.reasoning_style, s.reasoning_effort_off,
            dict(s.extra_body), s.context_tokens) == (1.0, 16000, "max_completion_tokens", False, "reasoning_effort",
                                                      "minimal", {"top_p": 0.9}, 32768)
    body = OpenAIClient("m", s.base_url, s.model_id, reasoning_style=s.reasoning_style,
                        reasoning_effort_off=s.reasoning_effort_off, max_tokens_field=s.max_tokens_field,
                        extra_body=dict(s.extra_body)).request_body([Message("user", "q")], s.generate_config())
    assert body["max_completion_tokens"] == 16000 and "max_tokens" not in body and body["temperature"] == 1.0
    assert body["reasoning_effort"] == "minimal" and body["top_p"] == 0.9
    defaults = spec_from_url("http://127.0.0.1:8000/v1", "m")  # nothing set: the registry's defaults
    assert (defaults.temperature, defaults.max_tokens, defaults.max_tokens_field, defaults.reasoning,
            defaults.context_probe) == (ModelSpec.temperature, ModelSpec.max_tokens, "max_tokens", None, "auto")
    for bad, needle in (("temperature", "not FIELD=VALUE"), ("nosuch=1", "not a setting"),
                        ("base_url=http://x/v1", "not a setting"), ("max_tokens=0", None)):
        with pytest.raises(RegistryError, match=needle or "positive integer"):
            spec_from_url("http://127.0.0.1:8000/v1", "m", **parse_settings([bad]))


def test_model_set_overrides_a_registry_entry_and_is_checked_again():
    from plugins.score.registry import parse_settings, with_settings

    reg = load_registry(DEFAULT_REGISTRY)
    s = with_settings(reg["gpt-5.4-nano"], parse_settings(["max_tokens=32000"]))
    assert s.max_tokens == 32000 and s.max_tokens_field == "max_completion_tokens" and s.name == "gpt-5.4-nano"
    local = with_settings(reg["local"], parse_settings(["max_tokens=64"]))
    assert local.kind == "local" and local.max_tokens == 64 and local.max_concurrency == 1
    with pytest.raises(RegistryError, match="--model-set"):
        with_settings(reg["gpt-5.4-nano"], parse_settings(["reasoning_style=anthropic_thinking"]))


def test_spec_from_url():
    s = spec_from_url("http://127.0.0.1:8000/v1/", "llama-3", max_tokens=50)
    assert (s.name, s.base_url, s.model_id, s.api_key_env, s.max_tokens) == (
        "llama-3", "http://127.0.0.1:8000/v1", "llama-3", None, 50)
    with pytest.raises(RegistryError, match="--model-url"):
        spec_from_url("localhost:8000", "x")


def test_make_model_wraps_in_retrying(monkeypatch):
    monkeypatch.setenv("X_TEST_KEY", "k")
    m = make_model(ModelSpec(name="m", model_id="i", base_url="https://x/v1", api_key_env="X_TEST_KEY",
                             max_attempts=7))
    # the context check outside (it omits before asking), then the retries, as in Inspect AI
    assert isinstance(m, ContextCheckedModel) and m.name == "m"
    assert isinstance(m.inner, RetryingModel) and m.inner.max_attempts == 7 and m.inner.name == "m"
    m.close()


def test_local_entry_starts_nothing_until_used(tmp_path):
    m = make_model(load_registry()["local"], log_dir=tmp_path)
    assert isinstance(m, LocalModel)
    m.close()
    assert list(tmp_path.iterdir()) == []


def test_resolve_model_factories_first_then_registry(monkeypatch):
    monkeypatch.setattr(models_mod, "_FACTORIES", {})
    class Fixed:
        name = "fixture-const"

        def generate(self, messages, config):
            return done("Answer: D")

    register_factory("fixture-const", Fixed)
    assert resolve_model("fixture-const", {}).generate(MSGS, GenerateConfig()).text == "Answer: D"
    with pytest.raises(FatalModelError, match="unknown model 'nope'.*fixture-const"):
        resolve_model("nope", {})


# -- request body ------------------------------------------------------------

@pytest.mark.parametrize("style,reasoning,expect", [
    ("none", False, {}),
    ("chat_template_kwargs", False, {"chat_template_kwargs": {"enable_thinking": False}}),
    ("chat_template_kwargs", True, {"chat_template_kwargs": {"enable_thinking": True}}),
    ("chat_template_kwargs", None, {}),
    ("reasoning_effort", False, {"reasoning_effort": "minimal"}),
    ("reasoning_effort", True, {"reasoning_effort": "medium"}),
    ("reasoning_effort", None, {}),
])
def test_reasoning_is_sent_per_entry_style(style, reasoning, expect):
    c = OpenAIClient("m", "https://x/v1", "vendor/m", None, reasoning_style=style, reasoning_effort_off="minimal")
    body = c.request_body(MSGS, GenerateConfig(temperature=0.2, max_tokens=77, reasoning=reasoning, seed=5))
    base = {"model": "vendor/m", "temperature": 0.2, "max_tokens": 77, "seed": 5,
            "messages": [{"role": "system", "content": "You pick the fastest rewrite."},
                         {"role": "user", "content": "A, B, C or D?"}]}
    assert body == {**base, **expect}


def test_max_tokens_field_and_extra_body_merge():
    c = OpenAIClient("m", "https://x/v1", "m", None, reasoning_style="chat_template_kwargs",
                     max_tokens_field="max_completion_tokens",
                     extra_body={"top_p": 0.5, "chat_template_kwargs": {"foo": 1}})
    body = c.request_body(MSGS, GenerateConfig(max_tokens=10, reasoning=False))
    assert body["max_completion_tokens"] == 10 and "max_tokens" not in body and "seed" not in body
    assert body["top_p"] == 0.5
    assert body["chat_template_kwargs"] == {"enable_thinking": False, "foo": 1}


def test_redaction():
    assert redact("key=abc123 and abc123", ["abc123", None, ""]) == "key=*** and ***"
    assert redact_obj({"abc": ["x abc", 1, {"k": "abc"}]}, ["abc"]) == {"***": ["x ***", 1, {"k": "***"}]}


# -- retry policy -------------------------------------------------------------

def test_backoff_is_exponential_with_jitter_and_capped():
    sleeps: list[float] = []
    inner = Scripted([RetryableError("x")] * 5 + [done()])
    m = RetryingModel(inner, max_attempts=6, base_delay_s=1.0, max_delay_s=5.0, sleep=sleeps.append,
                      rng=random.Random(1))
    out = m.generate(MSGS, GenerateConfig())
    assert out.attempts == 6 and inner.calls == 6
    ceilings = [1.0, 2.0, 4.0, 5.0, 5.0]
    for delay, ceiling in zip(sleeps, ceilings, strict=True):
        assert ceiling / 2 <= delay <= ceiling
    assert len(set(sleeps)) == len(sleeps)  # jittered, not constant


def test_fatal_passes_straight_through():
    inner = Scripted([FatalModelError("HTTP 401")])
    with pytest.raises(FatalModelError, match="401"):
        RetryingModel(inner, sleep=lambda s: None).generate(MSGS, GenerateConfig())
    assert inner.calls == 1


def test_null_text_is_retried_then_omitted():
    inner = Scripted([done(None), done(None)])
    with pytest.raises(OmittedError, match="null content"):
        RetryingModel(inner, max_attempts=2, sleep=lambda s: None).generate(MSGS, GenerateConfig())


def test_empty_string_is_an_answer_not_an_omission():
    out = RetryingModel(Scripted([done("")]), sleep=lambda s: None).generate(MSGS, GenerateConfig())
    assert out.text == "" and out.attempts == 1


# -- concurrency --------------------------------------------------------------

def test_run_bounded_keeps_order_and_runs_in_parallel_up_to_the_bound():
    lock = threading.Lock()
    state = {"now": 0, "peak": 0}
    barrier = threading.Barrier(3, timeout=5)

    def fn(x):
        with lock:
            state["now"] += 1
            state["peak"] = max(state["peak"], state["now"])
        if x < 3:
            barrier.wait()  # proves three really run at once
        time.sleep(0.01)
        with lock:
            state["now"] -= 1
        return x * x

    assert run_bounded(fn, range(12), max_concurrency=3) == [x * x for x in range(12)]
    assert state["peak"] == 3


def test_run_bounded_reraises_and_cancels_the_rest():
    started: list[int] = []

    def fn(x):
        started.append(x)
        if x == 0:
            raise FatalModelError("HTTP 401")
        time.sleep(0.05)
        return x

    with pytest.raises(FatalModelError):
        run_bounded(fn, range(50), max_concurrency=2)
    assert len(started) < 50
    assert run_bounded(fn, [], 4) == []
    with pytest.raises(ValueError):
        run_bounded(fn, [1], 0)


def test_bounded_model_limits_calls_in_flight():
    lock = threading.Lock()
    state = {"now": 0, "peak": 0}

    class Slow:
        name = "slow"

        def generate(self, messages, config):
            with lock:
                state["now"] += 1
                state["peak"] = max(state["peak"], state["now"])
            time.sleep(0.02)
            with lock:
                state["now"] -= 1
            return done()

    m = BoundedModel(Slow(), max_concurrency=2)
    run_bounded(lambda _: m.generate(MSGS, GenerateConfig()), range(10), max_concurrency=6)
    assert state["peak"] == 2
