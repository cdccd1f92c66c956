"""The real clients (OpenAI-compatible and Anthropic's Messages API) + RetryingModel against a
scripted, misbehaving server on loopback (tests/score/loopback.py), in each API's own shapes.

The server is stdlib only (raw sockets in a thread), bounded in requests and in
time, and plays one scripted fault per request. Sleeps are injected, so the
file runs in a few seconds.
"""
from __future__ import annotations

import dataclasses
import email.utils
import json
import logging
import socket
import time
import traceback

import pytest

from loopback import READ_TIMEOUT_S, FaultServer, error_body
from plugins.score.anthropic_api import AnthropicClient
from plugins.score.client import HTTPChatClient, OpenAIClient, RetryingModel, parse_retry_after
from plugins.score.modelapi import (
    ContextOverflowError,
    FatalModelError,
    GenerateConfig,
    Message,
    OmittedError,
    RetryableError,
)
from plugins.score.registry import make_model, spec_from_url

KEY_ENV = "SPARKTRACE_TEST_KEY"
FAKE_KEY = "sk-fake-FIXTURE-9b1e6c2d7a4f0e53"  # a fixture, not a credential
MSGS = [Message("user", "Which rewrite is fastest? Reply with Answer: A, B, C or D.")]
CFG = GenerateConfig(temperature=0.0, max_tokens=64)


def retry_after_date(seconds: float) -> str:
    return email.utils.formatdate(time.time() + seconds, usegmt=True)


@pytest.fixture
def key(monkeypatch):
    monkeypatch.setenv(KEY_ENV, FAKE_KEY)
    return FAKE_KEY


SHAPES = ("openai", "anthropic")


@pytest.fixture(params=SHAPES)
def shape(request):
    """Every fault test runs against both clients, each answered in its own API's shapes."""
    return request.param


def client(url: str, name: str = "fixture-model", api_key_env: str | None = KEY_ENV, shape: str = "openai",
           **kw) -> HTTPChatClient:
    cls = OpenAIClient if shape == "openai" else AnthropicClient
    return cls(name, url, "fixture/model-id", api_key_env, timeout_connect_s=1.0, timeout_read_s=READ_TIMEOUT_S, **kw)


def key_header(shape: str) -> tuple[str, str]:
    """The header each API carries the key in, and its value."""
    return ("authorization", f"Bearer {FAKE_KEY}") if shape == "openai" else ("x-api-key", FAKE_KEY)


def retrying(inner, sleeps: list, max_attempts: int = 3) -> RetryingModel:
    return RetryingModel(inner, max_attempts=max_attempts, base_delay_s=0.5, max_delay_s=30.0, sleep=sleeps.append)


RETRYABLE_FAULTS = {
    "429": ("status", 429, error_body("rate limited")),
    "500": ("status", 500, error_body("internal")),
    "502": ("status", 502, b"<html>bad gateway</html>"),
    "503": ("status", 503, error_body("overloaded")),
    "529": ("status", 529, error_body("Overloaded", "anthropic", "overloaded_error")),  # Anthropic's overload
    "read-timeout": "sleep",
    "reset": "reset",
    "reset-mid-body": "reset_mid",
    "short-body": "short_body",
    "truncated-json": "truncated_json",
    "not-json": "not_json",
    "empty-choices": "empty_choices",
    "null-content": "null_content",
}


@pytest.mark.parametrize("fault", list(RETRYABLE_FAULTS), ids=list(RETRYABLE_FAULTS))
def test_retryable_fault_is_retried_then_succeeds(fault, key, shape):
    sleeps: list[float] = []
    with FaultServer([RETRYABLE_FAULTS[fault]]) as srv, client(srv.url, shape=shape) as c:
        out = retrying(c, sleeps).generate(MSGS, CFG)
        assert out.text == "Answer: B"
        assert out.attempts == 2
        assert len(srv.requests) == 2 and {r["shape"] for r in srv.requests} == {shape}
        assert len(sleeps) == 1
        assert out.prompt_tokens == 17 and out.completion_tokens == 3
        assert out.stop_reason == ("stop" if shape == "openai" else "end_turn") and not out.truncated


@pytest.mark.parametrize("fault", list(RETRYABLE_FAULTS), ids=list(RETRYABLE_FAULTS))
def test_single_attempt_classifies_fault(fault, key, shape):
    with FaultServer([RETRYABLE_FAULTS[fault]]) as srv, client(srv.url, shape=shape) as c:
        if fault == "null-content":
            assert c.generate(MSGS, CFG).text is None  # the wrapper decides: retry, then omit
        else:
            with pytest.raises(RetryableError):
                c.generate(MSGS, CFG)
        assert len(srv.requests) == 1


@pytest.mark.parametrize("fault", ["429", "503", "read-timeout", "reset", "truncated-json", "empty-choices",
                                   "null-content"])
def test_persistent_fault_is_omitted_never_a_letter(fault, key, shape):
    sleeps: list[float] = []
    with FaultServer([], default=RETRYABLE_FAULTS[fault]) as srv, client(srv.url, shape=shape) as c:
        with pytest.raises(OmittedError, match=r"no answer after 3 attempts"):
            retrying(c, sleeps).generate(MSGS, CFG)
        assert len(srv.requests) == 3
        assert len(sleeps) == 2


def test_connect_refused_is_retryable_then_omitted(key, shape):
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    sleeps: list[float] = []
    with client(f"http://127.0.0.1:{port}/v1", shape=shape) as c:
        with pytest.raises(RetryableError, match="ConnectError"):
            c.generate(MSGS, CFG)
        with pytest.raises(OmittedError):
            retrying(c, sleeps, max_attempts=2).generate(MSGS, CFG)
    assert len(sleeps) == 1


@pytest.mark.parametrize("header,expected", [("7", 7.0), ("0", 0.0), ("2.5", 2.5)])
def test_retry_after_seconds_is_the_delay(header, expected, key):
    sleeps: list[float] = []
    script = [("status", 429, error_body("slow down"), {"Retry-After": header})] * 2
    with FaultServer(script) as srv, client(srv.url) as c:
        out = retrying(c, sleeps).generate(MSGS, CFG)
    assert out.attempts == 3
    assert sleeps == [expected, expected]


def test_retry_after_http_date_is_the_delay(key, shape):
    sleeps: list[float] = []
    script = [("status", 503, error_body("maintenance"), {"Retry-After": retry_after_date(20)})]
    with FaultServer(script) as srv, client(srv.url, shape=shape) as c:
        retrying(c, sleeps).generate(MSGS, CFG)
    assert len(sleeps) == 1
    assert 17.0 <= sleeps[0] <= 21.0  # HTTP-dates have one-second resolution


def test_retry_after_is_capped(key):
    sleeps: list[float] = []
    script = [("status", 429, error_body("daily quota"), {"Retry-After": "86400"})]
    with FaultServer(script) as srv, client(srv.url) as c:
        retrying(c, sleeps).generate(MSGS, CFG)
    assert sleeps == [30.0]


def test_retry_after_parsing():
    now = time.time()
    assert parse_retry_after("120") == 120.0
    assert parse_retry_after(None) is None
    assert parse_retry_after("soon") is None
    assert parse_retry_after("-5") == 0.0
    past = email.utils.formatdate(now - 100, usegmt=True)
    assert parse_retry_after(past, now=now) == 0.0
    future = email.utils.formatdate(now + 90, usegmt=True)
    assert 88.0 <= parse_retry_after(future, now=now) <= 90.0


@pytest.mark.parametrize("status", [400, 401, 403, 404, 422])
def test_fatal_status_stops_after_one_request(status, key, shape):
    sleeps: list[float] = []
    script = [("status", status, error_body(f"fixture says no ({status})", shape))]
    with FaultServer(script) as srv, client(srv.url, name="fixture-model", shape=shape) as c:
        with pytest.raises(FatalModelError) as info:
            retrying(c, sleeps).generate(MSGS, CFG)
        assert len(srv.requests) == 1
    assert sleeps == []
    msg = str(info.value)
    assert "fixture-model" in msg and f"HTTP {status}" in msg and f"fixture says no ({status})" in msg
    assert not isinstance(info.value, ContextOverflowError)


def test_missing_key_fails_before_any_request(monkeypatch, shape):
    monkeypatch.delenv(KEY_ENV, raising=False)
    with FaultServer([]) as srv:
        spec = spec_from_url(srv.url, "fixture/model-id", name="fixture-model", api_key_env=KEY_ENV, api=shape)
        with pytest.raises(FatalModelError, match=KEY_ENV):
            make_model(spec)
        with client(srv.url, shape=shape) as c, pytest.raises(FatalModelError, match=KEY_ENV):
            c.generate(MSGS, CFG)
        assert srv.requests == [] and srv.native_requests == []


def test_unusable_key_fails_before_any_request_without_echoing_it(monkeypatch, shape):
    bad = "sk-fake-FIXTURE\u2019quote"
    monkeypatch.setenv(KEY_ENV, bad)
    with FaultServer([]) as srv, client(srv.url, shape=shape) as c:
        with pytest.raises(FatalModelError, match=KEY_ENV) as info:
            c.generate(MSGS, CFG)
        assert srv.requests == []
    assert "sk-fake" not in str(info.value)


def test_key_is_sent_only_in_its_header(key, shape):
    with FaultServer(["good"]) as srv, client(srv.url, shape=shape) as c:
        c.generate(MSGS, CFG)
    (req,) = srv.requests
    name, value = key_header(shape)
    assert req["headers"][name] == value
    others = {k: v for k, v in req["headers"].items() if k != name}
    assert FAKE_KEY not in json.dumps(others) + req["body"] + req["line"]
    if shape == "anthropic":  # the native API's own headers and path
        assert req["headers"]["anthropic-version"] == "2023-06-01" and "authorization" not in req["headers"]
        assert req["line"].startswith("POST /v1/messages ")
    else:
        assert req["line"].startswith("POST /v1/chat/completions ")


@pytest.mark.parametrize("header", ["api-key", "x-goog-api-key", "Authorization"])
def test_key_header_is_configurable_per_entry(key, shape, header):
    with FaultServer(["good"]) as srv, client(srv.url, shape=shape, api_key_header=header) as c:
        c.generate(MSGS, CFG)
    (req,) = srv.requests
    want = f"Bearer {FAKE_KEY}" if header == "Authorization" else FAKE_KEY
    assert req["headers"][header.lower()] == want
    assert [k for k, v in req["headers"].items() if FAKE_KEY in v] == [header.lower()]


def test_no_key_no_key_header(shape):
    with FaultServer(["good"]) as srv, client(srv.url, api_key_env=None, shape=shape) as c:
        assert c.generate(MSGS, CFG).text == "Answer: B"
    assert "authorization" not in srv.requests[0]["headers"] and "x-api-key" not in srv.requests[0]["headers"]


def test_key_never_surfaces_anywhere(key, caplog, shape):
    """Serialise everything the client hands back (completions, errors, tracebacks, logs) and search it."""
    caplog.set_level(logging.DEBUG)  # httpx/httpcore debug logs included
    leaky = error_body(f"invalid key: Bearer {FAKE_KEY}", shape)  # servers sometimes echo what they got
    script = ["echo_key", ("status", 401, leaky), ("status", 500, leaky), ("status", 429, leaky),
              "null_content", "reset", "sleep", ("text", f"my key is {FAKE_KEY}"),
              ("reply", "Answer: A", None, f"thinking about {FAKE_KEY}"),
              ("status", 400, error_body(f"prompt is too long for {FAKE_KEY}", shape))]
    surfaced: list[str] = []
    errors: list[BaseException] = []
    with FaultServer(script, default=("status", 503, leaky)) as srv, client(srv.url, shape=shape) as c:
        for _ in range(len(script)):
            try:
                out = c.generate(MSGS, CFG)
                surfaced.append(json.dumps(dataclasses.asdict(out), default=str))
                surfaced.append(repr(out))
            except Exception as e:  # noqa: BLE001 - every error kind is searched
                errors.append(e)
        try:
            retrying(c, [], max_attempts=2).generate(MSGS, CFG)
        except OmittedError as e:
            errors.append(e)
        assert len(srv.requests) == len(script) + 2
    name, _ = key_header(shape)
    assert any(FAKE_KEY in r["headers"].get(name, "") for r in srv.requests)
    assert {type(e).__name__ for e in errors} >= {"FatalModelError", "RetryableError", "OmittedError",
                                                  "ContextOverflowError"}
    for e in errors:
        surfaced += [str(e), repr(e), repr(e.args), "".join(traceback.format_exception(e)),
                     json.dumps(vars(e), default=str)]
    surfaced.append(caplog.text)
    surfaced += [repr(r.args) for r in caplog.records]
    assert "***" in "".join(surfaced)  # the echoes really came back, redacted
    for text in surfaced:
        assert FAKE_KEY not in text


def test_redirect_is_fatal_not_followed(key, shape):
    script = [("status", 307, b"", {"Location": "http://127.0.0.1:9/elsewhere"})]
    with FaultServer(script) as srv, client(srv.url, shape=shape) as c:
        with pytest.raises(FatalModelError, match="HTTP 307"):
            c.generate(MSGS, CFG)
        assert len(srv.requests) == 1


# -- stop reasons, reasoning channels, context overflow ---------------------------------


def test_truncated_turn_is_returned_once_never_retried(key, shape):
    """A reasoning model that spends its budget returns empty content cut off by `length` /
    `max_tokens`: that is the model's (truncated) answer, not a fault to retry or omit."""
    sleeps: list[float] = []
    with FaultServer(["truncated"]) as srv, client(srv.url, shape=shape) as c:
        out = retrying(c, sleeps).generate(MSGS, CFG)
        assert len(srv.requests) == 1 and sleeps == []
    assert out.truncated and out.stop_reason == ("length" if shape == "openai" else "max_tokens")
    assert not out.text and out.reasoning == "The options differ in how they read"


def test_reasoning_channel_is_kept_apart_from_the_answer(key, shape):
    with FaultServer([("reply", "Answer: C", None, "Maybe Answer: A? No.")]) as srv, client(srv.url, shape=shape) as c:
        out = c.generate(MSGS, CFG)
    assert out.text == "Answer: C" and out.reasoning == "Maybe Answer: A? No."
    if shape == "anthropic":  # the thinking block's signature is not kept
        assert "signature" not in json.dumps(out.raw)


def test_openai_reasoning_field_of_ollama_is_read(key):
    body = json.dumps({"choices": [{"finish_reason": "stop", "message": {
        "role": "assistant", "content": "Answer: D", "reasoning": "the wide loads win"}}], "model": "m"}).encode()
    with FaultServer([("status", 200, body)]) as srv, client(srv.url) as c:
        out = c.generate(MSGS, CFG)
    assert out.reasoning == "the wide loads win" and out.text == "Answer: D"


def test_anthropic_redacted_thinking_is_noted_not_kept(key):
    body = json.dumps({"type": "message", "model": "m", "stop_reason": "end_turn", "content": [
        {"type": "redacted_thinking", "data": "ENCRYPTED-FIXTURE"}, {"type": "text", "text": "Answer: A"}]}).encode()
    with FaultServer([("status", 200, body)]) as srv, client(srv.url, shape="anthropic") as c:
        out = c.generate(MSGS, CFG)
    assert out.text == "Answer: A" and "redacted" in out.reasoning
    assert "ENCRYPTED-FIXTURE" not in json.dumps(out.raw) + out.reasoning


@pytest.mark.parametrize("message", [
    "This model's maximum context length is 2048 tokens. However, you requested 3000 tokens",  # vLLM, OpenAI
    "the request exceeds the available context size, try increasing it",  # llama.cpp
    "Requested tokens (9000) exceed context window of 4096",  # llama-cpp-python
    "Trying to keep the first 9000 tokens when context the overflows. However, the model is loaded with "
    "context length of only 4096 tokens, which is not enough.",  # LM Studio
    "prompt is too long: 210000 tokens > 200000 maximum",  # Anthropic
])
def test_a_context_400_omits_the_item_and_is_not_retried(key, shape, message):
    sleeps: list[float] = []
    with FaultServer([("status", 400, error_body(message, shape))]) as srv, client(srv.url, shape=shape) as c:
        with pytest.raises(ContextOverflowError, match="context") as info:
            retrying(c, sleeps).generate(MSGS, CFG)
        assert len(srv.requests) == 1 and sleeps == []
    assert isinstance(info.value, OmittedError)  # omitted, never scored as wrong; the run goes on


def test_anthropic_request_shape_and_thinking(key):
    sys_msgs = [Message("system", "Be brief."), *MSGS]
    on = GenerateConfig(temperature=1.0, max_tokens=4096, reasoning=True, thinking_budget_tokens=2048)
    off = GenerateConfig(temperature=0.0, max_tokens=64, reasoning=False)
    with FaultServer(["good", "good", "good"]) as srv, \
            client(srv.url, shape="anthropic", reasoning_style="anthropic_thinking") as c:
        c.generate(sys_msgs, on)
        c.generate(MSGS, off)
        c.generate(MSGS, CFG)  # reasoning None: the server's default, nothing sent
    first, second, third = (json.loads(r["body"]) for r in srv.requests)
    assert first["system"] == "Be brief." and [m["role"] for m in first["messages"]] == ["user"]
    assert first["thinking"] == {"type": "enabled", "budget_tokens": 2048} and first["max_tokens"] == 4096
    assert second["thinking"] == {"type": "disabled"} and "system" not in second
    assert "thinking" not in third and third["temperature"] == 0.0
