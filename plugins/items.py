"""The 90 items: families x {source, full, no-conflicts} x {forward, mirror}.

An item is what one model call answers. It carries its measured answer key,
which is never shown in the prompt. Items round-trip through JSONL so other
harnesses (Inspect AI, lm-evaluation-harness) can run them.
"""
from __future__ import annotations

import json
import os
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Iterable

CONDITIONS = ("source", "full", "no-conflicts")
ORDERS = ("forward", "mirror")
LETTERS = ("A", "B", "C", "D")
# The seed's task names: the middle word is the evidence, `ablated` for no-conflicts.
TASK_WORD = {"source": "source", "full": "full", "no-conflicts": "ablated"}


def task_name(condition: str, order: str) -> str:
    return f"kernel-compass-{TASK_WORD[condition]}-{order}"


@dataclass(frozen=True)
class Option:
    letter: str
    rewrite: str  # the rewrite's id in family.toml
    text: str


@dataclass(frozen=True)
class KeyInfo:
    """Whose measurement is the answer key, and whether it was measured at all."""

    gpu: str
    measured: bool
    file: str
    git_commit: str = ""
    date: str = ""


@dataclass(frozen=True)
class Item:
    id: str  # "clamp_smem/full/mirror"
    task: str  # "kernel-compass-full-mirror"
    family: str
    condition: str
    order: str
    prompt: str
    prompt_sha256: str
    options: tuple[Option, ...]
    answer: str  # the letter of the measured winner in this order
    runtimes_ms: dict  # letter -> measured time of that option (two-step mode only)
    key: KeyInfo

    def letter_of(self, rewrite: str) -> str:
        for o in self.options:
            if o.rewrite == rewrite:
                return o.letter
        raise KeyError(rewrite)

    def to_json(self) -> dict:
        return asdict(self)

    @staticmethod
    def from_json(d: dict) -> "Item":
        return Item(
            **{
                **d,
                "options": tuple(Option(**o) for o in d["options"]),
                "key": KeyInfo(**d["key"]),
            }
        )


def write_jsonl(items: Iterable[Item], path: Path) -> None:
    """Atomic: a killed export never leaves half a file."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name, suffix=".tmp")
    with os.fdopen(fd, "w") as f:
        for it in items:
            f.write(json.dumps(it.to_json(), sort_keys=True) + "\n")
    os.replace(tmp, path)


def read_jsonl(path: Path) -> list[Item]:
    out = []
    for n, line in enumerate(Path(path).read_text().splitlines(), 1):
        if line.strip():
            try:
                out.append(Item.from_json(json.loads(line)))
            except (ValueError, TypeError, KeyError) as exc:
                raise ValueError(f"{path}:{n}: not an item record ({exc})") from None
    return out
