"""The prompt's problem text sizes low-precision buffers by their real item sizes."""
from __future__ import annotations

from pathlib import Path

from plugins.family.manifest import load_family
from plugins.items.prompt import problem_text

HARD = Path(__file__).resolve().parents[1] / "fixtures" / "hardfams"


def test_problem_text_counts_two_and_one_byte_elements():
    text = problem_text(load_family(HARD / "rowquant"))
    n = 8192 * 8192
    assert f"- x: bfloat16 input, rows * cols = {n} elements ({2 * n} bytes)" in text
    assert f"- q: float8_e4m3 output, rows * cols = {n} elements ({n} bytes)" in text
