"""Shape pairs: members share their kernel sources byte for byte (compared by sha256),
differ in shape, and intend different winners (plugins/family/pairs.py)."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from plugins.family.manifest import FamilyError, load_family
from plugins.family.pairs import pair_problems

HARD = Path(__file__).resolve().parents[1] / "fixtures" / "hardfams"


def test_pairs_share_their_code_and_differ_in_shape_and_winner(catalog):
    """Every family that names a pair, against its partner (loaded from disk when --set left it out)."""
    problems = []
    for fam in catalog.families:
        if not fam.pair:
            continue
        partner = next((f for f in catalog.families if f.name == fam.pair), None)
        if partner is None:
            path = catalog.root / fam.pair
            if not (path / "family.toml").is_file():
                problems.append(f"{fam.name} names pair {fam.pair!r}, which is not a family under {catalog.root}")
                continue
            try:
                partner = load_family(path)
            except FamilyError as exc:
                problems.append(f"{fam.name}: its pair {fam.pair} is malformed: {exc}")
                continue
        problems += [f"{fam.name} / {partner.name}: {p}" for p in pair_problems(fam, partner)]
    if problems:
        pytest.fail("\n".join(problems), pytrace=False)


def _pair(tmp_path: Path) -> tuple[Path, Path]:
    a, b = tmp_path / "rowquant", tmp_path / "rowquant_tall"
    for d in (a, b):
        shutil.copytree(HARD / "rowquant", d, ignore=shutil.ignore_patterns("__pycache__"))
    (a / "family.toml").write_text((a / "family.toml").read_text().replace('set = "hard"', 'set = "hard"\npair = "rowquant_tall"'))
    text = (b / "family.toml").read_text().replace('name = "rowquant"', 'name = "rowquant_tall"\npair = "rowquant"')
    text = text.replace("rows = 8192\ncols = 8192", "rows = 262144\ncols = 256").replace('winner = "wide"', 'winner = "narrow"')
    (b / "family.toml").write_text(text)
    return a, b


def test_a_fair_pair_has_no_problems(tmp_path):
    a, b = _pair(tmp_path)
    assert pair_problems(load_family(a), load_family(b)) == []


@pytest.mark.parametrize(
    "mutate, words",
    [
        (lambda b: (b / "rewrites" / "wide.cu").write_text((b / "rewrites" / "wide.cu").read_text() + "\n"), "rewrites/wide.cu differs"),
        (lambda b: (b / "kernel.cu").write_text((b / "kernel.cu").read_text().replace("448.0f / m", "448.0f/m")), "kernel.cu differs"),
        (lambda b: (b / "family.toml").write_text((b / "family.toml").read_text().replace('winner = "narrow"', 'winner = "wide"')), "both intend 'wide'"),
        (lambda b: (b / "family.toml").write_text((b / "family.toml").read_text().replace("rows = 262144\ncols = 256", "rows = 8192\ncols = 8192")), "timing shapes are the same"),
        (lambda b: (b / "family.toml").write_text((b / "family.toml").read_text().replace("Launches 64 threads per row.", "Launches 64 threads for each row.")), "texts"),
        (lambda b: (b / "family.toml").write_text((b / "family.toml").read_text().replace("rows = 5\ncols = 256", "rows = 6\ncols = 256")), "gate shapes differ"),
        (lambda b: (b / "family.toml").write_text((b / "family.toml").read_text().replace('pair = "rowquant"', 'pair = "other"')), "each must name the other"),
    ],
    ids=["rewrite-drift", "start-drift", "same-winner", "same-shape", "option-text", "gate-shapes", "one-sided"],
)
def test_pair_problems_are_named(tmp_path, mutate, words):
    a, b = _pair(tmp_path)
    mutate(b)
    problems = pair_problems(load_family(a), load_family(b))
    assert any(words in p for p in problems), problems


def test_pair_field_is_checked(tmp_path):
    a, _ = _pair(tmp_path)
    (a / "family.toml").write_text((a / "family.toml").read_text().replace('pair = "rowquant_tall"', 'pair = "rowquant"'))
    with pytest.raises(FamilyError, match=r"field 'pair'.*name the other family"):
        load_family(a)
