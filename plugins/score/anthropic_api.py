"""Anthropic's native Messages API (`POST <base_url>/messages`), behind the same one-method API.

Why its own client and not the OpenAI compatibility layer: only the native API
takes Anthropic's thinking settings, returns thinking blocks and says why a
reply stopped in its own words (`end_turn`, `max_tokens`, `refusal`, ...). The
key goes in `x-api-key` (configurable per entry) with `anthropic-version`; the
rest (retries, redaction, error classes) is shared with the OpenAI-compatible
client, so `RetryingModel` wraps it the same way.
"""
from __future__ import annotations

from typing import Any, Sequence

from plugins.score.client import (
    ANTHROPIC_REASONING_STYLES,
    HTTPChatClient,
    _int_or_none,
    _str_or_none,
    redact,
    redact_obj,
)
from plugins.score.modelapi import Completion, GenerateConfig, Message, RetryableError

DEFAULT_VERSION = "2023-06-01"
MIN_THINKING_BUDGET = 1024  # the API rejects a smaller budget_tokens


class AnthropicClient(HTTPChatClient):
    """One attempt per `generate`; failures classified as in `OpenAIClient`.

    System messages go into the top-level `system` field. With
    `reasoning_style = "anthropic_thinking"`, reasoning true sends
    `{"thinking": {"type": "enabled", "budget_tokens": N}}` and false sends
    `{"type": "disabled"}`. Thinking blocks come back as `Completion.reasoning`
    (redacted blocks are noted, their data is not kept); text blocks are the answer.
    """

    path = "/messages"
    default_key_header = "x-api-key"

    def __init__(self, name: str, base_url: str, model_id: str, api_key_env: str | None = None,
                 timeout_connect_s: float = 10.0, timeout_read_s: float = 300.0, *,
                 anthropic_version: str = DEFAULT_VERSION, reasoning_style: str = "none",
                 extra_body: dict | None = None, api_key_header: str | None = None):
        if reasoning_style not in ANTHROPIC_REASONING_STYLES:
            raise ValueError(f"reasoning_style {reasoning_style!r} for the Anthropic API: "
                             f"use one of {', '.join(ANTHROPIC_REASONING_STYLES)}")
        super().__init__(name, base_url, model_id, api_key_env, timeout_connect_s, timeout_read_s,
                         api_key_header=api_key_header, extra_body=extra_body)
        self.anthropic_version = anthropic_version
        self.reasoning_style = reasoning_style

    def headers(self, key: str | None) -> dict[str, str]:
        return {**super().headers(key), "anthropic-version": self.anthropic_version}

    def request_body(self, messages: Sequence[Message], config: GenerateConfig) -> dict:
        """The JSON body sent for one call (holds no key)."""
        system = "\n\n".join(m.content for m in messages if m.role == "system")
        body: dict[str, Any] = {
            "model": self.model_id,
            "max_tokens": config.max_tokens,
            "messages": [{"role": m.role, "content": m.content} for m in messages if m.role != "system"],
            "temperature": config.temperature,
        }
        if system:
            body["system"] = system
        if self.reasoning_style == "anthropic_thinking" and config.reasoning is not None:
            if config.reasoning:
                budget = config.thinking_budget_tokens or MIN_THINKING_BUDGET
                body["thinking"] = {"type": "enabled", "budget_tokens": budget}
            else:
                body["thinking"] = {"type": "disabled"}
        return self._merge_extra(body)

    def generate(self, messages: Sequence[Message], config: GenerateConfig) -> Completion:
        key = self._api_key()
        secrets = (key,)
        data, latency = self._post(self.request_body(messages, config), key)
        who = f"model {self.name!r} ({self.model_id} at {self.url})"
        blocks = data.get("content")
        if not isinstance(blocks, list):
            raise RetryableError(f"{who}: HTTP 200 with no content list in the body")
        texts, thoughts = [], []
        for b in blocks:
            if not isinstance(b, dict):
                continue
            if b.get("type") == "text" and isinstance(b.get("text"), str):
                texts.append(b["text"])
            elif b.get("type") == "thinking" and isinstance(b.get("thinking"), str):
                thoughts.append(b["thinking"])
            elif b.get("type") == "redacted_thinking":
                thoughts.append("[redacted thinking block: the API returned it encrypted]")
        stop = _str_or_none(data.get("stop_reason"))
        text = "".join(texts) if texts else None
        if text is None and stop is None:
            raise RetryableError(f"{who}: HTTP 200 with neither text nor a stop_reason")
        usage = data.get("usage") if isinstance(data.get("usage"), dict) else {}
        reasoning = "\n\n".join(thoughts) if thoughts else None
        # drop the encrypted payloads from raw: they are opaque and large
        raw = {**data, "content": [{k: v for k, v in b.items() if k not in ("signature", "data")}
                                   if isinstance(b, dict) else b for b in blocks]}
        return Completion(
            text=redact(text, secrets) if text is not None else None,
            model=redact(str(data.get("model") or self.model_id), secrets),
            prompt_tokens=_int_or_none(usage.get("input_tokens")),
            completion_tokens=_int_or_none(usage.get("output_tokens")),
            latency_s=latency,
            raw=redact_obj(raw, secrets),
            stop_reason=stop,
            reasoning=redact(reasoning, secrets) if reasoning is not None else None,
        )
