"""Pytest hooks for the family stage: every directory under families/ becomes test cases."""
from __future__ import annotations

from pathlib import Path

import pytest

from plugins.family import pch
from plugins.family.catalog import FAMILY_ARGS, Catalog, ResourceLog
from plugins.family.manifest import DEFAULT_SET, SET_CHOICES, selected_sets
from plugins.family.single import FamilyRun

CATALOG = pytest.StashKey[Catalog]()
PCH_OWNER = pytest.StashKey[bool]()


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("sparktrace families")
    group.addoption("--families-root", default="families", help="directory whose subdirectories are families (default: families)")
    group.addoption("--set", dest="st_set", default=DEFAULT_SET, choices=SET_CHOICES,
                    help=f"which family set every stage works on: {', '.join(SET_CHOICES)} (default: {DEFAULT_SET})")
    group.addoption("--family", dest="st_family", metavar="NAME",
                    help="run only family NAME's checks (any set) and print one summary line per check; make family NAME=...")
    group.addoption("--resources-out", default="reports/resources.json", help="where ptxas resources of compiled candidates are merged")


def pytest_configure(config: pytest.Config) -> None:
    config.stash[PCH_OWNER] = pch.claim()
    sets = selected_sets(config.getoption("st_set"))
    root, one = Path(config.rootpath, config.getoption("families_root")), config.getoption("st_family")
    try:
        config.stash[CATALOG] = Catalog.load(root, sets) if not one else Catalog.load(root).only(one)
    except ValueError as exc:
        raise pytest.UsageError(str(exc)) from None
    config.pluginmanager.register(WorkOrder(config.stash[CATALOG]), "sparktrace-work-order")
    if one:
        config.pluginmanager.register(FamilyRun(one), "sparktrace-family-run")
    if not hasattr(config, "workerinput"):  # only the controller writes the merged file
        log = ResourceLog(Path(config.rootpath, config.getoption("resources_out")),
                          families_root=Path(config.rootpath, config.getoption("families_root")))
        config.pluginmanager.register(log, "sparktrace-resources")


@pytest.hookimpl(trylast=True)  # after anything else that might still compile
def pytest_unconfigure(config: pytest.Config) -> None:
    if config.stash.get(PCH_OWNER, False):  # an xdist worker may never reach atexit
        pch.release()


@pytest.hookimpl(trylast=True)  # after syrupy has recorded the whole collection: it must not see deselected snapshots as unused
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if (run := config.pluginmanager.get_plugin("sparktrace-family-run")) is not None:
        run.deselect(config, items)


class WorkOrder:
    """Each family's tests together, in discovery order, the rest first (Catalog.rank says why).
    First of the collection hooks, so that what reorders or deselects by position (--sw, --lf's
    ordering, pytest's fixture grouping) sees the order the session runs."""

    def __init__(self, catalog: Catalog) -> None:
        self.catalog = catalog

    @pytest.hookimpl(tryfirst=True)
    def pytest_collection_modifyitems(self, items: list[pytest.Item]) -> None:
        items.sort(key=lambda item: self.catalog.rank(getattr(getattr(item, "callspec", None), "params", {})))


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    for name in FAMILY_ARGS:
        if name in metafunc.fixturenames and (cases := metafunc.config.stash[CATALOG].cases(name)):
            if cases[0] or name == "group_member":  # no data group selected: one "empty parameter set" skip
                metafunc.parametrize(name, cases[0], ids=cases[1])


@pytest.fixture(scope="session")
def catalog(pytestconfig: pytest.Config) -> Catalog:
    return pytestconfig.stash[CATALOG]
