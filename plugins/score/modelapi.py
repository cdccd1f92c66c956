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


@dataclass(frozen=True)
class Completion:
    """What came back. `text` is None when the model turn was empty (null content)."""

    text: str | None
    model: str
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    latency_s: float = 0.0
    raw: dict = field(default_factory=dict, compare=False)
    attempts: int = 1


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
