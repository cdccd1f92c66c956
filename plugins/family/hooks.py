"""Pytest hooks for the family stage: every directory under families/ becomes test cases."""
from __future__ import annotations

from pathlib import Path

import pytest

from plugins.family.catalog import Catalog, ResourceLog
from plugins.family.manifest import DEFAULT_SET, SET_CHOICES, selected_sets

CATALOG = pytest.StashKey[Catalog]()


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("sparktrace families")
    group.addoption("--families-root", default="families", help="directory whose subdirectories are families (default: families)")
    group.addoption("--set", dest="st_set", default=DEFAULT_SET, choices=SET_CHOICES,
                    help=f"which family set every stage works on: {', '.join(SET_CHOICES)} (default: {DEFAULT_SET})")
    group.addoption("--resources-out", default="reports/resources.json", help="where ptxas resources of compiled candidates are merged")


def pytest_configure(config: pytest.Config) -> None:
    sets = selected_sets(config.getoption("st_set"))
    config.stash[CATALOG] = Catalog.load(Path(config.rootpath, config.getoption("families_root")), sets)
    if not hasattr(config, "workerinput"):  # only the controller writes the merged file
        log = ResourceLog(Path(config.rootpath, config.getoption("resources_out")),
                          families_root=Path(config.rootpath, config.getoption("families_root")))
        config.pluginmanager.register(log, "sparktrace-resources")


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    for name in ("discovered", "family", "candidate", "compile_case"):
        if name in metafunc.fixturenames and (cases := metafunc.config.stash[CATALOG].cases(name)):
            metafunc.parametrize(name, cases[0], ids=cases[1])


@pytest.fixture(scope="session")
def catalog(pytestconfig: pytest.Config) -> Catalog:
    return pytestconfig.stash[CATALOG]
