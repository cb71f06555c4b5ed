"""One site class over any machine: what it says of a device comes from its machine."""

from __future__ import annotations

import fcntl
import os
from dataclasses import dataclass
from pathlib import Path

from pytest_ssd.machine.address import parse_address
from pytest_ssd.machine.locks import HereLocks
from pytest_ssd.machine.machines import Machines, Reached
from pytest_ssd.site import Sites
from tests.fake_machine import FakeMachine


@dataclass
class Reaching(FakeMachine):
    """A test host that says how it is reached."""

    @property
    def reached_as(self) -> str | None:
        return f"root@{self.name} port 22"


@dataclass
class FakeMachines(Machines):
    """This machine, and every host the fake one named *name*."""

    fake: Reached | None = None

    def of(self, address: object) -> Reached:
        if address is None:
            return self.here
        if self.fake is None:
            self.fake = Reached(Reaching("lab7"), HereLocks())
        return self.fake


def _free(path: Path) -> bool:
    fd = os.open(path, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    finally:
        os.close(fd)
    return True


def test_a_site_names_a_device_as_its_machine_names_itself() -> None:
    sites = Sites(machines=FakeMachines())
    here, there = sites.of(None), sites.of(parse_address("ssh://lab7/dev/sdb"))
    assert (here.labelled("disk"), there.labelled("disk")) == ("disk", "disk on lab7")
    assert (here.described("4 GiB"), there.described("4 GiB")) == (
        "4 GiB",
        "4 GiB on root@lab7 port 22",
    )
    assert here.located(Path("/dev/sdb")) == "/dev/sdb"
    assert there.located(Path("/dev/sdb")) == "/dev/sdb on ssh root@lab7"
    assert there.named_again("ssh://root@lab7/dev/sdb", "ssh://lab7/dev/sdb") == (
        ": the same host named twice"
    )
    assert there.named_again("ssh://lab7/dev/sdb", "ssh://lab7/dev/sdb") == ""
    assert here.named_again("/dev/sdb", "/dev/sdb") == ""


def test_this_machines_locks_go_with_the_machines_as_a_hosts_do(tmp_path: Path) -> None:
    """One holder a machine, here as on a host: every site of this machine locks through
    it, and closing the session's machines lets every lock go at once."""
    one, two = tmp_path / "one.img", tmp_path / "two.img"
    for disk in (one, two):
        disk.write_bytes(bytes(4096))
    sites = Sites()
    for disk in (one, two):
        site = sites.of(None)  # a site each, one holder
        st = disk.stat()
        site.lock(disk, ("file", st.st_dev, st.st_ino))
    assert not _free(one) and not _free(two)
    assert sites.close() == []
    assert _free(one) and _free(two)
    assert sites.close() == [], "a second close does nothing"
