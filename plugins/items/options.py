"""The shape of the item grid, in one place: conditions, option orders, letters, task names.

Why its own module: the prompt, the items and the scorers all need these, and
none of them should import the others for a constant.
"""
from __future__ import annotations

# The classic and hard sets' conditions: the third deletes the bank-conflict rows.
CONDITIONS = ("source", "full", "no-conflicts")
# The third condition per set: the diagnose set deletes each family's declared cue rows
# instead (its [slip] table), so the ablation tests whether those rows decide the answer.
ABLATED_CONDITION = {"classic": "no-conflicts", "hard": "no-conflicts", "diagnose": "no-cue"}
ALL_CONDITIONS = ("source", "full", "no-conflicts", "no-cue")
ORDERS = ("forward", "mirror")
LETTERS = ("A", "B", "C", "D")
# The seed's task names: the middle word is the evidence, `ablated` for the third condition of every set.
TASK_WORD = {"source": "source", "full": "full", "no-conflicts": "ablated", "no-cue": "ablated"}


def ablated_condition(family_set: str) -> str:
    """The third condition of a family set (a set not listed ablates the bank-conflict rows)."""
    return ABLATED_CONDITION.get(family_set, "no-conflicts")


def conditions_of(family_set: str) -> tuple[str, str, str]:
    """The three conditions a family of `family_set` is asked under, in table order."""
    return ("source", "full", ablated_condition(family_set))


def conditions_for(family_sets: "tuple[str, ...] | list[str]") -> tuple[str, ...]:
    """The table columns for records of these sets: source, full, then each set's third condition once."""
    thirds = [ablated_condition(s) for s in family_sets] or [CONDITIONS[2]]
    return ("source", "full", *dict.fromkeys(sorted(thirds, key=ALL_CONDITIONS.index)))
