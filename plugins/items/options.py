"""The shape of the item grid, in one place: conditions, option orders, letters, task names.

Why its own module: the prompt, the items and the scorers all need these, and
none of them should import the others for a constant.
"""
from __future__ import annotations

DEFAULT_KEY = "h200"  # the committed answer key: measurements/<DEFAULT_KEY>.json
CONDITIONS = ("source", "full", "no-conflicts")
ORDERS = ("forward", "mirror")
LETTERS = ("A", "B", "C", "D")
# The seed's task names: the middle word is the evidence, `ablated` for no-conflicts.
TASK_WORD = {"source": "source", "full": "full", "no-conflicts": "ablated"}
