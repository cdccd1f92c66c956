"""The real OpenAIClient + RetryingModel against a scripted, misbehaving server on loopback.

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
import socketserver
import struct
import threading
import time
import traceback

import pytest

from plugins.score.client import OpenAIClient, RetryingModel, parse_retry_after
from plugins.score.modelapi import FatalModelError, GenerateConfig, Message, OmittedError, RetryableError
from plugins.score.registry import make_model, spec_from_url

KEY_ENV = "SPARKTRACE_TEST_KEY"
FAKE_KEY = "sk-fake-FIXTURE-9b1e6c2d7a4f0e53"  # a fixture, not a credential
READ_TIMEOUT_S = 0.3
MAX_REQUESTS = 60
MSGS = [Message("user", "Which rewrite is fastest? Reply with Answer: A, B, C or D.")]
CFG = GenerateConfig(temperature=0.0, max_tokens=64)


def good_body(text: str | None = "Answer: B", echo: str = "") -> bytes:
    return json.dumps({
        "id": "chatcmpl-fixture", "object": "chat.completion", "model": "fixture-model",
        "choices": [{"index": 0, "finish_reason": "stop",
                     "message": {"role": "assistant", "content": text if not echo else f"{text} {echo}"}}],
        "usage": {"prompt_tokens": 17, "completion_tokens": 3, "total_tokens": 20},
    }).encode()


def http_response(status: int, body: bytes, headers: dict | None = None, content_length: int | None = None) -> bytes:
    reason = {200: "OK", 400: "Bad Request", 401: "Unauthorized", 403: "Forbidden", 404: "Not Found",
              422: "Unprocessable Entity", 429: "Too Many Requests", 500: "Internal Server Error",
              502: "Bad Gateway", 503: "Service Unavailable"}.get(status, "Status")
    head = [f"HTTP/1.1 {status} {reason}", "Content-Type: application/json",
            f"Content-Length: {len(body) if content_length is None else content_length}", "Connection: close"]
    head += [f"{k}: {v}" for k, v in (headers or {}).items()]
    return ("\r\n".join(head) + "\r\n\r\n").encode() + body


def error_body(message: str) -> bytes:
    return json.dumps({"error": {"message": message, "type": "fixture_error"}}).encode()


class FaultServer(socketserver.ThreadingTCPServer):
    """Loopback HTTP server playing `script` one action per request, then `default`."""

    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, script: list, default="good"):
        super().__init__(("127.0.0.1", 0), _FaultHandler)
        self.script = list(script)
        self.default = default
        self.requests: list[dict] = []
        self.lock = threading.Lock()
        self.stop_sleeping = threading.Event()
        self.thread = threading.Thread(target=self.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/v1"

    def next_action(self, request: dict):
        with self.lock:
            if len(self.requests) >= MAX_REQUESTS:
                return ("status", 503, error_body("fault server request budget spent"))
            self.requests.append(request)
            return self.script.pop(0) if self.script else self.default

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stop_sleeping.set()
        self.shutdown()
        self.server_close()
        self.thread.join(timeout=5)


class _FaultHandler(socketserver.BaseRequestHandler):
    def handle(self):
        sock: socket.socket = self.request
        sock.settimeout(5)
        try:
            request = self._read_request(sock)
            if request is None:
                return
            action = self.server.next_action(request)
            self._play(sock, action, request)
        except OSError:
            pass  # the client gave up (read timeout) or we reset the connection ourselves

    @staticmethod
    def _read_request(sock):
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = sock.recv(65536)
            if not chunk:
                return None
            data += chunk
        head, body = data.split(b"\r\n\r\n", 1)
        lines = head.decode("latin-1").split("\r\n")
        headers = {}
        for line in lines[1:]:
            k, _, v = line.partition(":")
            headers[k.strip().lower()] = v.strip()
        length = int(headers.get("content-length", "0"))
        while len(body) < length:
            chunk = sock.recv(65536)
            if not chunk:
                break
            body += chunk
        return {"line": lines[0], "headers": headers, "body": body.decode("utf-8")}

    def _play(self, sock, action, request):
        kind = action if isinstance(action, str) else action[0]
        if kind == "good":
            sock.sendall(http_response(200, good_body()))
        elif kind == "echo_key":  # a hostile server that echoes our Authorization header back
            sock.sendall(http_response(200, good_body("Answer: C", echo=request["headers"].get("authorization", ""))))
        elif kind == "text":
            sock.sendall(http_response(200, good_body(action[1])))
        elif kind == "status":
            _, status, body, *rest = action
            sock.sendall(http_response(status, body, rest[0] if rest else None))
        elif kind == "sleep":  # longer than the client's read timeout
            self.server.stop_sleeping.wait(READ_TIMEOUT_S * 4)
            sock.sendall(http_response(200, good_body()))
        elif kind == "reset":  # RST instead of a response
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            sock.close()
        elif kind == "reset_mid":  # headers and half a body, then RST
            body = good_body()
            sock.sendall(http_response(200, body)[: -len(body) // 2])
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            sock.close()
        elif kind == "short_body":  # Content-Length promises more than is sent
            body = good_body()
            sock.sendall(http_response(200, body[: len(body) // 2], content_length=len(body)))
        elif kind == "truncated_json":  # a complete response whose JSON is cut off
            sock.sendall(http_response(200, good_body()[:40]))
        elif kind == "not_json":
            sock.sendall(http_response(200, b"<html>gateway hiccup</html>"))
        elif kind == "empty_choices":
            sock.sendall(http_response(200, json.dumps({"choices": [], "model": "fixture-model"}).encode()))
        elif kind == "null_content":
            sock.sendall(http_response(200, good_body(None)))
        else:
            raise AssertionError(f"unknown fault {action!r}")


def retry_after_date(seconds: float) -> str:
    return email.utils.formatdate(time.time() + seconds, usegmt=True)


@pytest.fixture
def key(monkeypatch):
    monkeypatch.setenv(KEY_ENV, FAKE_KEY)
    return FAKE_KEY


def client(url: str, name: str = "fixture-model", api_key_env: str | None = KEY_ENV) -> OpenAIClient:
    return OpenAIClient(name, url, "fixture/model-id", api_key_env, timeout_connect_s=1.0,
                        timeout_read_s=READ_TIMEOUT_S)


def retrying(inner, sleeps: list, max_attempts: int = 3) -> RetryingModel:
    return RetryingModel(inner, max_attempts=max_attempts, base_delay_s=0.5, max_delay_s=30.0, sleep=sleeps.append)


RETRYABLE_FAULTS = {
    "429": ("status", 429, error_body("rate limited")),
    "500": ("status", 500, error_body("internal")),
    "502": ("status", 502, b"<html>bad gateway</html>"),
    "503": ("status", 503, error_body("overloaded")),
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
def test_retryable_fault_is_retried_then_succeeds(fault, key):
    sleeps: list[float] = []
    with FaultServer([RETRYABLE_FAULTS[fault]]) as srv, client(srv.url) as c:
        out = retrying(c, sleeps).generate(MSGS, CFG)
        assert out.text == "Answer: B"
        assert out.attempts == 2
        assert len(srv.requests) == 2
        assert len(sleeps) == 1
        assert out.prompt_tokens == 17 and out.completion_tokens == 3


@pytest.mark.parametrize("fault", list(RETRYABLE_FAULTS), ids=list(RETRYABLE_FAULTS))
def test_single_attempt_classifies_fault(fault, key):
    with FaultServer([RETRYABLE_FAULTS[fault]]) as srv, client(srv.url) as c:
        if fault == "null-content":
            assert c.generate(MSGS, CFG).text is None  # the wrapper decides: retry, then omit
        else:
            with pytest.raises(RetryableError):
                c.generate(MSGS, CFG)
        assert len(srv.requests) == 1


@pytest.mark.parametrize("fault", ["429", "503", "read-timeout", "reset", "truncated-json", "empty-choices",
                                   "null-content"])
def test_persistent_fault_is_omitted_never_a_letter(fault, key):
    sleeps: list[float] = []
    with FaultServer([], default=RETRYABLE_FAULTS[fault]) as srv, client(srv.url) as c:
        with pytest.raises(OmittedError, match=r"no answer after 3 attempts"):
            retrying(c, sleeps).generate(MSGS, CFG)
        assert len(srv.requests) == 3
        assert len(sleeps) == 2


def test_connect_refused_is_retryable_then_omitted(key):
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    sleeps: list[float] = []
    with client(f"http://127.0.0.1:{port}/v1") as c:
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


def test_retry_after_http_date_is_the_delay(key):
    sleeps: list[float] = []
    script = [("status", 503, error_body("maintenance"), {"Retry-After": retry_after_date(20)})]
    with FaultServer(script) as srv, client(srv.url) as c:
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
def test_fatal_status_stops_after_one_request(status, key):
    sleeps: list[float] = []
    script = [("status", status, error_body(f"fixture says no ({status})"))]
    with FaultServer(script) as srv, client(srv.url, name="fixture-model") as c:
        with pytest.raises(FatalModelError) as info:
            retrying(c, sleeps).generate(MSGS, CFG)
        assert len(srv.requests) == 1
    assert sleeps == []
    msg = str(info.value)
    assert "fixture-model" in msg and f"HTTP {status}" in msg and f"fixture says no ({status})" in msg


def test_missing_key_fails_before_any_request(monkeypatch):
    monkeypatch.delenv(KEY_ENV, raising=False)
    with FaultServer([]) as srv:
        spec = spec_from_url(srv.url, "fixture/model-id", name="fixture-model", api_key_env=KEY_ENV)
        with pytest.raises(FatalModelError, match=KEY_ENV):
            make_model(spec)
        with client(srv.url) as c, pytest.raises(FatalModelError, match=KEY_ENV):
            c.generate(MSGS, CFG)
        assert srv.requests == []


def test_unusable_key_fails_before_any_request_without_echoing_it(monkeypatch):
    bad = "sk-fake-FIXTURE\u2019quote"
    monkeypatch.setenv(KEY_ENV, bad)
    with FaultServer([]) as srv, client(srv.url) as c:
        with pytest.raises(FatalModelError, match=KEY_ENV) as info:
            c.generate(MSGS, CFG)
        assert srv.requests == []
    assert "sk-fake" not in str(info.value)


def test_key_is_sent_only_in_the_authorization_header(key):
    with FaultServer(["good"]) as srv, client(srv.url) as c:
        c.generate(MSGS, CFG)
    (req,) = srv.requests
    assert req["headers"]["authorization"] == f"Bearer {FAKE_KEY}"
    others = {k: v for k, v in req["headers"].items() if k != "authorization"}
    assert FAKE_KEY not in json.dumps(others) + req["body"] + req["line"]


def test_no_key_no_authorization_header():
    with FaultServer(["good"]) as srv, client(srv.url, api_key_env=None) as c:
        assert c.generate(MSGS, CFG).text == "Answer: B"
    assert "authorization" not in srv.requests[0]["headers"]


def test_key_never_surfaces_anywhere(key, caplog):
    """Serialise everything the client hands back (completions, errors, tracebacks, logs) and search it."""
    caplog.set_level(logging.DEBUG)  # httpx/httpcore debug logs included
    leaky = error_body(f"invalid key: Bearer {FAKE_KEY}")  # servers sometimes echo what they got
    script = ["echo_key", ("status", 401, leaky), ("status", 500, leaky), ("status", 429, leaky),
              "null_content", "reset", "sleep", ("text", f"my key is {FAKE_KEY}")]
    surfaced: list[str] = []
    errors: list[BaseException] = []
    with FaultServer(script, default=("status", 503, leaky)) as srv, client(srv.url) as c:
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
    assert any(FAKE_KEY in r["headers"].get("authorization", "") for r in srv.requests)
    assert {type(e).__name__ for e in errors} >= {"FatalModelError", "RetryableError", "OmittedError"}
    for e in errors:
        surfaced += [str(e), repr(e), repr(e.args), "".join(traceback.format_exception(e)),
                     json.dumps(vars(e), default=str)]
    surfaced.append(caplog.text)
    surfaced += [repr(r.args) for r in caplog.records]
    assert "***" in "".join(surfaced)  # the echoes really came back, redacted
    for text in surfaced:
        assert FAKE_KEY not in text


def test_redirect_is_fatal_not_followed(key):
    script = [("status", 307, b"", {"Location": "http://127.0.0.1:9/elsewhere"})]
    with FaultServer(script) as srv, client(srv.url) as c:
        with pytest.raises(FatalModelError, match="HTTP 307"):
            c.generate(MSGS, CFG)
        assert len(srv.requests) == 1
