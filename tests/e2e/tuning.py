"""The machine's settings for the tests that tune them: a lock they take turns with, across
workers, and the settings put back as found.

Neither fixture is autouse: a module that imports them (the parity tests) takes the lock only
in the tests that ask for it, not in every test it has.
"""

from __future__ import annotations

import fcntl
import re
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

Reader = Callable[[], dict[Path, str]]


def selected(text: str) -> str:
    """The value a sysfs choice file shows selected (``always [never]`` -> ``never``)."""
    match = re.search(r"\[([^\]]+)\]", text)
    return match.group(1) if match else text.strip()


@pytest.fixture
def one_tuner(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """The machine's settings are one: the tests that tune them take turns, across workers.

    The lock file is in the folder every xdist worker's temporary folder is in.
    """
    with (tmp_path_factory.getbasetemp().parent / "tune-tests.lock").open("w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        yield


@pytest.fixture
def as_found(one_tuner: None) -> Iterator[Callable[..., Reader]]:
    """``as_found(*paths)`` reads them now; at teardown, writes back any that changed."""
    found: dict[Path, str] = {}

    def watch(*paths: Path) -> Reader:
        found.update({p: p.read_text() for p in paths if p.exists()})
        return lambda: {p: p.read_text() for p in found if p.exists()}

    yield watch
    for path, text in found.items():
        if path.exists() and path.read_text() != text:
            path.write_text(selected(text))
