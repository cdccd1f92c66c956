"""Pytest hooks for the items stage (thin: hands off to a session object in config.stash).

The snapshot tests parametrize over `slip_case` and `prompt_case`, both listed
once per session by plugins.items.build.SnapshotCases for the answer key in use
(`--key`, registered by plugins.score.hooks).
"""
from __future__ import annotations

import functools

import pytest

from plugins.items.build import SnapshotCases

CASES = pytest.StashKey[SnapshotCases]()


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    """--collect-only runs no test, so to syrupy every committed snapshot reads as unused: it
    exited 1 and advised --snapshot-update, which would delete them all. Nothing is compared in
    such a session, so unused-snapshot detection is off there."""
    if config.getoption("collectonly", False) and hasattr(config.option, "disable_unused_snapshots"):
        config.option.disable_unused_snapshots = True


@functools.cache
def text_extension() -> type:
    """One readable .txt file per snapshot, so a changed slip or prompt is a plain diff.

    Imported lazily: the GPU machine runs the measure pass without syrupy."""
    from syrupy.extensions.single_file import SingleFileSnapshotExtension, WriteMode

    class TextSnapshot(SingleFileSnapshotExtension):
        _write_mode = WriteMode.TEXT
        file_extension = "txt"

    return TextSnapshot


def _cases(config: pytest.Config) -> SnapshotCases:
    """Loaded on first use, so sessions without snapshot tests never render prompts."""
    if CASES not in config.stash:
        key = config.getoption("st_key", default=None)  # None: plugins.items.keys.resolve_key chooses
        # Every set, whatever --set says: a snapshot belongs to its family, and a
        # set left out would read to syrupy as snapshots gone unused.
        config.stash[CASES] = SnapshotCases.load(config.rootpath, key, config.getoption("families_root", default="families"), sets=None)
    return config.stash[CASES]


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    for name in set(SnapshotCases.ARGNAMES) & set(metafunc.fixturenames):
        values, ids = _cases(metafunc.config).cases(name)
        metafunc.parametrize(name, values, ids=ids)


@pytest.fixture(scope="session")
def snapshot_cases(pytestconfig: pytest.Config) -> SnapshotCases:
    return _cases(pytestconfig)


@pytest.fixture
def text_snapshot(snapshot):
    return snapshot.use_extension(text_extension())
