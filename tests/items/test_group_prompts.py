"""The property the diagnose set rests on, as a test: for each data group and option order, the
members' source prompts are byte-identical, their full and no-cue prompts differ only inside
the slip block, and no prompt shows a member's name or its [data]. Runs over every group of the
catalog (the real families once they land; --set diagnose or all) and over the fixture group;
slips are LAYOUT-ONLY fixtures (tests/items/layout_slips.py), one per member."""
from __future__ import annotations

import json
import re
from types import SimpleNamespace
import shutil
from pathlib import Path

import pytest

from layout_slips import cue_report
from plugins.family.manifest import DIAGNOSE_SET, FamilyError, load_family
from plugins.items.build import build_items, condition_slips, write_jsonl
from plugins.items.options import ORDERS
from plugins.items.keys import load_stand_in
from plugins.items.prompt import render_prompt

GROUPS = Path(__file__).parents[1] / "fixtures" / "datagroups"
GPU = load_stand_in().gpu  # the dry run's device, prompts/stand-in-gpu.toml


def _words(value) -> list[str]:
    items = value if isinstance(value, list) else [value]
    return [str(v) for v in items if isinstance(v, str) and v.strip()]


def hidden_problems(member, prompt: str, where: str) -> list[str]:
    """The member's name, and its [data] (string values, `key = value` spellings), must not be in the prompt."""
    out = []
    for name in member.group:
        if re.search(rf"(?<!\w){re.escape(name)}(?!\w)", prompt, re.IGNORECASE):
            out.append(f"{where}: shows the family name {name!r}")
    for key, value in member.data.items():
        for word in _words(value):
            if re.search(rf"(?<!\w){re.escape(word)}(?!\w)", prompt, re.IGNORECASE):
                out.append(f"{where}: shows data.{key} = {word!r}")
        for v in value if isinstance(value, list) else [value]:
            if not isinstance(v, str) and re.search(rf"(?<!\w){re.escape(key)}\s*[=:]\s*{re.escape(str(v))}(?![\w.])", prompt):
                out.append(f"{where}: shows the data parameter {key} = {v!r}")
    return out


def _split(prompt: str, slip: str, where: str) -> tuple[str, str]:
    body = slip.rstrip("\n")
    assert prompt.count(body) == 1, f"{where}: the slip is not in the prompt exactly once"
    head, tail = prompt.split(body)
    return head, tail


def group_prompt_problems(members) -> list[str]:
    out = []
    label = "/".join(m.name for m in members)
    for order in ORDERS:
        sources = {m.name: render_prompt(m, order, GPU) for m in members}
        if len(set(sources.values())) != 1:
            out.append(f"group {label} ({order}): the source prompts differ between members")
        for m in members:
            out += hidden_problems(m, sources[m.name], f"{m.name}/source/{order}")
        slips = {m.name: condition_slips(m, cue_report(m, i)) for i, m in enumerate(members)}
        for condition in ("full", "no-cue"):
            parts, prompts = set(), set()
            for m in members:
                slip = slips[m.name][condition]
                prompt = render_prompt(m, order, GPU, slip)
                prompts.add(prompt)
                parts.add(_split(prompt, slip, f"{m.name}/{condition}/{order}"))
                out += hidden_problems(m, prompt, f"{m.name}/{condition}/{order}")
            if len(parts) != 1:
                out.append(f"group {label} ({condition}, {order}): the prompts differ outside the slip block")
            if condition == "full" and len(prompts) != len(members):
                out.append(f"group {label} ({condition}, {order}): the members' layout slips are identical, "
                           "so this check compared nothing")
    return out


def group_of(member, catalog) -> list:
    """The member's whole group: from the catalog, else loaded from disk (--set or --family left it out)."""
    out = []
    for name in member.group:
        found = next((f for f in catalog.families if f.name == name), None)
        try:
            out.append(found or load_family(catalog.root / name))
        except (FamilyError, OSError) as exc:
            pytest.fail(f"{member.name}: group member {name} cannot be loaded: {exc}", pytrace=False)
    return out


def test_every_data_group_shares_its_prompts(group_member, catalog):
    """Every member's group in the selected sets (--set diagnose or all; make family NAME=x)."""
    assert group_prompt_problems(group_of(group_member, catalog)) == []


def _fixture_group():
    first = load_family(GROUPS / "gather_sorted")
    return [load_family(GROUPS / name) for name in first.group]


def test_fixture_group_shares_its_prompts():
    assert group_prompt_problems(_fixture_group()) == []


def test_a_member_whose_prompt_differs_is_caught(tmp_path):
    members = []
    for name in ("gather_sorted", "gather_random"):
        shutil.copytree(GROUPS / name, tmp_path / name)
    toml = tmp_path / "gather_random" / "family.toml"
    toml.write_text(toml.read_text().replace("by an int32 index vector.", "by an int32 index vector (random order)."))
    members = [load_family(tmp_path / n) for n in ("gather_sorted", "gather_random")]
    problems = group_prompt_problems(members)
    assert any("source prompts differ" in p for p in problems)
    assert any("differ outside the slip block" in p for p in problems)
    assert any("data.generator = 'random'" in p for p in problems)


def test_a_name_or_data_in_a_prompt_is_caught():
    sorted_ = _fixture_group()[0]
    assert hidden_problems(sorted_, "the gather_sorted kernel", "x") == ["x: shows the family name 'gather_sorted'"]
    assert hidden_problems(sorted_, "indices are Sorted here", "x") == ["x: shows data.generator = 'sorted'"]
    numeric = SimpleNamespace(group=(), data={"d": [0, 1]})
    assert hidden_problems(numeric, "d = 1;", "x") == ["x: shows the data parameter d = 1"]
    assert hidden_problems(numeric, "d = x + 3; d: 12", "x") == []  # a variable named like the key is not a leak
    assert hidden_problems(sorted_, "unsorted rows, gather_sorted_x", "x") == []


def test_items_carry_the_group_and_never_the_data(tmp_path):
    """The built items (and their JSONL) of a group: same source prompt per order, the group id, no [data]."""
    root = tmp_path / "families"
    for name in ("gather_sorted", "gather_random"):
        shutil.copytree(GROUPS / name, root / name)
    items, _ = build_items(root, "h200", allow_intended=True, sets=(DIAGNOSE_SET,))
    assert sorted(it.id for it in items) == sorted(f"{f}/source/{o}" for f in ("gather_random", "gather_sorted") for o in ORDERS)
    for order in ORDERS:
        assert len({it.prompt for it in items if it.order == order}) == 1
    assert {it.group for it in items} == {"gather_sorted+gather_random"} and {it.set for it in items} == {DIAGNOSE_SET}
    assert {it.task for it in items} == {f"kernel-compass-diagnose-source-{o}" for o in ORDERS}
    assert {it.answer for it in items if it.order == "forward"} == {"B", "C"}  # vec4 and warp_row: different winners
    write_jsonl(items, tmp_path / "items.jsonl")
    for line in (tmp_path / "items.jsonl").read_text().splitlines():
        rec = json.loads(line)
        assert rec["group"] == "gather_sorted+gather_random" and rec["pair"] == "" and rec["set"] == DIAGNOSE_SET
        assert "generator" not in line and "sorted\"" not in rec["prompt"]


def _synthetic_key(fam, winner: str) -> dict:
    """A SYNTHETIC measurement record (tmp_path only, never a measurement): the winner is fastest."""
    from plugins.measure.keyfile import SCHEMA

    times = {c.id: (1.0 if c.id == winner else 2.0 + i) for i, c in enumerate(fam.candidates)}
    order = sorted((r.id for r in fam.rewrites), key=times.get)
    return {"schema": SCHEMA, "family": fam.name, "provenance": {"command": "SYNTHETIC TEST DATA"}, "protocol": {},
            "gpu": {"name": "NVIDIA H200", "slug": "h200", "compute_capability": "9.0", "sm_count": 132}, "gate": {},
            "candidates": {k: {"time_ms": v} for k, v in times.items()},
            "ranking": {"order": order, "winner": winner, "runner_up": order[1], "ratio": 2.0, "kept": True}}


def test_measured_group_items_end_to_end(tmp_path):
    """Items built on a SYNTHETIC key with synthetic slips (layout fixtures re-labelled inside tmp_path):
    six per member, the third condition is no-cue (task `ablated`), prompts differ only in the slip."""
    from layout_slips import cue_csv
    from plugins.measure.ncu import FIXTURE_MARKER

    root = tmp_path / "families"
    (tmp_path / "slips" / "h200").mkdir(parents=True)
    for i, name in enumerate(("gather_sorted", "gather_random")):
        shutil.copytree(GROUPS / name, root / name)
        fam = load_family(root / name)
        (root / name / "measurements").mkdir()
        (root / name / "measurements" / "h200.json").write_text(json.dumps(_synthetic_key(fam, fam.intended_winner)))
        text = cue_csv(fam.slip, tuple(launch.kernel for launch in fam.start.launches), i)
        (tmp_path / "slips" / "h200" / f"{name}.csv").write_text(text.replace(FIXTURE_MARKER, "synthetic-e2e-test"))
    items, notes = build_items(root, "h200", sets=(DIAGNOSE_SET,))
    assert notes == []
    assert sorted({it.condition for it in items}) == ["full", "no-cue", "source"] and len(items) == 12
    assert {it.task for it in items} == {f"kernel-compass-diagnose-{w}-{o}" for w in ("source", "full", "ablated") for o in ORDERS}
    by = {it.id: it for it in items}
    for order in ORDERS:
        a, b = by[f"gather_sorted/full/{order}"], by[f"gather_random/full/{order}"]
        assert a.prompt != b.prompt and "L2 Hit Rate" in a.prompt
        heads = {p.split("Kernel launch 1 of 1")[0] for p in (a.prompt, b.prompt)}
        tails = {p.rsplit("lts__t_sectors_srcunit_tex_op_read.sum", 1)[1].split("\n", 1)[1] for p in (a.prompt, b.prompt)}
        assert len(heads) == 1 and len(tails) == 1
        nc = by[f"gather_sorted/no-cue/{order}"].prompt
        assert "L2 Hit Rate" not in nc and "lts__t_sectors_srcunit_tex_op_read" not in nc and "L1/TEX Hit Rate" in nc
        assert by[f"gather_sorted/no-cue/{order}"].prompt == by[f"gather_random/no-cue/{order}"].prompt  # only cue rows differed
