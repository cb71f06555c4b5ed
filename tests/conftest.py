"""Shared fixtures of pytest-ssd's own tests: real loop devices, always detached.

A test keeps to itself (``tests/own.py`` says how): it signals, counts or removes only the
processes, loop devices and folders it started, found by the tag every test gives its
processes (:func:`test_tag`), its test host's tag and its own ``tmp_path``; never by name.
"""

from __future__ import annotations

import os
import subprocess
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from pytest_ssd.statedir import STATE_DIR_ENV
from tests.own import TAG_ENV, new_tag
from tests.pgserver import Postgres, local_postgres

pytest_plugins = ["pytester"]

LoopFactory = Callable[..., Path]
#: where matplotlib keeps its configuration and caches (the font list)
MPL_ENV = "MPLCONFIGDIR"


def _losetup(*args: str) -> str:
    done = subprocess.run(
        ["losetup", *args], capture_output=True, text=True, timeout=30, check=True
    )
    return done.stdout.strip()


#: fixtures that need root and a block device
DEVICE_FIXTURES = frozenset({"loop_device", "module_loop_device", "postgres"})


#: modules whose module-scoped set-up is dear (the QEMU guest boots in 30 s, under TCG): run
#: first, so that under ``-n N --dist worksteal`` they stay on one worker (a worker steals
#: from the end of another's queue) and set up once, not on every worker that got a part
FIRST = ("e2e/test_nvme_guest.py",)


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--own-pass",
        choices=("rest", "alone"),
        help="./run tests' two passes: the tests marked alone (they need a quiet machine),"
        " or the rest; with -m too (default: all)",
    )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark ``device`` every test that needs root or a device: the end-to-end tests and those
    using a device fixture.  ``./run fast`` runs the rest (``-m "not device"``).  The
    :data:`FIRST` modules' tests go first.  ``--own-pass`` keeps one of ``./run tests``'
    passes (beside the user's own ``-m``)."""
    chosen = config.getoption("--own-pass")
    if chosen:
        alone = chosen == "alone"
        picked = {i: (i.get_closest_marker("alone") is not None) == alone for i in items}
        config.hook.pytest_deselected(items=[i for i in items if not picked[i]])
        items[:] = [i for i in items if picked[i]]
    here = Path(__file__).parent
    e2e = here / "e2e"
    for item in items:
        fixtures = set(getattr(item, "fixturenames", ()))
        if item.path.is_relative_to(e2e) or fixtures & DEVICE_FIXTURES:
            item.add_marker(pytest.mark.device)
    first = {here / name for name in FIRST}
    items.sort(key=lambda item: item.path not in first)  # stable: the rest keep their order


class Loops:
    """Attaches sparse files in *folder* as direct-I/O loop devices: ``loops(size_mib=64)``;
    ``sector_size=4096`` makes a 4 KiB-sector device (its logical block size)."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.attached: list[str] = []

    def __call__(
        self, size_mib: int = 64, name: str = "backing.img", sector_size: int = 512
    ) -> Path:
        backing = self.folder / f"{len(self.attached)}-{name}"
        with backing.open("wb") as fh:
            fh.truncate(size_mib * 1024 * 1024)
        sector = f"--sector-size={sector_size}"
        dev = _losetup("--find", "--show", "--direct-io=on", sector, str(backing))
        self.attached.append(dev)
        return Path(dev)

    def detach(self) -> None:
        for dev in self.attached:
            subprocess.run(["umount", "-l", dev], check=False, capture_output=True, timeout=30)
            subprocess.run(["losetup", "-d", dev], check=False, capture_output=True, timeout=30)


def _loops(folder: Path) -> Iterator[LoopFactory]:
    if os.geteuid() != 0:
        pytest.skip("loop devices need root")
    loops = Loops(folder)
    try:
        yield loops
    finally:
        loops.detach()


@pytest.fixture
def loop_device(tmp_path: Path) -> Iterator[LoopFactory]:
    """Factory: ``loop_device(size_mib=64)`` attaches a sparse file as a direct-I/O loop device
    (:class:`Loops`). Every device it attaches is detached at teardown, also when the test fails.
    """
    yield from _loops(tmp_path)


@pytest.fixture(scope="module")
def module_loop_device(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LoopFactory]:
    """:func:`loop_device` for a module's tests: what one set-up serves them all (a reference
    run several tests compare with), detached after the module's last test."""
    yield from _loops(tmp_path_factory.mktemp("loops"))


@pytest.fixture(autouse=True)
def test_tag(monkeypatch: pytest.MonkeyPatch) -> str:
    """The test's own tag: every process it starts, and every process those start, carries
    it in its environment (``tests.own.tagged(tag)`` finds them, and no other)."""
    tag = new_tag()
    monkeypatch.setenv(TAG_ENV, tag)
    return tag


def _in_environment(name: str, folder: Path) -> Iterator[Path]:
    """*folder* in the environment variable *name* while the session runs, then as it was."""
    saved = os.environ.get(name)
    os.environ[name] = str(folder)
    yield folder
    if saved is None:
        os.environ.pop(name, None)
    else:
        os.environ[name] = saved


@pytest.fixture(scope="session", autouse=True)
def private_state_dir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """pytest-ssd's machine state (tune journal, scratch registry) of this test process.

    Every run these tests start inherits it, so they never touch /var/lib/pytest-ssd and
    parallel test processes keep out of each other's state.
    """
    folder = tmp_path_factory.mktemp("ssd-state")
    folder.chmod(0o700)
    yield from _in_environment(STATE_DIR_ENV, folder)


@pytest.fixture(scope="session", autouse=True)
def matplotlib_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """One matplotlib folder (its font list) for this test process and every run it starts.

    pytester gives each run a HOME of its own, where matplotlib built its font list again
    before the report's first graph (0.8 s a run that draws, more on a busy machine).
    """
    yield from _in_environment(
        MPL_ENV, Path(os.environ.get(MPL_ENV) or tmp_path_factory.mktemp("matplotlib"))
    )


@pytest.fixture(scope="session")
def postgres() -> Iterator[Postgres]:
    """A real PostgreSQL server (as the postgres user, socket only), one per test process."""
    with local_postgres() as server:
        yield server


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.device)])
def db_target(request: pytest.FixtureRequest, tmp_path: Path) -> Path | str:
    """A new, empty results database on each backend: a file, or a database on the server."""
    if request.param == "sqlite":
        return tmp_path / "results.sqlite"
    server: Postgres = request.getfixturevalue("postgres")
    return server.create_database(f"t_{uuid.uuid4().hex[:16]}")
