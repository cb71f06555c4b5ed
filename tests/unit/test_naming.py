"""A device's id is what the drive is (host and serial, or host and node name), never its
place among the --dut options."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest

from pytest_ssd.device.identity import DeviceIdentity
from pytest_ssd.device.naming import device_ids, identity_key, recorded_key, safe
from pytest_ssd.errors import ConfigError
from pytest_ssd.session.resume import Resumed
from pytest_ssd.verdict.source import pair_drives
from tests.unit.test_host_settings import LOOP as HOST_LOOP

LOOP = dataclasses.replace(HOST_LOOP, backing_file="/srv/disk.img")
NVME = dataclasses.replace(
    LOOP, path="/dev/nvme0n2", kernel_name="nvme0n2", model="P5", serial="S4XN-00/12"
)
NVME = dataclasses.replace(NVME, transport="nvme", backing_file=None, nsid=2)
SATA = dataclasses.replace(LOOP, path="/dev/sdb", kernel_name="sdb", serial="WD-1234", model="x")


def key(identity: DeviceIdentity, host: str | None = None) -> str:
    return identity_key(identity.as_dict(), host)


def test_a_drive_with_a_serial_is_its_serial_and_a_namespace_its_nsid() -> None:
    assert key(SATA) == "WD-1234"
    assert key(NVME) == "S4XN-00_12-n2", "the '/' a test id cannot hold is an '_'"
    other = dataclasses.replace(NVME, path="/dev/nvme0n1", kernel_name="nvme0n1", nsid=1)
    assert key(other) != key(NVME), "two namespaces of one controller share its serial"
    partition = dataclasses.replace(SATA, path="/dev/sdb2", kernel_name="sdb2", partition=2)
    assert key(partition) == "WD-1234-p2"


def test_a_run_recorded_before_nsid_was_read_takes_it_from_the_kernel_name() -> None:
    recorded = {k: v for k, v in NVME.as_dict().items() if k != "nsid"}
    assert identity_key(recorded) == "S4XN-00_12-n2"


def test_without_a_serial_a_device_is_its_node_name() -> None:
    assert key(LOOP) == "loop3"
    assert key(dataclasses.replace(NVME, serial=None)) == "nvme0n2"
    image = dataclasses.replace(LOOP, path="/srv/images/disk one.img", kind="file")
    assert key(image) == "disk_one.img"


@pytest.mark.parametrize(
    ("host", "expected"),
    [
        ("rig7", "rig7-loop3"),
        ("rig7:22", "rig7-loop3"),  # ssh's own port: the same host as without it
        ("127.0.0.1:2222", "127.0.0.1_2222-loop3"),
        ("[::1]:2200", "1_2200-loop3"),
    ],
)
def test_a_test_hosts_device_is_named_after_its_host_and_port(host: str, expected: str) -> None:
    assert key(LOOP, host) == expected
    assert key(SATA, "127.0.0.1:2222") == "127.0.0.1_2222-WD-1234"


def test_ids_hold_only_what_a_test_id_takes() -> None:
    assert safe("a/b:c[d]e::f g") == "a_b_c_d_e_f_g"
    assert safe("::") == "_"
    for identity in (NVME, SATA, LOOP):
        for host in (None, "h:1", "[fe80::1]:2"):
            found = key(identity, host)
            assert set(found) <= set(
                "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-"
            )


def test_ids_do_not_follow_the_order_of_the_options() -> None:
    a = ("ssh://root@127.0.0.1:2201/dev/loop10", key(LOOP, "127.0.0.1:2201"))
    b = ("ssh://root@127.0.0.1:2202/dev/loop10", key(LOOP, "127.0.0.1:2202"))
    assert device_ids([a, b]) == ["127.0.0.1_2201-loop3", "127.0.0.1_2202-loop3"]
    assert device_ids([b, a]) == ["127.0.0.1_2202-loop3", "127.0.0.1_2201-loop3"]
    assert device_ids([("scratch", None), a, ("scratch:1G", None)]) == [
        "scratch",
        "127.0.0.1_2201-loop3",
        "scratch-2",
    ], "scratch devices have no identity: numbered"


def test_two_devices_that_come_out_the_same_are_refused_in_one_line() -> None:
    named = [("/a/disk.img", "disk.img"), ("/dev/sdb", "WD-1234"), ("/b/disk.img", "disk.img")]
    with pytest.raises(ConfigError) as caught:
        device_ids(named)
    said = str(caught.value)
    assert "--dut=/a/disk.img and --dut=/b/disk.img are both device disk.img" in said
    assert "\n" not in said
    # a run that opens no device (--collect-only) numbers them instead
    assert device_ids(named, opened=False) == ["disk.img", "WD-1234", "disk.img-2"]


def _described(dut_id: str, identity: DeviceIdentity, host: str | None) -> dict[str, Any]:
    return {"id": dut_id, "scratch": False, "identity": identity.as_dict(), "host": host}


def test_baseline_and_resume_pair_by_the_same_key_as_the_ids() -> None:
    described = _described("loop3-2", LOOP, "127.0.0.1:2202")
    assert recorded_key(described) == key(LOOP, "127.0.0.1:2202")
    assert recorded_key({"id": "scratch-2", "scratch": True}) == "scratch-2"
    base = [(recorded_key(_described("x", SATA, None)), "sata"), ("loop3", "loop")]
    assert pair_drives(base, [("loop3", "loop3"), ("WD-1234", "WD-1234")])[0] == {
        "loop3": "loop",
        "WD-1234": "sata",
    }


def test_a_resumed_run_with_position_ids_keeps_them_paired_by_drive(tmp_path: Path) -> None:
    """A run recorded before ids were the drives' own: its devices named loop3 and loop3-2
    (two hosts' loop3) are paired with this session's by host and node, whatever the order."""
    drives = {
        "loop3": _described("loop3", LOOP, "127.0.0.1:2201"),
        "loop3-2": _described("loop3-2", LOOP, "127.0.0.1:2202"),
    }
    resumed = Resumed.keeping("r1", tmp_path, [], tuple(drives), drives)
    assert resumed.ids_by_drive() == {
        "127.0.0.1_2201-loop3": "loop3",
        "127.0.0.1_2202-loop3": "loop3-2",
    }
    twice = {**drives, "loop3-2": _described("loop3-2", LOOP, "127.0.0.1:2201")}
    with pytest.raises(ConfigError, match="recorded loop3 and loop3-2 as one drive"):
        Resumed.keeping("r1", tmp_path, [], tuple(twice), twice).ids_by_drive()
