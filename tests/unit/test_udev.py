"""udev's view of block devices and the kernel's device events, on recorded data.

``udevadm info`` and ``udevadm monitor --kernel`` output recorded on this machine
(no udevd) and one of a machine whose udevd processed an NVMe namespace
(tests/golden/udev/README.md); the session's watch judged on them with a fake source.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from pytest_ssd.device.udev import events, info
from pytest_ssd.device.udev.events import DeviceEvents, Watched
from pytest_ssd.errors import ToolError
from pytest_ssd.fio.job import FioJob
from pytest_ssd.fio.watch import stall_watch
from pytest_ssd.machine import uevents
from tests.fake_machine import FakeMachine

GOLDEN = Path(__file__).parents[1] / "golden" / "udev"
MIB = 1 << 20


def _golden(name: str) -> str:
    return (GOLDEN / name).read_text()


def test_kernel_events_are_read_as_udevadm_prints_them() -> None:
    found, used = uevents.parse_events(_golden("monitor-loop-attach-resize-detach.txt"))
    text = _golden("monitor-loop-attach-resize-detach.txt")
    assert used == len(text)
    assert [e["ACTION"] for e in found] == ["change"] * 4, "the banner is no event"
    assert [e.get("RESIZE") for e in found] == [None, "1", None, None]
    assert found[3]["DISK_MEDIA_CHANGE"] == "1" and found[0]["DEVNAME"] == "/dev/loop1"
    added, _ = uevents.parse_events(_golden("monitor-loop-add-remove.txt"))
    assert [(e["ACTION"], events.kernel_name(e)) for e in added] == [
        ("add", "loop231"),
        ("remove", "loop231"),
    ]


def test_an_event_still_being_written_waits_for_the_next_read() -> None:
    text = _golden("monitor-loop-add-remove.txt")
    cut = text.index("ACTION=remove") + 5
    found, used = uevents.parse_events("@@ssd:ready\n" + text[:cut])
    assert [e["ACTION"] for e in found] == ["add"]
    rest, _ = uevents.parse_events(("@@ssd:ready\n" + text)[used:])
    assert [e["ACTION"] for e in rest] == ["remove"], "read once, whole"


def _watched(machine: FakeMachine, size: int = 64 * MIB) -> Watched:
    return Watched("loop1", "/dev/loop1", "loop1", size, machine)


@pytest.mark.parametrize(
    ("action", "size", "said"),
    [
        ("remove", None, "loop1 (/dev/loop1 on ssh root@lab7) dropped off the bus (kernel event"),
        ("change", 0, "lost its medium (kernel event 'change' of loop1 at 12:00:00: 0 bytes now"),
        ("change", 96 * MIB, "changed size (kernel event 'change' of loop1 at 12:00:00: 96.0 MiB"),
        ("change", 64 * MIB, None),  # a change of the same size (a media-change flag): fine
        ("change", None, None),  # unreadable: nothing said that is not known
        ("add", 0, None),
    ],
)
def test_an_event_of_a_watched_device_is_judged(action: str, size: int | None, said: str) -> None:
    line = events.judge(_watched(FakeMachine()), {"ACTION": action}, size, "12:00:00")
    assert (line is None) if said is None else (said in (line or "")), line


class Recorded:
    """A source that gives recorded events, once each."""

    def __init__(self, *found: dict[str, str]) -> None:
        self.found = list(found)

    def take(self) -> list[dict[str, str]]:
        found, self.found = self.found, []
        return found

    def close(self) -> None:
        self.found = []


@dataclasses.dataclass
class Sized(FakeMachine):
    """A host whose block devices' sizes are *sectors*."""

    sectors: dict[str, str] = dataclasses.field(default_factory=dict)

    def read(self, path: str) -> str | None:
        name = path.removeprefix("/sys/class/block/").removesuffix("/size")
        return self.sectors.get(name)


def test_the_watch_names_the_device_once_and_stops_its_fio() -> None:
    machine = Sized(sectors={"loop1": str(96 * MIB // 512)})
    resize, _ = uevents.parse_events(_golden("monitor-loop-attach-resize-detach.txt"))
    other = {**resize[1], "DEVNAME": "/dev/loop7", "DEVPATH": "/devices/virtual/block/loop7"}
    said: list[str] = []
    source = Recorded(other, resize[1], resize[2])
    watch = DeviceEvents(
        {(id(machine), "loop1"): _watched(machine)}, [(machine, source)], say=said.append
    )
    fio = stall_watch(machine, [FioJob("w", "rnd", 4096, read_pct=0)], "/dev/loop1", "loop1")
    assert fio is not None and fio() is None, "nothing happened yet"
    line = watch.fault("loop1")
    assert line is not None and "96.0 MiB now, 64.0 MiB when identified" in line
    assert said == [line], "said once, at once: the same device's next event adds nothing"
    assert machine.device_faults == {"loop1": line}
    assert fio() == line, "fio on the device is stopped with the line"
    other_fio = stall_watch(machine, [FioJob("w", "rnd", 4096)], "/dev/loop7", "loop7")
    assert other_fio is not None and other_fio() is None, "another device is not stopped"
    watch.close()
    assert machine.device_faults == {}, "a later session on the machine starts clean"


def test_a_host_without_udevadm_offers_no_events(tmp_path: Path) -> None:
    host = FakeMachine(missing=frozenset({"udevadm"}))
    with pytest.raises(ToolError, match="udevadm is not installed on ssh root@lab7"):
        uevents.start(host, tmp_path)
    notes = events.unoffered([host, FakeMachine(name="lab8")])
    assert len(notes) == 1, "said at session start, for the host without udevadm only"
    watch = events.start([_watched(host)], tmp_path, notes, lambda line: None)
    assert watch.sources == [] and len(notes) == 1, "said once"
    assert notes[0].startswith("ssh root@lab7 offers no device events (udevadm is not installed")
    assert watch.fault("loop1") is None
    watch.close()


def test_udev_info_without_udevd_is_the_kernels_only() -> None:
    (loop, vda) = [
        info.from_record(p, links) for p, links in info.parse_info(_golden("info-no-udevd.txt"))
    ]
    assert loop == info.UdevInfo(None, None, None, (), None, database=False)
    assert vda.controller == "0000:00:02.0" and not vda.database and vda.links == ()


def test_udev_info_of_a_namespace_udevd_processed() -> None:
    ((properties, links),) = info.parse_info(_golden("info-nvme-with-udevd.txt"))
    found = info.from_record(properties, links, "eui.ignored-when-udev-has-it")
    assert found == info.UdevInfo(
        wwn="eui.002538b471b40718",
        serial="S3TNNX0K123456",
        model="SAMSUNG MZVLB512HAJQ-000L7",
        links=(
            "/dev/disk/by-id/nvme-SAMSUNG_MZVLB512HAJQ-000L7_S3TNNX0K123456",
            "/dev/disk/by-id/nvme-eui.002538b471b40718",
        ),
        controller="nvme0",
        database=True,
    )
    # without udevd a namespace's WWN is still its sysfs wwid
    bare = {k: v for k, v in properties.items() if not k.startswith(("ID_", "USEC"))}
    assert info.from_record(bare, [], "eui.002538b471b40718\n").wwn == "eui.002538b471b40718"


@pytest.mark.parametrize(
    ("devpath", "controller"),
    [
        ("/devices/pci0000:00/0000:00:01.0/nvme/nvme3/nvme3n2", "nvme3"),
        ("/devices/pci0000:00/0000:00:17.0/ata1/host0/target0:0:0/0:0:0:0/block/sda", "0:0:0:0"),
        ("/devices/virtual/block/loop1", None),
    ],
)
def test_the_parent_controller_from_the_device_path(devpath: str, controller: str | None) -> None:
    assert info.controller_of(devpath) == controller


def test_what_udev_adds_never_changes_what_pins_a_device() -> None:
    from pytest_ssd.device.identity import DeviceIdentity  # noqa: PLC0415

    ident = DeviceIdentity(
        "/dev/sda", "block", "sda", 1 << 30, 512, 512, False, True, "M", None, None, "scsi"
    )
    udev = info.UdevInfo("naa.5000", "S1", "Other", ("/dev/disk/by-id/ata-M_S1",), "0:0:0:0", True)
    found = info.enrich(ident, udev)
    assert (found.wwn, found.by_id, found.controller) == ("naa.5000", udev.links, "0:0:0:0")
    assert (found.serial, found.model) == (None, "M"), "sysfs's, udevd or not"
    assert found == ident
