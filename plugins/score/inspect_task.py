"""SparkTrace as an Inspect AI task: the items as Samples, `generate()` as the solver, and a
scorer that reads letters with SparkTrace's own extractor and outcomes by SparkTrace's own rule.

Why SparkTrace's scorer and not Inspect's `choice()`/`match()`: Inspect's letter scorers read
"Answer: a bit" as A, and know neither a reply cut off by its budget (truncated, its own
outcome) nor an item omitted because the prompt does not fit (excluded from the
denominator). The metrics mirror SparkTrace's table: accuracy by condition and by set
(omitted excluded), the three counts kept apart, and full minus source with its exact
McNemar test. `epochs` are SparkTrace's passes.

Run it with `inspect eval harnesses/inspect/sparktrace.py -T key=h200 --model ...`
(docs/harnesses.md). inspect_ai is imported here only: nothing else in SparkTrace needs it.
"""
from __future__ import annotations

import hashlib
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

from inspect_ai import Epochs, Task
from inspect_ai.dataset import Sample
from inspect_ai.scorer import (
    CORRECT,
    INCORRECT,
    Metric,
    SampleScore,
    Score,
    Target,
    accuracy,
    grouped,
    metric,
    scorer,
)
from inspect_ai.solver import TaskState, generate

from plugins.family.manifest import DEFAULT_SET, selected_sets
from plugins.items.build import Item, build_items, read_jsonl
from plugins.items.keys import resolve_key
from plugins.score.report import unmeasured_banner
from plugins.score.session import PluginExtractor
from plugins.score.tally import mcnemar_exact, outcome_of

log = logging.getLogger("sparktrace.inspect")
REPO = Path(__file__).resolve().parents[2]
# Inspect's own stop reasons (it maps OpenAI's "length" and Anthropic's "max_tokens" to
# "max_tokens"); "model_length" with no output tokens is a prompt that did not fit.
TRUNCATED = frozenset({"max_tokens", "model_length"})


class UnmeasuredKeyError(ValueError):
    """Items on a key no GPU measured, without key_intended=True."""


@dataclass(frozen=True)
class Outcome:
    outcome: str  # correct, wrong, no-letter, truncated, omitted
    letter: str | None
    strict: str | None
    omitted_for: str = ""


def outcome_for(expected: str, text: str | None, stop_reason: str | None, output_tokens: int | None = None) -> Outcome:
    """SparkTrace's rule for one reply, given Inspect's stop reason."""
    ex = PluginExtractor()
    if stop_reason == "model_length" and not output_tokens:
        return Outcome("omitted", None, None, "context")  # the server refused the prompt as too long
    if stop_reason in TRUNCATED:
        return Outcome("truncated", None, None)
    letter = ex.letter(text) if text else None
    strict = ex.strict(text) if text else None
    return Outcome(outcome_of(expected, letter), letter, strict)


def load_task_items(items: str | Path | None, key: str | None, family_set: str, key_intended: bool,
                    families: str | Path) -> list[Item]:
    """The export's items (a JSONL path), else the items built from families/ on the key."""
    if items:
        path = Path(items)
        found = read_jsonl(path if path.is_absolute() or path.exists() else REPO / path)
        where = str(path)
    else:
        root = Path(families)
        root = root if root.is_absolute() else REPO / root
        key = resolve_key(root, key, key_intended)  # None: the one measured key, or the stand-in's for a dry run
        found, notes = build_items(root, key, allow_intended=key_intended, sets=selected_sets(family_set))
        for n in notes:
            log.info("%s", n)
        where = f"{families} on key {key}"
    if not found:
        raise ValueError(f"{where}: no item; export a key that has items (python -m plugins.items export) "
                         "or pass key_intended=true for a dry run on the intended winners")
    for it in found:
        if hashlib.sha256(it.prompt.encode()).hexdigest() != it.prompt_sha256:
            raise ValueError(f"{where}: item {it.id}: prompt_sha256 does not match the prompt; re-export the items")
    unmeasured = sorted({it.key.gpu for it in found if not it.key.measured})
    if unmeasured and not key_intended:
        raise UnmeasuredKeyError(
            f"{where}: the key ({', '.join(unmeasured)}) was not measured on a GPU; measure it, or pass "
            "-T key_intended=true for a dry run on the intended winners (not a score)")
    return found


def sample_of(it: Item) -> Sample:
    k = it.key
    return Sample(input=it.prompt, target=it.answer, id=it.id, metadata={
        "family": it.family, "condition": it.condition, "order": it.order, "set": it.set, "task": it.task,
        "prompt_sha256": it.prompt_sha256, "key": k.gpu, "key_measured": k.measured, "key_fragile": k.fragile,
        "key_noisy": getattr(k, "noisy", False), "pair": getattr(it, "pair", ""), "group": getattr(it, "group", ""),
    })


@metric
def counts() -> Metric:
    """The outcomes SparkTrace counts apart: no-letter, truncated, omitted for context, omitted."""

    def compute(scores: list[SampleScore]) -> dict[str, float]:
        out = dict.fromkeys(("no_letter", "truncated", "omitted_context", "omitted_no_answer"), 0.0)
        for s in scores:
            md = s.score.metadata or {}
            o = md.get("outcome")
            if o == "no-letter":
                out["no_letter"] += 1
            elif o == "truncated":
                out["truncated"] += 1
            elif o == "omitted":
                out["omitted_context" if md.get("omitted_for") == "context" else "omitted_no_answer"] += 1
        return out

    return compute


@metric
def full_minus_source() -> Metric:
    """Full minus source correct (as SparkTrace's table), and the exact McNemar test on the
    items paired by family and order (omitted excluded). With epochs > 1 each item's value is
    its mean over epochs; the paired test counts it right when it was right in at least half."""

    def compute(scores: list[SampleScore]) -> dict[str, float]:
        by: dict[tuple[str, str], dict[str, float]] = {}
        sums = {"source": 0.0, "full": 0.0}
        scored = {"source": 0, "full": 0}
        for s in scores:
            md = s.sample_metadata or {}
            cond = md.get("condition")
            if cond not in sums or _omitted(s):
                continue
            v = _value(s.score)
            sums[cond] += v
            scored[cond] += 1
            by.setdefault((md["family"], md["order"]), {})[cond] = v
        b = c = pairs = 0
        for pair in by.values():
            if len(pair) == 2:
                pairs += 1
                src, full = pair["source"] >= 0.5, pair["full"] >= 0.5
                b += src and not full
                c += full and not src
        diff = sums["full"] - sums["source"] if scored["full"] and scored["source"] else float("nan")
        return {"full_minus_source": diff, "pairs": float(pairs), "b_source_only": float(b), "c_full_only": float(c),
                "p_exact_mcnemar": mcnemar_exact(b, c)}

    return compute


def _value(score: Score) -> float:
    """1 for a correct item; an epoch-reduced value (the mean over epochs) as it is."""
    v = score.value
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        return float(v)
    return 1.0 if v == CORRECT else 0.0


def _omitted(s: SampleScore) -> bool:
    return (s.score.metadata or {}).get("outcome") == "omitted"


@metric
def scored_accuracy() -> Metric:
    """Correct out of the items scored (truncated included, omitted excluded), as SparkTrace counts."""
    inner = accuracy()

    def compute(scores: list[SampleScore]) -> float:
        kept = [s for s in scores if not _omitted(s)]
        return inner(kept) if kept else float("nan")

    return compute


@scorer(metrics=[scored_accuracy(), grouped(scored_accuracy(), "condition", all=False),
                 grouped(scored_accuracy(), "set", all=False), full_minus_source(), counts()])
def sparktrace_letter():
    """SparkTrace's extractor and outcome rule. An omitted item (its prompt did not fit) scores
    INCORRECT with outcome "omitted": SparkTrace's metrics leave it out of every denominator and
    count it apart (Inspect's own accuracy() would count it as a miss)."""

    async def score(state: TaskState, target: Target) -> Score:
        out = state.output
        usage = getattr(out, "usage", None)
        got = outcome_for(target.text, out.completion, out.stop_reason,
                          getattr(usage, "output_tokens", None) if usage else None)
        md = {"outcome": got.outcome, "strict": got.strict, "stop_reason": out.stop_reason,
              "omitted_for": got.omitted_for}
        if got.outcome == "omitted":
            return Score(value=INCORRECT, answer=None, metadata=md,
                         explanation="omitted: the prompt does not fit the model's context window")
        return Score(value=CORRECT if got.outcome == "correct" else INCORRECT, answer=got.letter, metadata=md,
                     explanation=f"outcome {got.outcome}, expected {target.text}")

    return score


def sparktrace_task(items: str | None = None, key: str | None = None, family_set: str = DEFAULT_SET,
                    key_intended: bool = False, passes: int = 1, families: str = "families") -> Task:
    """The task: `items` (an export's JSONL) or the items built on `key` from `families` (None: the
    one GPU key measured, or the stand-in's key with key_intended; plugins.items.keys.resolve_key)."""
    found = load_task_items(items, key, family_set, key_intended, families)
    metadata: dict[str, Any] = {"sparktrace_key": sorted({it.key.gpu for it in found}),
                                "sparktrace_key_measured": all(it.key.measured for it in found)}
    if not metadata["sparktrace_key_measured"]:
        banner = unmeasured_banner(", ".join(metadata["sparktrace_key"]))
        metadata["warning"] = banner
        log.warning("%s", banner)
    return Task(dataset=[sample_of(it) for it in found], solver=generate(), scorer=sparktrace_letter(),
                epochs=Epochs(passes, "mean") if passes > 1 else None, metadata=metadata,
                name="sparktrace")


def inspect_outcomes(samples: Sequence[Any]) -> dict[tuple[str, int], dict]:
    """(sample id, epoch) -> what Inspect scored, read from an eval log's samples (for comparisons)."""
    out = {}
    for s in samples:
        sc = next(iter((s.scores or {}).values()))
        out[(str(s.id), int(s.epoch))] = {"outcome": (sc.metadata or {}).get("outcome"), "letter": sc.answer,
                                          "text": s.output.completion, "stop_reason": s.output.stop_reason,
                                          "value": sc.value}
    return out
