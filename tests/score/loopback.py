"""A scripted, misbehaving model server on loopback that speaks two API shapes.

Stdlib only (raw sockets in a thread), bounded in requests and in time. It plays
one scripted action per chat request, then `default`, in the shape the path asks
for: `POST /v1/chat/completions` gets OpenAI's shape (choices, finish_reason,
reasoning_content), `POST /v1/messages` gets Anthropic's (content blocks,
stop_reason, thinking blocks, `{"type": "error", ...}` errors). Any other path is
a native endpoint answered from `native` (llama.cpp's /props and /tokenize, vLLM's
/v1/models, Ollama's /api/ps, ...), else 404. Every request is kept in
`requests`, so a test can check headers and bodies.

An action is a string or a tuple:
  "good"                       Answer: B, stop
  ("text", s)                  s, stop
  ("reply", s, stop, reasoning) any text (None: null content), stop reason, reasoning channel
  "truncated"                  empty content cut off by the budget (length / max_tokens)
  ("status", code, body[, headers])  a raw status and body
  "context_400"                the server's own "prompt does not fit" 400, in the path's shape
  "sleep", "reset", "reset_mid", "short_body", "truncated_json", "not_json",
  "empty_choices", "null_content", "echo_key"   transport and body faults
A callable `responder(request) -> action` replaces the script (e.g. an answer per prompt).
"""
from __future__ import annotations

import json
import socket
import socketserver
import struct
import threading
from typing import Any, Callable

READ_TIMEOUT_S = 0.3
MAX_REQUESTS = 200
_TRUNCATION = {"openai": "length", "anthropic": "max_tokens"}


def openai_body(text: str | None = "Answer: B", stop: str | None = "stop", reasoning: str | None = None,
                echo: str = "", model: str = "fixture-model") -> bytes:
    message: dict[str, Any] = {"role": "assistant", "content": text if not echo else f"{text} {echo}"}
    if reasoning is not None:
        message["reasoning_content"] = reasoning
    return json.dumps({
        "id": "chatcmpl-fixture", "object": "chat.completion", "model": model,
        "choices": [{"index": 0, "finish_reason": stop, "message": message}],
        "usage": {"prompt_tokens": 17, "completion_tokens": 3, "total_tokens": 20},
    }).encode()


def anthropic_body(text: str | None = "Answer: B", stop: str | None = "end_turn", reasoning: str | None = None,
                   echo: str = "", model: str = "fixture-model") -> bytes:
    blocks: list[dict] = []
    if reasoning is not None:
        blocks.append({"type": "thinking", "thinking": reasoning, "signature": "c2lnbmF0dXJlLWZpeHR1cmU="})
    if text is not None:
        blocks.append({"type": "text", "text": text if not echo else f"{text} {echo}"})
    return json.dumps({
        "id": "msg_fixture", "type": "message", "role": "assistant", "model": model, "content": blocks,
        "stop_reason": stop, "stop_sequence": None, "usage": {"input_tokens": 17, "output_tokens": 3},
    }).encode()


def good_body(text: str | None = "Answer: B", echo: str = "") -> bytes:
    """The OpenAI-shaped answer (kept for the fault tests that predate the Anthropic shape)."""
    return openai_body(text, echo=echo)


def error_body(message: str, shape: str = "openai", kind: str = "fixture_error", code: str | None = None) -> bytes:
    if shape == "anthropic":
        return json.dumps({"type": "error", "error": {"type": kind, "message": message}}).encode()
    return json.dumps({"error": {"message": message, "type": kind, "code": code}}).encode()


CONTEXT_MESSAGES = {
    "openai": ("This model's maximum context length is 4096 tokens. However, you requested 9100 tokens "
               "(9000 in the messages, 100 in the completion). Please reduce the length of the messages.",
               "invalid_request_error"),
    "anthropic": ("prompt is too long: 210000 tokens > 200000 maximum", "invalid_request_error"),
}


def http_response(status: int, body: bytes, headers: dict | None = None, content_length: int | None = None) -> bytes:
    reason = {200: "OK", 400: "Bad Request", 401: "Unauthorized", 403: "Forbidden", 404: "Not Found",
              422: "Unprocessable Entity", 429: "Too Many Requests", 500: "Internal Server Error",
              502: "Bad Gateway", 503: "Service Unavailable", 529: "Overloaded"}.get(status, "Status")
    head = [f"HTTP/1.1 {status} {reason}", "Content-Type: application/json",
            f"Content-Length: {len(body) if content_length is None else content_length}", "Connection: close"]
    head += [f"{k}: {v}" for k, v in (headers or {}).items()]
    return ("\r\n".join(head) + "\r\n\r\n").encode() + body


class FaultServer(socketserver.ThreadingTCPServer):
    """Loopback HTTP server playing `script` one action per chat request, then `default`."""

    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, script: list | None = None, default: Any = "good", *,
                 responder: Callable[[dict], Any] | None = None, native: dict[str, Any] | None = None):
        super().__init__(("127.0.0.1", 0), _FaultHandler)
        self.script = list(script or [])
        self.default = default
        self.responder = responder
        self.native = dict(native or {})  # "GET /props" or "/props" -> JSON object, or callable(request)
        self.requests: list[dict] = []  # chat requests (the scripted ones)
        self.native_requests: list[dict] = []
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
            if self.responder is not None:
                return self.responder(request)
            return self.script.pop(0) if self.script else self.default

    def native_answer(self, request: dict) -> tuple[int, bytes]:
        method, path = request["line"].split(" ")[:2]
        with self.lock:
            self.native_requests.append(request)
            if len(self.native_requests) > MAX_REQUESTS:
                return 503, error_body("fault server request budget spent")
        for key in (f"{method} {path}", path):
            if key in self.native:
                got = self.native[key]
                got = got(request) if callable(got) else got
                if isinstance(got, tuple):
                    return got[0], json.dumps(got[1]).encode()
                return 200, json.dumps(got).encode()
        return 404, error_body(f"no route {method} {path}")

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stop_sleeping.set()
        self.shutdown()
        self.server_close()
        self.thread.join(timeout=5)


def _shape(request: dict) -> str | None:
    path = request["line"].split(" ")[1]
    if request["line"].startswith("POST ") and path.endswith("/chat/completions"):
        return "openai"
    if request["line"].startswith("POST ") and path.endswith("/messages"):
        return "anthropic"
    return None


class _FaultHandler(socketserver.BaseRequestHandler):
    def handle(self):
        sock: socket.socket = self.request
        sock.settimeout(5)
        try:
            request = self._read_request(sock)
            if request is None:
                return
            shape = _shape(request)
            if shape is None:
                status, body = self.server.native_answer(request)
                sock.sendall(http_response(status, body))
                return
            request["shape"] = shape
            action = self.server.next_action(request)
            self._play(sock, action, request, shape)
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

    def _play(self, sock, action, request, shape):
        kind = action if isinstance(action, str) else action[0]
        reply = openai_body if shape == "openai" else anthropic_body
        stop = "stop" if shape == "openai" else "end_turn"
        if kind == "good":
            sock.sendall(http_response(200, reply()))
        elif kind == "echo_key":  # a hostile server that echoes our key header back
            echoed = request["headers"].get("authorization") or request["headers"].get("x-api-key", "")
            sock.sendall(http_response(200, reply("Answer: C", echo=echoed)))
        elif kind == "text":
            sock.sendall(http_response(200, reply(action[1])))
        elif kind == "reply":
            _, text, stop_reason, reasoning = action
            sock.sendall(http_response(200, reply(text, stop_reason, reasoning)))
        elif kind == "truncated":
            sock.sendall(http_response(200, reply("" if shape == "openai" else None, _TRUNCATION[shape],
                                                  action[1] if isinstance(action, tuple) else "The options differ in how they read")))
        elif kind == "context_400":
            msg, err = CONTEXT_MESSAGES[shape]
            code = "context_length_exceeded" if shape == "openai" else None  # OpenAI's own code
            sock.sendall(http_response(400, error_body(msg, shape, err, code)))
        elif kind == "status":
            _, status, body, *rest = action
            sock.sendall(http_response(status, body, rest[0] if rest else None))
        elif kind == "sleep":  # longer than the client's read timeout
            self.server.stop_sleeping.wait(READ_TIMEOUT_S * 4)
            sock.sendall(http_response(200, reply()))
        elif kind == "reset":  # RST instead of a response
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            sock.close()
        elif kind == "reset_mid":  # headers and half a body, then RST
            body = reply()
            sock.sendall(http_response(200, body)[: -len(body) // 2])
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            sock.close()
        elif kind == "short_body":  # Content-Length promises more than is sent
            body = reply()
            sock.sendall(http_response(200, body[: len(body) // 2], content_length=len(body)))
        elif kind == "truncated_json":  # a complete response whose JSON is cut off
            sock.sendall(http_response(200, reply()[:40]))
        elif kind == "not_json":
            sock.sendall(http_response(200, b"<html>gateway hiccup</html>"))
        elif kind == "empty_choices":
            body = ({"choices": [], "model": "fixture-model"} if shape == "openai"
                    else {"type": "message", "model": "fixture-model"})
            sock.sendall(http_response(200, json.dumps(body).encode()))
        elif kind == "null_content":
            sock.sendall(http_response(200, reply(None, stop)))
        else:
            raise AssertionError(f"unknown fault {action!r}")
