"""Letter extraction against corpora of answer formats (tests/fixtures/answers/*.jsonl:
corpus.jsonl, and redteam.jsonl written independently of the extractor).

Every corpus line is a hand-written fixture with the letter a careful human
reader would take (`want`, null for a miss) and what the naive strict regex
takes (`strict`). They are fixtures, not model outputs.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from plugins.score.extract import extract_letter, normalize, strict_letter, strip_code

CORPORA = sorted((Path(__file__).parents[1] / "fixtures" / "answers").glob("*.jsonl"))
FIELDS = {"text", "want", "strict", "note"}


def load_corpus() -> list[dict]:
    cases = []
    for corpus in CORPORA:
        for n, line in enumerate(corpus.read_text(encoding="utf-8").splitlines(), 1):
            if not line.strip():
                continue
            case = json.loads(line)
            if set(case) != FIELDS:
                raise ValueError(f"{corpus}:{n}: fields {sorted(case)}; fix: use exactly {sorted(FIELDS)}")
            for key in ("want", "strict"):
                if case[key] not in (None, "A", "B", "C", "D"):
                    raise ValueError(f"{corpus}:{n}: {key} is {case[key]!r}; fix: use A-D or null")
            cases.append({**case, "corpus": corpus.stem, "line": n})
    return cases


CASES = load_corpus()
IDS = [f"{c['corpus']}-{c['line']:03d}-{c['note'][:40]}" for c in CASES]


def test_corpus_is_broad():
    assert {c["corpus"] for c in CASES} >= {"corpus", "redteam"}
    assert len(CASES) >= 60
    assert sum(c["want"] is None for c in CASES) >= 15  # misses are asserted, not just hits
    assert sum(c["want"] != c["strict"] for c in CASES) >= 20  # strict and tolerant disagree
    assert len({c["text"] for c in CASES}) == len(CASES)


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_extract_letter(case):
    assert extract_letter(case["text"]) == case["want"], case["note"]


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_strict_letter(case):
    assert strict_letter(case["text"]) == case["strict"], case["note"]


def test_none_is_a_miss():
    assert extract_letter(None) is None
    assert strict_letter(None) is None


@pytest.mark.parametrize("letter", "ABCD")
def test_every_letter_in_both_orders(letter):
    """The mirror order makes every letter a right answer somewhere; none may be favoured."""
    assert extract_letter(f"Reasoning about option A and option D.\n\nAnswer: {letter}") == letter
    assert extract_letter(f"**{letter}**") == letter
    assert extract_letter(f"The answer is \\boxed{{{letter.lower()}}}") == letter


def test_code_is_removed_but_lines_are_kept():
    text = "before\n```\nA[i] = B[i];\n```\nafter"
    out = strip_code(text)
    assert "A[i]" not in out and out.startswith("before\n") and out.endswith("\nafter")
    assert "B[row]" not in normalize("see `B[row]` here")


def test_seed_instruction_reply():
    """The local model's reply to the explicit instruction ends in one line."""
    prompt_tail = "Reply with only one of these lines and nothing else: Answer: A / Answer: B / Answer: C / Answer: D"
    assert extract_letter(prompt_tail) is None
    assert extract_letter("Answer: C") == "C"
