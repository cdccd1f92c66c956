"""The one-method model API every model (HTTP, local, baseline) implements.

Why a Protocol: scoring, transcripts and the pytest hooks never care whether a
letter came from an OpenAI-compatible server or a seeded baseline; retries and
concurrency wrap any implementation (as in Inspect AI).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol, Sequence


@dataclass(frozen=True)
class Message:
    role: str  # "system" | "user" | "assistant"
    content: str


@dataclass(frozen=True)
class GenerateConfig:
    """Generation settings recorded with every transcript."""

    temperature: float = 0.0
    max_tokens: int = 4096
    reasoning: bool | None = None  # None: leave the server's default; False: ask for thinking off
    seed: int | None = None
    thinking_budget_tokens: int | None = None  # Anthropic extended thinking's budget (with reasoning on)


# Stop reasons that mean the reply was cut off by its budget (or the window), as the
# servers spell them: OpenAI-compatible "length", Anthropic "max_tokens" and
# "model_context_window_exceeded". Such a reply is "truncated", never a miss.
TRUNCATION_STOP_REASONS = frozenset({"length", "max_tokens", "model_context_window_exceeded"})


def is_truncated(stop_reason: str | None) -> bool:
    return stop_reason in TRUNCATION_STOP_REASONS


@dataclass(frozen=True)
class Completion:
    """What came back. `text` is None when the model turn was empty (null content).

    `stop_reason` is the server's own word (finish_reason / stop_reason), kept as sent;
    `reasoning` is a separate reasoning channel (reasoning_content, thinking blocks):
    kept and shown, never scored."""

    text: str | None
    model: str
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    latency_s: float = 0.0
    raw: dict = field(default_factory=dict, compare=False)
    attempts: int = 1
    stop_reason: str | None = None
    reasoning: str | None = None

    @property
    def truncated(self) -> bool:
        return is_truncated(self.stop_reason)


class ModelAPI(Protocol):
    """One method: messages in, one completion out. Raises the errors below."""

    name: str

    def generate(self, messages: Sequence[Message], config: GenerateConfig) -> Completion: ...


class ModelError(Exception):
    """Base class for model failures."""


class RetryableError(ModelError):
    """429, 5xx, timeouts, resets, malformed bodies: worth another attempt."""

    def __init__(self, message: str, retry_after_s: float | None = None):
        super().__init__(message)
        self.retry_after_s = retry_after_s


class FatalModelError(ModelError):
    """401/400/404 and the like: stop the run, naming the model and the status."""


class OmittedError(ModelError):
    """No model turn after every retry: the item is omitted, never scored as wrong."""


class ContextOverflowError(OmittedError):
    """The prompt plus the answer budget do not fit the model's context window: the item is
    omitted with that reason (checked before asking, or the server's own 400 saying so), and
    the run goes on. Never retried: the same prompt will not fit next time either."""
