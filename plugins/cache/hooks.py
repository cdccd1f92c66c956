"""Pytest hooks for the work report: `--work-report` or SPARKTRACE_WORK_REPORT=1.

Workers hand their counts to the controller through xdist's workeroutput; the
controller sees every test's durations in its own log reports.
"""
from __future__ import annotations

import json
import os
from collections import Counter

import pytest

from plugins.cache.work import COUNTS, merge, report_lines, stage_rows

ENV = "SPARKTRACE_WORK_REPORT"


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.getgroup("sparktrace work").addoption(
        "--work-report", action="store_true", default=False,
        help=f"end with the session's work counts (compiles, nvdisasm, emulator builds, references) "
             f"and test seconds per stage (also {ENV}=1)")


def _wanted(config: pytest.Config) -> bool:
    return bool(config.getoption("work_report") or os.environ.get(ENV, "") not in ("", "0"))


class WorkReport:
    def __init__(self) -> None:
        self.counts: Counter[str] = Counter()
        self.durations: list[tuple[str, float]] = []

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        self.durations.append((report.nodeid, report.duration))

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node, error) -> None:
        merge(self.counts, json.loads(node.workeroutput.get("sparktrace_work", "{}")))

    def pytest_terminal_summary(self, terminalreporter) -> None:
        merge(self.counts, COUNTS)  # the controller's own work (collection, -n 0)
        terminalreporter.write_sep("=", "SparkTrace work")
        for line in report_lines(self.counts, stage_rows(self.durations)):
            terminalreporter.write_line(line)


def pytest_configure(config: pytest.Config) -> None:
    if _wanted(config) and not hasattr(config, "workerinput"):
        config.pluginmanager.register(WorkReport(), "sparktrace-work-report")


def pytest_sessionfinish(session: pytest.Session) -> None:
    if hasattr(session.config, "workerinput"):
        session.config.workeroutput["sparktrace_work"] = json.dumps(dict(COUNTS))
