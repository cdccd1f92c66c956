"""The session's view of families/: discovered once, turned into test cases.

Why: every stage's tests parametrize over the same directories, and a broken
family must show up as exactly one failing case while the rest still run.
"""
from __future__ import annotations

import json
import tomllib
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, Iterable

from plugins.atomicio import write_json_atomic
from plugins.family.manifest import Candidate, Discovered, Family, discover


# The test arguments a catalog parametrizes (Catalog.cases), each holding a family or starting with one.
FAMILY_ARGS: tuple[str, ...] = ("discovered", "family", "candidate", "compile_case", "group_member")


@dataclass(frozen=True)
class Catalog:
    root: Path
    found: tuple[Discovered, ...]

    @classmethod
    def load(cls, root: Path, sets: tuple[str, ...] | None = None) -> "Catalog":
        return cls(Path(root), discover(root, sets) if Path(root).is_dir() else ())

    def only(self, name: str) -> "Catalog":
        """This catalog cut to the one directory `name`; ValueError naming the choices when there is none."""
        found = tuple(d for d in self.found if d.name == name)
        if not found:
            raise ValueError(f"--family {name}: no family directory {name!r} under {self.root}; "
                             f"have {', '.join(d.name for d in self.found) or 'none'}")
        return Catalog(self.root, found)

    @property
    def families(self) -> tuple[Family, ...]:
        return tuple(d.family for d in self.found if d.family is not None)

    def cases(self, argname: str) -> tuple[list[Any], list[str]] | None:
        """Values and ids for a test argument this catalog knows, else None."""
        if argname == "discovered":
            return list(self.found), [d.name for d in self.found]
        if argname == "family":
            return list(self.families), [f.name for f in self.families]
        if argname == "group_member":  # the members of data groups (diagnose set); may be none
            members = [f for f in self.families if f.group]
            return members, [f.name for f in members]
        if argname == "candidate":
            pairs = [(f, c) for f in self.families for c in f.all_candidates]
            return pairs, [f"{f.name}/{c.id}" for f, c in pairs]
        if argname == "compile_case":
            triples = [(f, c, a) for f in self.families for c in f.all_candidates for a in f.targets]
            return triples, [f"{f.name}/{c.id}/{a}" for f, c, a in triples]
        return None

    def rank(self, params: dict[str, Any]) -> int:
        """Where a test's family comes in discovery order; -1 for a test of no family (or an argument of
        that name holding something else, such as the empty set's NOTSET). Why: sorted by it (stably),
        each family's compile, profile and gate tests sit together, so an xdist worker that takes a
        contiguous run of tests (--dist worksteal) compiles what the other is not compiling: in file
        order, the two halves asked for the same cubins at once and made them twice."""
        for name in FAMILY_ARGS:
            value = params.get(name)
            value = value[0] if isinstance(value, tuple) and value else value  # (family, candidate[, target])
            if isinstance(value, (Family, Discovered)):
                return self._order.get(value.name, -1)
        return -1

    @cached_property
    def _order(self) -> dict[str, int]:
        return {d.name: i for i, d in enumerate(self.found)}


@dataclass(eq=False)  # registered as a pytest plugin, so it must stay hashable
class ResourceLog:
    """ptxas resources reported by compile tests, merged into one JSON file.

    Tests attach their numbers as user properties, which xdist carries to the
    controller; the controller writes the file once at the end. The file is
    generated (gitignored): rewritten whole, keys sorted, and rows of families
    or candidates that no longer exist under `families_root` dropped, so the
    same tree always gives the same file.
    """

    path: Path
    rows: dict[str, Any] = field(default_factory=dict)
    families_root: Path | None = None

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
        try:
            merged = json.loads(self.path.read_text(encoding="utf-8")) if self.path.is_file() else {}
        except ValueError:  # a truncated or hand-edited file: regenerate from this run's rows
            merged = {}
        if not isinstance(merged, dict):
            merged = {}
        merged.update(self.rows)
        declared: dict[Path, frozenset[str]] = {}  # each family.toml read once, not once per row
        merged = {k: v for k, v in merged.items() if self._exists(k, declared)}
        write_json_atomic(self.path, dict(sorted(merged.items())))

    def _exists(self, key: str, declared: dict[Path, frozenset[str]]) -> bool:
        """Whether a `family/candidate/arch/kernel` row still has its family and candidate."""
        if key in self.rows or self.families_root is None:
            return True
        parts = key.split("/")
        if len(parts) != 4:
            return False
        fam_dir = self.families_root / parts[0]
        if fam_dir not in declared:
            declared[fam_dir] = declared_candidates(fam_dir)
        return parts[1] in declared[fam_dir]


def declared_candidates(fam_dir: Path) -> frozenset[str]:
    """The candidate ids family.toml under `fam_dir` declares ("start" among them when it has a
    start), read leniently: none when it is missing or does not parse; a `rewrites` or `wrong` that
    is not a list of tables adds none."""
    try:
        raw = tomllib.loads((fam_dir / "family.toml").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return frozenset()
    tables = [t for key in ("rewrites", "wrong") if isinstance(raw.get(key), list) for t in raw[key]]
    ids = {t["id"] for t in tables if isinstance(t, dict) and isinstance(t.get("id"), str)}
    return frozenset((ids - {"start"}) | ({"start"} if "start" in raw else set()))


def candidate_label(fam: Family, cand: Candidate) -> str:
    return f"{fam.name}/{cand.id}"
