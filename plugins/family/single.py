"""One family's CPU checks, selected and summed up per check (`make family NAME=x`).

Why: a family author wants every CPU check of their new directory (format,
compile for every target, reference, emulated gate, prompts and snapshots) in
one run, and one line per check saying what passed and what to fix, without
the rest of the suite's tests.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence

# Test argument names whose values carry a family (family stage and items stage).
FAMILY_ARGS = ("discovered", "family", "candidate", "compile_case", "group_member", "prompt_case", "slip_case")


def belongs(value: Any, name: str) -> bool:
    """Whether a test parameter belongs to family `name`: a Family or Discovered, a
    tuple starting with one, or a case with a `family` field (prompts, slips)."""
    if isinstance(value, tuple):
        return any(belongs(v, name) for v in value)
    if getattr(value, "family", None) == name and isinstance(getattr(value, "family"), str):
        return True
    return hasattr(value, "path") and hasattr(value, "name") and getattr(value, "name") == name and (
        hasattr(value, "rewrites") or hasattr(value, "error"))


def split_items(items: Sequence[Any], name: str) -> tuple[list[Any], list[Any]]:
    """(kept, deselected): kept are the tests parametrized with family `name`."""
    kept, dropped = [], []
    for item in items:
        params = getattr(getattr(item, "callspec", None), "params", {})
        ok = any(belongs(params[a], name) for a in FAMILY_ARGS if a in params)
        (kept if ok else dropped).append(item)
    return kept, dropped


def check_name(nodeid: str) -> str:
    """`tests/family/test_families.py::test_compiles[x/start/sm_90]` -> `test_compiles`."""
    return nodeid.split("::")[-1].split("[")[0]


def first_line(message: str) -> str:
    """The line of a failure that says what is wrong: an `E ` line of a traceback, else the first real one."""
    lines = [ln.strip() for ln in message.splitlines() if ln.strip() and not ln.startswith("[gw")]
    errors = [ln[1:].strip() for ln in lines if ln.startswith("E ")]
    return (errors or lines or [""])[0]


@dataclass
class CheckTally:
    passed: int = 0
    failed: int = 0
    skipped: int = 0
    first_problem: str = ""


# What to do when a check fails, for the checks a family author meets.
HINTS = {
    "test_family_is_valid": "fix family.toml or the file named above (families/README.md)",
    "test_compiles": "fix the code at the line named above; for local memory that is the point of a candidate, declare allow_local = true",
    "test_entry_points_match_manifest": "declare every kernel parameter plainly",
    "test_reference_matches_naive": "make reference() and naive() agree in reference.py",
    "test_gate_shapes_give_nondegenerate_references": "choose inputs whose outputs are not all zero",
    "test_timing_size_is_sized_for_the_gpu": "resize [sizes.timing] (families/README.md, 'Sizes')",
    "test_gate_emulated": "fix the candidate's logic or its launch plan",
    "test_prompt_snapshot": "new or changed prompt: rerun with --snapshot-update, then review the .txt files in git",
    "test_slip_snapshot": "rerun with --snapshot-update, then review the .txt files in git",
}


@dataclass
class FamilySummary:
    """Per-check counts of one family's run, fed with test reports, read at the end."""

    name: str
    checks: dict[str, CheckTally] = field(default_factory=dict)

    def add(self, nodeid: str, when: str, outcome: str, message: str) -> None:
        tally = self.checks.setdefault(check_name(nodeid), CheckTally())
        if outcome == "failed":
            tally.failed += 1
            if not tally.first_problem:
                tally.first_problem = first_line(message)
        elif when == "call" and outcome == "passed":
            tally.passed += 1
        elif outcome == "skipped":
            tally.skipped += 1

    def lines(self) -> list[str]:
        if not self.checks:
            return [f"{self.name}: no check ran (is it a directory under the families root?)"]
        width = max(len(c) for c in self.checks)
        out = []
        for check, t in sorted(self.checks.items()):
            state = "FAIL" if t.failed else ("ok  " if t.passed else "skip")
            out.append(f"{state} {check:<{width}}  {t.passed} passed, {t.failed} failed, {t.skipped} skipped")
            if t.failed:
                out.append(f"       {t.first_problem[:300]}")
                if check in HINTS:
                    out.append(f"       what to do: {HINTS[check]}")
        failed = sum(t.failed for t in self.checks.values())
        out.append(f"{self.name}: {'every CPU check passed' if not failed else f'{failed} failing case(s)'}")
        return out


@dataclass(eq=False)  # registered as a pytest plugin, so it must stay hashable
class FamilyRun:
    """`pytest --family NAME`: keeps only that family's tests and prints the per-check summary."""

    name: str
    summary: FamilySummary = field(init=False)

    def __post_init__(self) -> None:
        self.summary = FamilySummary(self.name)

    def deselect(self, config: Any, items: list[Any]) -> None:
        """Called last in collection (after syrupy has seen every test, so it deletes no snapshot)."""
        kept, dropped = split_items(items, self.name)
        if dropped:
            config.hook.pytest_deselected(items=dropped)
            items[:] = kept

    # pytest calls these by name once the object is registered as a plugin.
    def pytest_runtest_logreport(self, report: Any) -> None:
        self.summary.add(report.nodeid, report.when, report.outcome, report.longreprtext if report.outcome != "passed" else "")

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        terminalreporter.write_sep("=", f"SparkTrace family {self.name}: one line per check")
        for line in self.summary.lines():
            terminalreporter.write_line(line)
