"""The exit code of a scoring run: did the run complete, whatever the score?

Why: `pytest --model` fails a test for every item the model misses, so pytest
exits 1 on every real run, and `make run` read that as a crash. A miss is the
result, not a failure of the command. pytest's exit 1 also means "a test
errored", so the junit score sheet decides: the run completed when every
failed testcase is a scored miss (outcome `wrong`, `no-letter` or `truncated`),
nothing errored, and no item was omitted for want of an answer (a dead or
refusing server). An item omitted because its prompt cannot fit the model's
window is the model's limit, not a broken run: counted, and the run completes. `pytest
--model` itself keeps pytest's exit codes; `python -m plugins.score run`
(what `make run` calls) maps them with `run_exit_code`.
"""
from __future__ import annotations

import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

MISSES = ("wrong", "no-letter", "truncated")
# pytest's exit codes (pytest.ExitCode, restated: logic modules do not import pytest)
OK, TESTS_FAILED, INTERRUPTED, INTERNAL_ERROR, USAGE_ERROR, NO_TESTS = 0, 1, 2, 3, 4, 5


@dataclass(frozen=True)
class SheetCounts:
    """What a junit score sheet holds: scored items, misses among them, and what broke."""

    scored: int = 0
    misses: int = 0
    omitted: int = 0  # no model turn: the run is incomplete
    broken: tuple[str, ...] = ()  # testcases that errored or failed without a scored outcome
    omitted_context: int = 0  # the prompt could not fit the model's window
    truncated: int = 0  # scored misses cut off by their token budget (counted in misses too)


@dataclass(frozen=True)
class RunVerdict:
    code: int
    reason: str


def read_sheet(path: Path) -> SheetCounts:
    """Count a junit sheet's testcases by what happened to them. Raises ValueError if unreadable."""
    try:
        root = ET.parse(path).getroot()
    except (OSError, ET.ParseError) as exc:
        raise ValueError(f"{path}: cannot read the junit score sheet ({exc})") from None
    scored = misses = omitted = omitted_context = truncated = 0
    broken: list[str] = []
    for tc in root.iter("testcase"):
        name = f"{tc.get('classname', '')}::{tc.get('name', '')}"
        props = {p.get("name"): p.get("value") for p in tc.iter("property")}
        kinds = {c.tag: c for c in tc if c.tag in ("failure", "error", "skipped")}
        outcome = props.get("outcome")
        if "error" in kinds:
            broken.append(f"{name}: error: {kinds['error'].get('message', '')}")
        elif "failure" in kinds:
            if outcome in MISSES:
                scored += 1
                misses += 1
                truncated += outcome == "truncated"
            else:
                broken.append(f"{name}: {kinds['failure'].get('message', '')}")
        elif "skipped" in kinds:
            if (kinds["skipped"].get("message") or "").startswith("omitted"):
                if props.get("omitted_for") == "context":
                    omitted_context += 1
                else:
                    omitted += 1
        elif outcome is not None:
            scored += 1
    return SheetCounts(scored, misses, omitted, tuple(broken), omitted_context, truncated)


def run_exit_code(pytest_code: int, sheet: Path | None) -> RunVerdict:
    """0 when the run completed (misses included); non-zero, with the reason, when something broke."""
    if pytest_code not in (OK, TESTS_FAILED):
        names = {INTERRUPTED: "interrupted (a fatal model error stops the run)", INTERNAL_ERROR: "an internal error",
                 USAGE_ERROR: "a usage error", NO_TESTS: "no test was collected"}
        return RunVerdict(pytest_code, f"pytest exited {pytest_code}: {names.get(pytest_code, 'an error')}")
    if sheet is None or not Path(sheet).is_file():
        if pytest_code == OK:
            return RunVerdict(OK, "pytest passed (no score sheet to read)")
        return RunVerdict(TESTS_FAILED, "pytest exited 1 and wrote no score sheet: cannot tell misses from errors")
    try:
        counts = read_sheet(Path(sheet))
    except ValueError as exc:
        return RunVerdict(TESTS_FAILED, str(exc))
    if counts.broken:
        return RunVerdict(TESTS_FAILED, f"{len(counts.broken)} test(s) broke, not scored: {counts.broken[0]}")
    if counts.omitted:
        return RunVerdict(TESTS_FAILED, f"{counts.omitted} item(s) omitted (the server did not answer); "
                                        "the run is incomplete: run it again to ask them")
    if pytest_code == TESTS_FAILED and not counts.misses:
        return RunVerdict(TESTS_FAILED, "pytest exited 1 but the score sheet shows no miss and no error")
    extra = (f", {counts.truncated} of them truncated by the token budget" if counts.truncated else "") + (
        f"; {counts.omitted_context} omitted: the prompt does not fit the model's context window" if counts.omitted_context else "")
    return RunVerdict(OK, f"run completed: {counts.scored} item(s) scored, {counts.misses} missed (the score, not an error){extra}")
