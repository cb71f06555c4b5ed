"""NVMe APST (0x0c) and power state (0x02) from golden nvme-cli 2.3 get-feature output."""

from __future__ import annotations

import struct

import pytest

from pytest_ssd.errors import ParseError
from pytest_ssd.host.changes import FeatureWrite, change_from_dict
from pytest_ssd.host.nvme_features import APST, ApstSetting, parse_feature, power_state
from tests.unit.host_fakes import GOLDEN, KernelIo


def _golden(name: str) -> str:
    return (GOLDEN / name).read_text()


def test_apst_on_with_its_transition_table() -> None:
    feature = parse_feature(_golden("get-feature-apst.txt"), APST)
    assert (feature.value, feature.name) == (1, "Autonomous Power State Transition")
    assert len(feature.data) == 256
    entries = struct.unpack("<32Q", feature.data)
    # PS0-PS2 go to PS3 after 100 ms idle, PS3 to PS4 after 2 s: ITPT << 8 | ITPS << 3
    assert [(e >> 3 & 0x1F, e >> 8 & 0xFFFFFF) for e in entries[:5]] == [
        (3, 100),
        (3, 100),
        (3, 100),
        (4, 2000),
        (0, 0),
    ]


def test_a_zero_value_prints_without_0x() -> None:
    assert parse_feature(_golden("get-feature-apst-off.txt"), APST).value == 0


def test_output_of_another_feature_is_refused() -> None:
    with pytest.raises(ParseError, match="get-feature 0x0c: unexpected output 'get-feature:0x04"):
        parse_feature(_golden("get-feature-temp.txt"), APST)


@pytest.mark.parametrize(
    ("golden", "shown"),
    [("get-feature-power.txt", "PS0"), ("get-feature-power-ps3.txt", "PS3, workload hint 1")],
)
def test_power_state(golden: str, shown: str) -> None:
    reading = power_state(KernelIo(features={2: golden}), "/dev/nvme0n1", "nvme0n1")
    assert (reading.value, reading.recommended, reading.device) == (shown, None, "nvme0n1")


def test_a_controller_without_the_feature_is_not_available_here() -> None:
    apst = ApstSetting("/dev/nvme0n1", "nvme0n1", KernelIo())
    reading = apst.read()
    assert reading.value is None and reading.recommended == "off"
    assert reading.source.endswith("(exit 22): the controller does not support it")
    assert apst.changes() == []


def test_apst_off_and_back_sends_the_table_both_ways() -> None:
    io = KernelIo(features={APST: "get-feature-apst.txt"})
    apst = ApstSetting("/dev/nvme0n1", "nvme0n1", io)
    assert apst.read().value == "on" and apst.read().differs
    (change,) = apst.changes()
    assert isinstance(change, FeatureWrite)
    assert (change.feature, change.original, change.target) == (APST, 1, 0)
    change.apply(io)
    assert apst.read().value == "off" and apst.changes() == []
    change.restore(io)
    assert apst.read().value == "on"
    table = parse_feature(_golden("get-feature-apst.txt"), APST).data
    assert io.sent == [table, table]
    sets = [c for c in io.nvme_calls if c[0] == "set-feature"]
    assert sets[0][:4] == ["set-feature", "/dev/nvme0n1", "--feature-id=12", "--value=0"]
    assert sets[1][3] == "--value=1" and "--data-len=256" in sets[1]
    assert change_from_dict(change.as_dict()) == change, "survives the restore file"
