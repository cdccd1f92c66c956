"""Shared test helpers: a scratch copy of the project for end-to-end pytester runs."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    """conftest.py, pytest.ini, models.toml and plugins/ copied into pytester's
    folder, with an empty tests/ for the test files a case needs."""
    for name in ("conftest.py", "pytest.ini", "models.toml"):
        shutil.copy(ROOT / name, pytester.path / name)
    shutil.copytree(ROOT / "plugins", pytester.path / "plugins", ignore=shutil.ignore_patterns("__pycache__"))
    (pytester.path / "tests").mkdir()
    return pytester
