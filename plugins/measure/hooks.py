"""Pytest hooks for the measure stage (thin: hands off to a session object in config.stash)."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

from plugins.measure.session import MeasureState, positive_int, state_from_options

MEASURE = pytest.StashKey[MeasureState]()


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("sparktrace measure")
    group.addoption("--measure-out", default=None, metavar="DIR", help="where keys (DIR/families/<name>/measurements/), slips (DIR/slips/<gpu>/) and summaries go; default: the repo")
    group.addoption("--measure-replace", action="store_true", help="replace <gpu>.json instead of writing <gpu>.<timestamp>.json beside it")
    group.addoption("--measure-families", default=None, metavar="a,b", help="measure only these families")
    group.addoption("--measure-blocks", type=positive_int, default=5, help="randomized blocks per family (default 5)")
    group.addoption("--no-ncu", action="store_true", help="skip the Nsight Compute slip")
    group.addoption("--measure-budget-s", type=float, default=None, metavar="S",
                    help="seconds from the start of the session after which no slip is started (keys always are); default: no limit")


def pytest_configure(config: pytest.Config) -> None:
    config.stash[MEASURE] = state_from_options(Path(config.rootpath), config.getoption, sys.argv, hasattr(config, "workerinput"))


@pytest.fixture(scope="session")
def measure_session(pytestconfig: pytest.Config):
    session, reason = pytestconfig.stash[MEASURE].session()
    return session if session is not None else pytest.skip(reason)


@pytest.fixture(scope="session")
def cupy_executor(pytestconfig: pytest.Config):
    executor, reason = pytestconfig.stash[MEASURE].executor()
    return executor if executor is not None else pytest.skip(reason)


def pytest_terminal_summary(terminalreporter, config: pytest.Config) -> None:
    if lines := config.stash[MEASURE].summary_lines():
        terminalreporter.write_sep("=", "SparkTrace measure")
        terminalreporter.write_line("\n".join(lines))
