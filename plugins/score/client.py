"""HTTP model clients (OpenAI-compatible here, Anthropic's Messages API in anthropic_api.py),
a retrying wrapper, and bounded concurrency.

Why three pieces: the client makes exactly one attempt and only classifies what
went wrong (retryable, fatal, or an empty turn); `RetryingModel` owns backoff
(as in Inspect AI), so a baseline or a test double can be retried the same
way; `run_bounded` lets the CLI path score 90 items without doing them one at
a time or flooding a rate-limited endpoint.

The API key is read from the environment at call time and is sent only in the
entry's key header (`Authorization: Bearer` by default, `x-api-key` for Anthropic). Every text this module surfaces (exception messages,
log lines, `Completion.raw`) passes through `redact` first, so a server that
echoes the header back still cannot leak it through us.
"""
from __future__ import annotations

import email.utils
import json
import logging
import os
import random
import re
import threading
import time
from concurrent.futures import FIRST_EXCEPTION, ThreadPoolExecutor, wait
from dataclasses import replace
from typing import Any, Callable, Iterable, Sequence, TypeVar

import httpx

from plugins.score.modelapi import (
    Completion,
    ContextOverflowError,
    FatalModelError,
    GenerateConfig,
    Message,
    ModelAPI,
    OmittedError,
    RetryableError,
)

log = logging.getLogger(__name__)

# How a registry entry asks for thinking on/off. The vendor is never guessed.
#   none                  send nothing; the server's default applies
#   chat_template_kwargs  {"chat_template_kwargs": {"enable_thinking": bool}}
#                         (NVIDIA NIM, vLLM, SGLang, llama.cpp-style servers)
#   reasoning_effort      {"reasoning_effort": "<on value>" | "<off value>"}
#                         (OpenAI, Gemini's OpenAI-compatible endpoint)
#   anthropic_thinking    {"thinking": {"type": "enabled", "budget_tokens": N}} or
#                         {"type": "disabled"} (Anthropic's native Messages API only)
REASONING_STYLES = ("none", "chat_template_kwargs", "reasoning_effort")
ANTHROPIC_REASONING_STYLES = ("none", "anthropic_thinking")
MAX_TOKENS_FIELDS = ("max_tokens", "max_completion_tokens")
# Statuses worth another attempt; every other non-2xx status is fatal.
RETRYABLE_STATUSES = frozenset({408, 425, 429}) | frozenset(range(500, 600))
REDACTED = "***"
_ERROR_TEXT_CHARS = 500


def redact(text: str, secrets: Iterable[str | None]) -> str:
    """Replace every secret's value with `***` (defensive: servers echo headers)."""
    for s in secrets:
        if s:
            text = text.replace(s, REDACTED)
    return text


def redact_obj(obj: Any, secrets: Sequence[str | None]) -> Any:
    """`redact` applied to every string (keys too) inside JSON-like data."""
    if isinstance(obj, str):
        return redact(obj, secrets)
    if isinstance(obj, dict):
        return {redact_obj(k, secrets): redact_obj(v, secrets) for k, v in obj.items()}
    if isinstance(obj, list):
        return [redact_obj(v, secrets) for v in obj]
    return obj


def parse_retry_after(value: str | None, now: float | None = None) -> float | None:
    """`Retry-After` as seconds from now: delta-seconds or an HTTP-date; None if absent or unreadable."""
    if value is None:
        return None
    value = value.strip()
    if not value:
        return None
    try:
        seconds = float(value)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError, IndexError):
            return None
        if when is None or when.tzinfo is None:
            return None
        seconds = when.timestamp() - (time.time() if now is None else now)
    if seconds != seconds:  # NaN
        return None
    return max(0.0, seconds)


# A 4xx whose message says the prompt does not fit: the item is omitted for context, the
# run goes on. The servers' own words: OpenAI "context_length_exceeded", vLLM/llama-cpp-python
# "maximum context length", llama.cpp "exceeds the available context size", LM Studio
# "context length of only", Anthropic "prompt is too long".
CONTEXT_OVERFLOW = re.compile(
    r"context_length_exceeded|exceed_context_size_error|maximum context length|context window of"
    r"|exceeds? the available context size|context length of only|prompt is too long", re.IGNORECASE)


def _content_text(content: Any) -> str | None:
    """Message content as text: a string, or the text parts of a content list."""
    if content is None:
        return None
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [p.get("text") for p in content if isinstance(p, dict) and isinstance(p.get("text"), str)]
        return "".join(parts) if parts else None
    return None


def _int_or_none(v: Any) -> int | None:
    return v if isinstance(v, int) and not isinstance(v, bool) else None


def _str_or_none(v: Any) -> str | None:
    return v if isinstance(v, str) and v else None


class HTTPChatClient:
    """What every HTTP model client shares: the key from the environment, one POST, and the
    classification of what went wrong (retryable, fatal, context overflow). Subclasses say
    where to POST, which headers carry the key, the body, and how to read the reply.

    `api_key_header`: the header that carries the key. "Authorization" sends
    `Bearer <key>`; any other name (x-api-key, api-key, x-goog-api-key) sends the key as it is.
    """

    path = ""
    default_key_header = "Authorization"

    def __init__(self, name: str, base_url: str, model_id: str, api_key_env: str | None = None,
                 timeout_connect_s: float = 10.0, timeout_read_s: float = 300.0, *,
                 api_key_header: str | None = None, extra_body: dict | None = None):
        self.name = name
        self.base_url = base_url.rstrip("/")
        self.url = self.base_url + self.path
        self.model_id = model_id
        self.api_key_env = api_key_env
        self.api_key_header = api_key_header or self.default_key_header
        self.extra_body = dict(extra_body or {})
        self._timeout = httpx.Timeout(
            connect=timeout_connect_s, read=timeout_read_s, write=timeout_read_s, pool=timeout_connect_s
        )
        self._http: httpx.Client | None = None
        self._lock = threading.Lock()

    # -- lifecycle -------------------------------------------------------
    def _client(self) -> httpx.Client:
        with self._lock:
            if self._http is None:
                self._http = httpx.Client(timeout=self._timeout)
            return self._http

    def close(self) -> None:
        with self._lock:
            if self._http is not None:
                self._http.close()
                self._http = None

    def __enter__(self) -> "HTTPChatClient":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- request ---------------------------------------------------------
    def _api_key(self) -> str | None:
        """Read at call time, so a rotated key is picked up; a missing one fails before any request."""
        if not self.api_key_env:
            return None
        key = os.environ.get(self.api_key_env, "")
        if not key.strip():
            raise FatalModelError(
                f"model {self.name!r}: environment variable {self.api_key_env} is not set or empty; "
                f"export {self.api_key_env}=<your key> (it is read only from the environment)"
            )
        key = key.strip()
        if not key.isascii() or not key.isprintable():
            raise FatalModelError(
                f"model {self.name!r}: the value of {self.api_key_env} has non-ASCII or control characters; "
                f"fix: export the key exactly as the vendor issued it"
            )
        return key

    def headers(self, key: str | None) -> dict[str, str]:
        """The request headers; the key goes only into `api_key_header`."""
        headers = {"Content-Type": "application/json"}
        if key:
            is_auth = self.api_key_header.lower() == "authorization"
            headers[self.api_key_header] = f"Bearer {key}" if is_auth else key
        return headers

    def _merge_extra(self, body: dict) -> dict:
        for k, v in self.extra_body.items():
            if isinstance(v, dict) and isinstance(body.get(k), dict):
                body[k] = {**body[k], **v}
            else:
                body[k] = v
        return body

    def _post(self, body: dict, key: str | None) -> tuple[dict, float]:
        """One POST; the parsed JSON object and the latency, or a classified error."""
        secrets = (key,)
        who = f"model {self.name!r} ({self.model_id} at {self.url})"
        t0 = time.monotonic()
        try:
            resp = self._client().post(self.url, json=body, headers=self.headers(key))
        except httpx.TimeoutException as e:
            raise RetryableError(redact(f"{who}: {type(e).__name__} (timed out): {e}", secrets)) from None
        except httpx.TransportError as e:
            # connect refused, connection reset, server closed mid-response, truncated body
            raise RetryableError(redact(f"{who}: {type(e).__name__}: {e}", secrets)) from None
        latency = time.monotonic() - t0
        status = resp.status_code
        if status // 100 != 2:
            detail = redact(self._error_detail(resp), secrets)
            msg = f"{who}: HTTP {status}" + (f": {detail}" if detail else "")
            if status in RETRYABLE_STATUSES:
                raise RetryableError(msg, retry_after_s=parse_retry_after(resp.headers.get("retry-after")))
            if 400 <= status < 500 and CONTEXT_OVERFLOW.search(detail):
                raise ContextOverflowError(f"context: the server says the prompt does not fit: {msg}")
            raise FatalModelError(msg)
        try:
            data = resp.json()
        except (ValueError, UnicodeDecodeError) as e:
            raise RetryableError(
                redact(f"{who}: HTTP {status} with a body that is not JSON ({len(resp.content)} bytes): {e}", secrets)
            ) from None
        if not isinstance(data, dict):
            raise RetryableError(f"{who}: HTTP {status} with a JSON body that is not an object")
        return data, latency

    @staticmethod
    def _error_detail(resp: httpx.Response) -> str:
        """The server's own error message (OpenAI or Anthropic shape, or plain text), shortened."""
        try:
            data = resp.json()
        except (ValueError, UnicodeDecodeError):
            return resp.text.strip()[:_ERROR_TEXT_CHARS]
        err = data.get("error") if isinstance(data, dict) else None
        if isinstance(err, dict) and err.get("message"):
            code = err.get("code") or err.get("type")
            text = str(err["message"]) + (f" ({code})" if isinstance(code, str) and code not in str(err["message"]) else "")
            return text[:_ERROR_TEXT_CHARS]
        if isinstance(err, str):
            return err[:_ERROR_TEXT_CHARS]
        if isinstance(data, dict) and data.get("message"):
            return str(data["message"])[:_ERROR_TEXT_CHARS]
        return json.dumps(data)[:_ERROR_TEXT_CHARS]


class OpenAIClient(HTTPChatClient):
    """One attempt per `generate` against `<base_url>/chat/completions`.

    Failures are classified, never retried here: 429/5xx/transport errors and
    malformed or empty bodies raise `RetryableError`; a 4xx saying the prompt does not
    fit raises `ContextOverflowError`; other non-2xx statuses raise `FatalModelError`.
    A `null` message content comes back as `Completion(text=None)`, which
    `RetryingModel` retries and finally omits, unless the turn was cut off by its
    budget (finish_reason "length"): that is a truncated reply, returned as it is.
    """

    path = "/chat/completions"

    def __init__(
        self,
        name: str,
        base_url: str,
        model_id: str,
        api_key_env: str | None = None,
        timeout_connect_s: float = 10.0,
        timeout_read_s: float = 300.0,
        *,
        reasoning_style: str = "none",
        reasoning_effort_on: str = "medium",
        reasoning_effort_off: str = "none",
        max_tokens_field: str = "max_tokens",
        extra_body: dict | None = None,
        api_key_header: str | None = None,
    ):
        if reasoning_style not in REASONING_STYLES:
            raise ValueError(f"reasoning_style {reasoning_style!r}: use one of {', '.join(REASONING_STYLES)}")
        if max_tokens_field not in MAX_TOKENS_FIELDS:
            raise ValueError(f"max_tokens_field {max_tokens_field!r}: use one of {', '.join(MAX_TOKENS_FIELDS)}")
        super().__init__(name, base_url, model_id, api_key_env, timeout_connect_s, timeout_read_s,
                         api_key_header=api_key_header, extra_body=extra_body)
        self.reasoning_style = reasoning_style
        self.reasoning_effort_on = reasoning_effort_on
        self.reasoning_effort_off = reasoning_effort_off
        self.max_tokens_field = max_tokens_field

    def request_body(self, messages: Sequence[Message], config: GenerateConfig) -> dict:
        """The JSON body sent for one call (public so tests and transcripts can show it; holds no key)."""
        body: dict[str, Any] = {
            "model": self.model_id,
            "messages": [{"role": m.role, "content": m.content} for m in messages],
            "temperature": config.temperature,
            self.max_tokens_field: config.max_tokens,
        }
        if config.seed is not None:
            body["seed"] = config.seed
        if config.reasoning is not None:
            if self.reasoning_style == "chat_template_kwargs":
                body["chat_template_kwargs"] = {"enable_thinking": bool(config.reasoning)}
            elif self.reasoning_style == "reasoning_effort":
                body["reasoning_effort"] = (
                    self.reasoning_effort_on if config.reasoning else self.reasoning_effort_off
                )
        return self._merge_extra(body)

    def generate(self, messages: Sequence[Message], config: GenerateConfig) -> Completion:
        key = self._api_key()
        secrets = (key,)
        data, latency = self._post(self.request_body(messages, config), key)
        who = f"model {self.name!r} ({self.model_id} at {self.url})"
        choices = data.get("choices")
        if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
            raise RetryableError(f"{who}: HTTP 200 with no choices in the body")
        message = choices[0].get("message")
        message = message if isinstance(message, dict) else {}
        text = _content_text(message.get("content"))
        # reasoning_content: DeepSeek, vLLM, SGLang, llama.cpp; reasoning: Ollama, OpenRouter
        reasoning = _str_or_none(message.get("reasoning_content")) or _str_or_none(message.get("reasoning"))
        usage = data.get("usage") if isinstance(data.get("usage"), dict) else {}
        return Completion(
            text=redact(text, secrets) if text is not None else None,
            model=redact(str(data.get("model") or self.model_id), secrets),
            prompt_tokens=_int_or_none(usage.get("prompt_tokens")),
            completion_tokens=_int_or_none(usage.get("completion_tokens")),
            latency_s=latency,
            raw=redact_obj(data, secrets),
            stop_reason=_str_or_none(choices[0].get("finish_reason")),
            reasoning=redact(reasoning, secrets) if reasoning is not None else None,
        )


class RetryingModel:
    """Exponential backoff with jitter around any ModelAPI.

    Retried: `RetryableError` and a turn with `text is None` (unless it was cut
    off by its budget: that is a truncated reply). After the last attempt:
    `OmittedError` (the item is omitted, never scored as a wrong letter).
    `FatalModelError` and `ContextOverflowError` pass straight through. A server's
    `Retry-After` is used as the delay, capped at `max_delay_s`.
    """

    def __init__(
        self,
        inner: ModelAPI,
        max_attempts: int = 4,
        base_delay_s: float = 2.0,
        max_delay_s: float = 60.0,
        sleep: Callable[[float], None] = time.sleep,
        rng: random.Random | None = None,
    ):
        if max_attempts < 1:
            raise ValueError(f"max_attempts must be >= 1, got {max_attempts}")
        self.inner = inner
        self.name = inner.name
        self.max_attempts = max_attempts
        self.base_delay_s = base_delay_s
        self.max_delay_s = max_delay_s
        self.sleep = sleep
        self.rng = rng if rng is not None else random.Random(0)
        self._rng_lock = threading.Lock()

    def delay_s(self, attempt: int, retry_after_s: float | None) -> float:
        """Delay before attempt `attempt + 1`: Retry-After if given, else equal-jitter backoff."""
        if retry_after_s is not None:
            return min(max(0.0, retry_after_s), self.max_delay_s)
        ceiling = min(self.max_delay_s, self.base_delay_s * 2 ** (attempt - 1))
        with self._rng_lock:
            return ceiling / 2 + self.rng.uniform(0, ceiling / 2)

    def generate(self, messages: Sequence[Message], config: GenerateConfig) -> Completion:
        last = ""
        for attempt in range(1, self.max_attempts + 1):
            retry_after = None
            try:
                completion = self.inner.generate(messages, config)
            except RetryableError as e:
                last, retry_after = str(e), e.retry_after_s
            else:
                if completion.text is not None or completion.truncated:
                    # a turn cut off by its budget is the model's answer (truncated), not a fault
                    return replace(completion, attempts=attempt)
                last = f"model {self.name!r} returned an empty turn (null content)"
            if attempt == self.max_attempts:
                break
            delay = self.delay_s(attempt, retry_after)
            log.warning("%s (attempt %d/%d); retrying in %.2f s", last, attempt, self.max_attempts, delay)
            self.sleep(delay)
        raise OmittedError(f"model {self.name!r}: no answer after {self.max_attempts} attempts; last: {last}")

    def close(self) -> None:
        close = getattr(self.inner, "close", None)
        if callable(close):
            close()


class BoundedModel:
    """At most `max_concurrency` calls in flight to `inner`, however many threads call it."""

    def __init__(self, inner: ModelAPI, max_concurrency: int):
        if max_concurrency < 1:
            raise ValueError(f"max_concurrency must be >= 1, got {max_concurrency}")
        self.inner = inner
        self.name = inner.name
        self.max_concurrency = max_concurrency
        self._slots = threading.BoundedSemaphore(max_concurrency)

    def generate(self, messages: Sequence[Message], config: GenerateConfig) -> Completion:
        with self._slots:
            return self.inner.generate(messages, config)

    def close(self) -> None:
        close = getattr(self.inner, "close", None)
        if callable(close):
            close()


T = TypeVar("T")
R = TypeVar("R")


def run_bounded(fn: Callable[[T], R], inputs: Iterable[T], max_concurrency: int) -> list[R]:
    """`[fn(x) for x in inputs]` with at most `max_concurrency` running at once, in input order.

    `fn` should turn per-item failures it wants to keep (e.g. `OmittedError`)
    into results itself; any exception it raises cancels the inputs not yet
    started and is re-raised here (a `FatalModelError` should stop the run).
    """
    if max_concurrency < 1:
        raise ValueError(f"max_concurrency must be >= 1, got {max_concurrency}")
    items = list(inputs)
    if not items:
        return []
    with ThreadPoolExecutor(max_workers=min(max_concurrency, len(items))) as pool:
        futures = [pool.submit(fn, x) for x in items]
        done, pending = wait(futures, return_when=FIRST_EXCEPTION)
        for f in futures:
            if f.done() and not f.cancelled() and f.exception() is not None:
                for p in pending:
                    p.cancel()
                raise f.exception()  # type: ignore[misc]
        return [f.result() for f in futures]
