"""``--dut=ssh://[user@]host[:port]/dev/...``: parsed, or one line saying what is wrong."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from pytest_ssd.device.dut import dut_spec
from pytest_ssd.errors import ConfigError
from pytest_ssd.machine.address import HostAddress, is_host_address, parse_address


def test_user_host_port_and_path_come_apart() -> None:
    found = parse_address("ssh://root@127.0.0.1:2222/dev/nvme0n1")
    assert found == HostAddress(host="127.0.0.1", path="/dev/nvme0n1", user="root", port=2222)
    assert found.destination == "root@127.0.0.1"
    assert found.label == "127.0.0.1:2222"


def test_user_and_port_are_optional() -> None:
    found = parse_address("ssh://lab-host-3.example/dev/disk/by-id/nvme-X")
    assert (found.destination, found.port, found.label) == (
        "lab-host-3.example",
        None,
        "lab-host-3.example",
    )
    assert found.path == "/dev/disk/by-id/nvme-X"
    assert is_host_address("ssh://h/dev/sda") and not is_host_address("/dev/sda")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("ssh://host", "the device path must start with /dev/"),
        ("ssh://host/tmp/file", "the device path must start with /dev/"),
        ("ssh:///dev/sda", "give ssh://[user@]host[:port]/dev/DEVICE"),
        ("ssh://host:99999/dev/sda", "the port is not a number from 1 to 65535"),
        ("ssh://host:x/dev/sda", "the port is not a number from 1 to 65535"),
        ("ssh://u:secret@host/dev/sda", "no password in the address"),
        ("ssh://-oProxyCommand=x/dev/sda", "is not a host name"),
        ("ssh://-l@host/dev/sda", "is not a user name"),
        ("ssh://host/dev/sda?x=1", "the device path must start with /dev/"),
    ],
)
def test_a_bad_address_is_one_line_naming_the_option(text: str, message: str) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_address(text)
    assert str(caught.value).startswith(f"--dut={text}: ")
    assert message in str(caught.value)
    assert "\n" not in str(caught.value)


def test_dut_names_a_test_host_and_its_device_there() -> None:
    spec = dut_spec("ssh://root@127.0.0.1:2222/dev/loop3")
    assert spec.address == HostAddress(host="127.0.0.1", path="/dev/loop3", user="root", port=2222)
    assert spec.path == Path("/dev/loop3")
    with pytest.raises(argparse.ArgumentTypeError, match="the port is not a number"):
        dut_spec("ssh://root@127.0.0.1:0/dev/loop3")
