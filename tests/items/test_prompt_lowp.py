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


def test_items_are_built_only_for_gpus_that_meet_the_family_s_need(tmp_path):
    import shutil

    from plugins.items.build import build_items
    from plugins.measure.keyfile import SCHEMA, write_key

    root = tmp_path / "families"
    d = root / "rowquant"
    shutil.copytree(HARD / "rowquant", d, ignore=shutil.ignore_patterns("__pycache__"))
    # the key's GPU is what its measurement record reports (written by the measure stage's own writer)
    a100 = {"schema": SCHEMA, "family": "rowquant", "gpu": {"name": "NVIDIA A100-SXM4-80GB", "slug": "a100-sxm4-80gb",
                                                           "compute_capability": "8.0", "sm_count": 108}}
    write_key(d, "a100-sxm4-80gb", a100)  # rowquant's fp8 conversions need 8.9
    items, notes = build_items(root, "a100-sxm4-80gb", allow_intended=True, sets=("hard",))
    assert items == [] and any("rowquant: needs compute capability 8.9 (hardware fp8 conversions); a100-sxm4-80gb is 8.0, "
                               "no items" in n for n in notes)
    items, _ = build_items(root, "h200", allow_intended=True, sets=("hard",))
    assert {i.family for i in items} == {"rowquant"}
