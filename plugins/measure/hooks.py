"""Pytest hooks for the measure stage (thin: hands off to a session object in config.stash)."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

from plugins.measure.targets import device_of, unsupported
from plugins.measure.session import REFUSED, UNSUPPORTED, MeasureState, budget_seconds, positive_int, state_from_options

MEASURE = pytest.StashKey[MeasureState]()


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("sparktrace measure")
    group.addoption("--measure-out", default=None, metavar="DIR", help="where keys (DIR/families/<name>/measurements/), slips (DIR/slips/<gpu>/) and summaries go; default: the repo")
    group.addoption("--measure-replace", action="store_true", help="replace <gpu>.json instead of writing <gpu>.<timestamp>.json beside it")
    group.addoption("--measure-families", default=None, metavar="a,b", help="measure only these families")
    group.addoption("--measure-blocks", type=positive_int, default=5, help="randomized blocks per family (default 5)")
    group.addoption("--no-ncu", action="store_true", help="skip the Nsight Compute slip")
    group.addoption("--measure-budget-s", type=budget_seconds, default=None, metavar="S",
                    help="seconds from the start of the session by which slips and the repeat must end (keys always run); "
                         "0: no slips and no repeat; default: no limit")
    group.addoption("--measure-slips-only", action="store_true",
                    help="take only the slips (no key is measured): those an earlier pass skipped (--measure-previous), "
                         "or every selected family's that the repository lacks")
    group.addoption("--measure-previous", default=None, metavar="DIR",
                    help="an earlier pass's output folder: slips-only skips the slips it captured and orders by its keys")
    group.addoption("--measure-repeat", action="store_true",
                    help="after the slips, while the budget lasts, time every keyed family again in a new order (<gpu>.repeat.json)")
    group.addoption("--measure-ncu-unusable", default="", metavar="REASON",
                    help="the preflight's reason why ncu cannot profile here: every slip is skipped with it, ncu is not started")
    group.addoption("--measure-ncu-metrics", default="all", choices=("all", "required"),
                    help="required: the preflight saw the optional metrics refused, so every slip asks only for the required two")
    group.addoption("--measure-watchdog-s", type=budget_seconds, default=None, metavar="S",
                    help="a family whose gate and timing run longer than S is recorded as hung and the process exits "
                         "with status 10 (the script measures the rest in a new process); default 60; 0: no watchdog")
    group.addoption("--measure-rerun", action="store_true",
                    help="this process is the script's rerun of the same --measure-out: wrong variants the earlier process "
                         "saw kill the CUDA context in the gate are rejected without running them again")
    group.addoption("--measure-allow-unknown-commit", action="store_true",
                    help="measure even though no git commit can be named (no .git and no $SPARKTRACE_GIT_COMMIT); recorded in every key")


def pytest_configure(config: pytest.Config) -> None:
    config.stash[MEASURE] = state_from_options(Path(config.rootpath), config.getoption, sys.argv, hasattr(config, "workerinput"))


@pytest.fixture(scope="session")
def measure_session(pytestconfig: pytest.Config):
    session, reason = pytestconfig.stash[MEASURE].session()
    if session is None and reason.startswith(UNSUPPORTED):
        pytest.exit(reason, returncode=2)
    if session is None and reason.startswith(REFUSED):
        pytest.fail(reason, pytrace=False)
    return session if session is not None else pytest.skip(reason)


@pytest.fixture(scope="session")
def cupy_executor(pytestconfig: pytest.Config):
    executor, reason = pytestconfig.stash[MEASURE].executor()
    if executor is not None and (why := unsupported(device_of(executor))):
        pytest.exit(f"{UNSUPPORTED}{why}", returncode=2)
    return executor if executor is not None else pytest.skip(reason)


def pytest_terminal_summary(terminalreporter, config: pytest.Config) -> None:
    if lines := config.stash[MEASURE].summary_lines():
        terminalreporter.write_sep("=", "SparkTrace measure")
        terminalreporter.write_line("\n".join(lines))
