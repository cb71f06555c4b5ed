"""Added purge methods: which of them may purge a device on a test host."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_ssd.device.identity import DeviceIdentity
from pytest_ssd.errors import PurgeError
from pytest_ssd.machine.machine import Machine
from pytest_ssd.purge.extra import pick, reaches_hosts, run
from tests.unit.test_remote_host import Named

DISK = DeviceIdentity(
    "/dev/sdb", "block", "sdb", 1 << 30, 512, 512, False, True, "M", "S", "F", "sata"
)


class Here:
    name = "here"

    def unsupported(self, identity: DeviceIdentity) -> str | None:
        return None

    def purge(self, identity: DeviceIdentity, artifacts: Path) -> str:
        return "ran here"


class Anywhere:
    name = "anywhere"

    def unsupported(self, identity: DeviceIdentity) -> str | None:
        return None

    def purge(self, identity: DeviceIdentity, artifacts: Path, machine: Machine) -> str:
        return f"ran on {machine.where or 'this machine'}"


def test_a_method_reaches_hosts_when_its_purge_takes_a_machine() -> None:
    assert reaches_hosts(Anywhere()) and not reaches_hosts(Here())


def test_a_host_is_offered_only_methods_that_take_a_machine() -> None:
    host, both = Named("lab7"), (Here(), Anywhere())
    assert getattr(pick(DISK, both, None), "name", None) == "here"
    assert getattr(pick(DISK, both, None, host), "name", None) == "anywhere"
    assert pick(DISK, (Here(),), None, host) is None, "pytest-ssd's own method then"
    with pytest.raises(PurgeError, match="--ssd-purge=here cannot purge /dev/sdb on ssh root@lab7"):
        pick(DISK, both, "here", host)


def test_the_method_gets_the_devices_machine_after_the_guard(tmp_path: Path) -> None:
    seen: list[str] = []

    def view(path: str) -> None:
        seen.append(path)
        raise PurgeError("the guard refused")

    with pytest.raises(PurgeError, match="the guard refused"):
        run(Anywhere(), DISK, tmp_path, Named("lab7"), view)  # type: ignore[arg-type]
    assert seen == ["/dev/sdb"], "the guard asked the host's facts first"
    assert not list(tmp_path.iterdir()), "nothing ran"
