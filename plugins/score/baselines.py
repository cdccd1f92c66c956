"""Baselines that need no server: what a model scores by knowing nothing.

Why they return a trace ending in `Answer: X`: they go through the same
extraction, transcripts, junit and report as a real model, so a baseline run
exercises the whole pipeline, and their rows sit on the same leaderboard.
"""
from __future__ import annotations

import hashlib
import time
from typing import Callable, Sequence

from plugins.items.options import LETTERS
from plugins.score.modelapi import Completion, GenerateConfig, Message, ModelAPI


class AlwaysA:
    """Always the first option: the mirror order costs it every other point."""

    name = "always-a"
    model_id = "baseline/always-a"
    base_url = ""

    def generate(self, messages: Sequence[Message], config: GenerateConfig) -> Completion:
        t0 = time.perf_counter()
        text = "Baseline always-a: picks the first option without reading.\nAnswer: A"
        return Completion(text=text, model=self.model_id, latency_s=time.perf_counter() - t0)


class RandomBaseline:
    """A uniform pick, seeded from the item id, the pass and the turn, so reruns match.

    Unbound (no item), the seed is the request text itself: still deterministic.
    """

    name = "random"
    model_id = "baseline/random"
    base_url = ""

    def __init__(self, item_id: str | None = None, pass_index: int = 1):
        self.item_id = item_id
        self.pass_index = pass_index

    def for_item(self, item_id: str, pass_index: int) -> "RandomBaseline":
        return RandomBaseline(item_id, pass_index)

    def generate(self, messages: Sequence[Message], config: GenerateConfig) -> Completion:
        t0 = time.perf_counter()
        if self.item_id is None:
            basis = "\x00".join(f"{m.role}:{m.content}" for m in messages)
        else:
            basis = f"{self.item_id}\x00pass{self.pass_index}\x00turn{len(messages)}"
        digest = hashlib.sha256(basis.encode()).digest()
        letter = LETTERS[int.from_bytes(digest[:8], "big") % len(LETTERS)]
        text = f"Baseline random: a seeded uniform pick.\nAnswer: {letter}"
        return Completion(text=text, model=self.model_id, latency_s=time.perf_counter() - t0)


BASELINES: dict[str, Callable[[], ModelAPI]] = {"random": RandomBaseline, "always-a": AlwaysA}


def make_baseline(name: str) -> ModelAPI | None:
    """The baseline called `name`, or None when it is not a baseline."""
    factory = BASELINES.get(name)
    return factory() if factory else None


def register() -> None:
    """Make the baselines resolvable by plugins.score.registry.resolve_model (CLI paths outside pytest)."""
    from plugins.score.registry import register_factory

    for name, factory in BASELINES.items():
        register_factory(name, factory)
