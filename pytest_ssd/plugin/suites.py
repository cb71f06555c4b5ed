"""Which suite a test belongs to: what the ``conftest.py`` above it declares.

``pytest_ssd_suite = "vendor"`` in a suite's conftest.py names the suite of
every test below it; ``pytest_ssd_suite = True`` (``suites/conftest.py``)
makes each folder below it a suite named after the folder (``suites/csd`` is
``csd``).  Each test carries its suite as the property ``ssd.suite``; the
database keeps it, and the report gives each suite's records to the sections
declared for it, wherever the suite ran from.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_ssd.results.record import SUITE_PROPERTY

#: a conftest.py that sets this (a name, or True) makes its folder a pytest-ssd suite
SUITE_FLAG = "pytest_ssd_suite"


def declared(config: pytest.Config) -> dict[Path, str | bool]:
    """conftest folder -> what it declares, for every conftest.py that declares a suite."""
    found: dict[Path, str | bool] = {}
    for plugin in config.pluginmanager.get_plugins():
        flag = getattr(plugin, SUITE_FLAG, None)
        path = getattr(plugin, "__file__", None)
        if path and (flag is True or (isinstance(flag, str) and flag)):
            found[Path(path).resolve().parent] = flag
    return found


def suite_of(path: Path, folders: dict[Path, str | bool]) -> str | None:
    """The suite of the test file at *path*: the nearest declaration above it."""
    below = None
    for folder in path.resolve().parents:
        flag = folders.get(folder)
        if isinstance(flag, str):
            return flag
        if flag is True:
            return (below or folder).name
        below = folder
    return None


def mark(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Give every test its suite (property ``ssd.suite``)."""
    folders = declared(config)
    for item in items:
        suite = suite_of(item.path, folders)
        if suite is not None:
            item.user_properties.append((SUITE_PROPERTY, suite))
