"""The session's view of families/: discovered once, turned into test cases.

Why: every stage's tests parametrize over the same directories, and a broken
family must show up as exactly one failing case while the rest still run.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

from plugins.atomicio import write_json_atomic
from plugins.family.manifest import Candidate, Discovered, Family, discover


@dataclass(frozen=True)
class Catalog:
    root: Path
    found: tuple[Discovered, ...]

    @classmethod
    def load(cls, root: Path, sets: tuple[str, ...] | None = None) -> "Catalog":
        return cls(Path(root), discover(root, sets) if Path(root).is_dir() else ())

    @property
    def families(self) -> tuple[Family, ...]:
        return tuple(d.family for d in self.found if d.family is not None)

    def cases(self, argname: str) -> tuple[list[Any], list[str]] | None:
        """Values and ids for a test argument this catalog knows, else None."""
        if argname == "discovered":
            return list(self.found), [d.name for d in self.found]
        if argname == "family":
            return list(self.families), [f.name for f in self.families]
        if argname == "candidate":
            pairs = [(f, c) for f in self.families for c in f.all_candidates]
            return pairs, [f"{f.name}/{c.id}" for f, c in pairs]
        if argname == "compile_case":
            triples = [(f, c, a) for f in self.families for c in f.all_candidates for a in f.targets]
            return triples, [f"{f.name}/{c.id}/{a}" for f, c, a in triples]
        return None


@dataclass(eq=False)  # registered as a pytest plugin, so it must stay hashable
class ResourceLog:
    """ptxas resources reported by compile tests, merged into one JSON file.

    Tests attach their numbers as user properties, which xdist carries to the
    controller; the controller writes the file once at the end.
    """

    path: Path
    rows: dict[str, Any] = field(default_factory=dict)

    def add(self, properties: Iterable[tuple[str, Any]]) -> None:
        for name, value in properties:
            if name == "ptxas_resources":
                self.rows.update(json.loads(value))

    # pytest calls these by name once the log is registered as a plugin.
    def pytest_runtest_logreport(self, report: Any) -> None:
        if report.when == "call" and report.passed:
            self.add(report.user_properties)

    def pytest_sessionfinish(self) -> None:
        self.write()

    def write(self) -> None:
        if not self.rows:
            return
        merged = json.loads(self.path.read_text()) if self.path.is_file() else {}
        merged.update(self.rows)
        write_json_atomic(self.path, dict(sorted(merged.items())))


def candidate_label(fam: Family, cand: Candidate) -> str:
    return f"{fam.name}/{cand.id}"
