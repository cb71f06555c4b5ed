"""Added purge methods: which of them may purge a device on a test host."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_ssd.device.identity import DeviceIdentity
from pytest_ssd.errors import PurgeError
from pytest_ssd.machine.machine import LOCAL, Machine
from pytest_ssd.purge.builtin import BUILTIN
from pytest_ssd.purge.extra import capabilities_of, pick, run
from pytest_ssd.purge.methods import Capabilities
from tests.fake_machine import FakeMachine

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


class Declared:
    """A method of today's contract: its capabilities declared, the machine always given."""

    name = "declared"
    capabilities = Capabilities(local=False, hosts=True, tools=("vendor-tool",))

    def unsupported(self, identity: DeviceIdentity) -> str | None:
        return None

    def purge(self, identity: DeviceIdentity, artifacts: Path, machine: Machine) -> str:
        return f"ran on {machine.where}"


def test_older_methods_keep_the_machine_parameter_convention() -> None:
    assert capabilities_of(Anywhere()).hosts and not capabilities_of(Here()).hosts
    assert capabilities_of(Declared()) == Declared.capabilities


def test_builtin_methods_are_registered_with_their_capabilities() -> None:
    by_name = {p.name: p.capabilities for p in BUILTIN}
    assert by_name["sanitize-block"] == Capabilities(hosts=True, tools=("nvme",))
    assert by_name["discard"].hosts and by_name["ata-secure-erase"].tools == ("hdparm",)
    assert not by_name["punch-hole"].hosts, "a file's size and holes are this process's"


def test_a_host_is_offered_only_methods_whose_capabilities_reach_it() -> None:
    host, both = FakeMachine("lab7"), (Here(), Anywhere(), Declared())
    assert pick(DISK, both, None, LOCAL).name == "here"
    assert pick(DISK, both, None, host).name == "anywhere"
    assert pick(DISK, (Here(), Declared()), None, host).name == "declared"
    # then pytest-ssd's own, registered the same way
    assert pick(DISK, (Here(),), None, host).name == "discard"
    with pytest.raises(PurgeError, match="--ssd-purge=here cannot purge /dev/sdb on ssh root@lab7"):
        pick(DISK, both, "here", host)
    with pytest.raises(PurgeError, match="--ssd-purge=declared cannot purge /dev/sdb: it purges"):
        pick(DISK, both, "declared", LOCAL)
    with pytest.raises(PurgeError, match="--ssd-purge=punch-hole cannot purge /dev/sdb on ssh"):
        pick(DISK, both, "punch-hole", host)


def test_the_method_gets_the_devices_machine_after_the_guard(tmp_path: Path) -> None:
    seen: list[str] = []

    def view(path: str) -> None:
        seen.append(path)
        raise PurgeError("the guard refused")

    with pytest.raises(PurgeError, match="the guard refused"):
        run(Anywhere(), DISK, tmp_path, FakeMachine("lab7"), view)  # type: ignore[arg-type]
    assert seen == ["/dev/sdb"], "the guard asked the host's facts first"
    assert not list(tmp_path.iterdir()), "nothing ran"
