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


def test_items_are_built_only_for_gpus_the_family_targets(tmp_path):
    import shutil

    from plugins.items.build import build_items
    from plugins.measure.keyfile import SCHEMA, write_key

    root = tmp_path / "families"
    d = root / "rowquant"
    shutil.copytree(HARD / "rowquant", d, ignore=shutil.ignore_patterns("__pycache__"))
    (d / "family.toml").write_text((d / "family.toml").read_text().replace('set = "hard"', 'set = "hard"\ntargets = ["sm_90"]'))
    # the key's GPU is what its measurement record reports (written by the measure stage's own writer)
    gb10 = {"schema": SCHEMA, "family": "rowquant", "gpu": {"name": "NVIDIA GB10", "slug": "gb10",
                                                           "compute_capability": "12.1", "sm_count": 48}}
    write_key(d, "gb10", gb10)
    items, notes = build_items(root, "gb10", allow_intended=True, sets=("hard",))
    assert items == [] and any("rowquant: targets ['sm_90'], not gb10 (compute capability 12.1), no items" in n for n in notes)
    items, _ = build_items(root, "h200", allow_intended=True, sets=("hard",))
    assert {i.family for i in items} == {"rowquant"}
