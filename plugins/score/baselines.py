"""Baselines that need no server: what a model scores by knowing nothing.

Why they return a trace ending in `Answer: X`: they go through the same
extraction, transcripts, junit and report as a real model, so a baseline run
exercises the whole pipeline, and their rows sit on the same leaderboard.
"""
from __future__ import annotations

import hashlib
import time
from functools import partial
from pathlib import Path
from typing import Callable, Sequence

from plugins.family.manifest import FamilyError, load_family
from plugins.items.options import LETTERS, ORDERS
from plugins.score.heuristics import PREFIX, RULES, HeuristicError, arch_for_key, choose, rule_named, trace
from plugins.score.modelapi import Completion, FatalModelError, GenerateConfig, Message, ModelAPI


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


class HeuristicBaseline:
    """`heuristic:NAME`: one shortcut rule of plugins.score.heuristics, answering
    from the item's family directory and its binary (no server, no network).

    Bound to an item it reads the family and the option order from the item id
    (`family/condition/order`); the evidence condition never changes its pick.
    """

    base_url = ""

    def __init__(self, name: str, families_root: Path = Path("families"), key: str | None = None,
                 item_id: str | None = None):
        self.rule = rule_named(name)
        self.name = PREFIX + self.rule.name
        self.model_id = f"baseline/{self.name}"
        self.families_root = Path(families_root)
        self.key = key
        self.item_id = item_id

    def for_item(self, item_id: str, pass_index: int) -> "HeuristicBaseline":
        return HeuristicBaseline(self.name, self.families_root, self.key, item_id)

    def generate(self, messages: Sequence[Message], config: GenerateConfig) -> Completion:
        t0 = time.perf_counter()
        parts = (self.item_id or "").split("/")
        if len(parts) != 3 or parts[2] not in ORDERS:
            raise FatalModelError(f"{self.name} answers items with ids family/condition/order, got {self.item_id!r}")
        try:
            fam = load_family(self.families_root / parts[0])
        except (FamilyError, OSError) as exc:
            raise FatalModelError(f"{self.name}: cannot read family {parts[0]!r} under {self.families_root}: {exc}") from None
        arch = arch_for_key(self.key, self.families_root)
        letter, values = choose(self.rule, fam, parts[2], arch)
        return Completion(text=trace(self.rule, letter, values, arch), model=self.model_id,
                          latency_s=time.perf_counter() - t0)


BASELINES: dict[str, Callable[[], ModelAPI]] = {"random": RandomBaseline, "always-a": AlwaysA}
HEURISTICS: tuple[str, ...] = tuple(PREFIX + n for n in RULES)


def is_heuristic(name: str | None) -> bool:
    return bool(name) and str(name).startswith(PREFIX)


def make_heuristic(name: str, families_root: Path = Path("families"), key: str | None = None) -> HeuristicBaseline:
    """Raises HeuristicError naming the known heuristics when `name` is not one. `key` None: the key
    plugins.items.keys.resolve_key chooses for a dry run, when the rule needs the GPU."""
    return HeuristicBaseline(name, families_root, key)


HEURISTIC_FACTORIES: dict[str, Callable[[], ModelAPI]] = {n: partial(make_heuristic, n) for n in HEURISTICS}


def make_baseline(name: str) -> ModelAPI | None:
    """The baseline called `name`, or None when it is not a baseline."""
    if is_heuristic(name):
        try:
            return make_heuristic(name)
        except HeuristicError:
            return None
    factory = BASELINES.get(name)
    return factory() if factory else None


def register() -> None:
    """Make the baselines resolvable by plugins.score.registry.resolve_model (CLI paths outside pytest)."""
    from plugins.score.registry import register_factory

    for name, factory in BASELINES.items():
        register_factory(name, factory)
    for name, factory in HEURISTIC_FACTORIES.items():
        register_factory(name, factory)
