"""Health sampling: nvme smart-log / smartctl / hwmon parsing, the sampler, throttling signs."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from pytest_ssd.device.identity import DeviceIdentity
from pytest_ssd.errors import ParseError
from pytest_ssd.health import (
    HealthSample,
    Sampler,
    find_source,
    parse_smart_log,
    summarize,
)
from pytest_ssd.health.sources import Hwmon, hwmon_of, parse_smartctl
from pytest_ssd.machine.machine import LOCAL, Machine
from pytest_ssd.proc.runner import Completed
from pytest_ssd.report.transitions import _step_line
from tests.fake_machine import FakeMachine

GOLDEN = Path(__file__).resolve().parents[1] / "golden" / "health"


def test_qemu_smart_log_is_50_degrees_without_sensors() -> None:
    sample = parse_smart_log((GOLDEN / "nvme-smart-log.json").read_text(), 1.0)
    assert sample.temperature_c == pytest.approx(49.85)  # 323 K
    assert sample.sensors_c == () and sample.critical_warning == 0
    assert sample.thermal_transitions == 0 and sample.warning_minutes == 0


def test_hot_smart_log_has_sensors_warning_and_transitions() -> None:
    sample = parse_smart_log((GOLDEN / "nvme-smart-log-hot.json").read_text(), 1.0)
    assert sample.temperature_c == pytest.approx(78.85)
    assert sample.sensors_c == pytest.approx((78.85, 65.85))
    assert sample.critical_warning == 2 and sample.thermal_transitions == 5
    assert sample.warning_minutes == 3


@pytest.mark.parametrize("text", ["not json", "[]", '{"critical_warning": 0}'])
def test_bad_smart_log_is_a_parse_error(text: str) -> None:
    with pytest.raises(ParseError, match="nvme smart-log"):
        parse_smart_log(text, 0.0)


def test_smartctl_reports_the_current_temperature() -> None:
    sample = parse_smartctl((GOLDEN / "smartctl-sata.json").read_text(), 2.0)
    assert sample.temperature_c == 34.0 and sample.t == 2.0
    assert parse_smartctl('{"smartctl": {"exit_status": 0}}', 0.0).temperature_c is None


def _identity(**changes: object) -> DeviceIdentity:
    base = DeviceIdentity(
        path="/dev/sda",
        kind="block",
        kernel_name="sda",
        size_bytes=2**30,
        logical_block_size=512,
        physical_block_size=512,
        rotational=False,
        discard=True,
        model="X",
        serial="S",
        firmware="F",
        transport="sata",
    )
    return dataclasses.replace(base, **changes)  # type: ignore[arg-type]


def test_hwmon_of_a_sata_disk_reads_millidegrees_temp1_first(tmp_path: Path) -> None:
    folder = tmp_path / "block" / "sda" / "device" / "hwmon" / "hwmon3"
    folder.mkdir(parents=True)
    (folder / "temp10_input").write_text("30000\n")
    (folder / "temp1_input").write_text("41500\n")
    (folder / "temp2_input").write_text("38000\n")
    found = hwmon_of(_identity(), LOCAL, str(tmp_path))
    assert found is not None and found.folder == str(folder)
    source, what = find_source(_identity(), LOCAL, str(tmp_path))
    assert isinstance(source, Hwmon) and what == f"hwmon {folder}"
    sample = source.read()
    assert sample.temperature_c == 41.5 and sample.sensors_c == (38.0, 30.0)


@pytest.mark.parametrize(
    ("changes", "reason"),
    [
        ({"transport": "loop", "kernel_name": "loop0"}, "a loop device has no temperature sensor"),
        ({"kind": "file", "kernel_name": None}, "a regular file has no temperature sensor"),
    ],
)
def test_devices_without_sensors_say_so(changes: dict[str, object], reason: str) -> None:
    assert find_source(_identity(**changes), LOCAL) == (None, reason)


class Fake:
    """A source that warms up by one degree per reading and counts a transition at 43 °C."""

    name = "fake"

    def __init__(self, fail_after: int | None = None) -> None:
        self.reads = 0
        self.fail_after = fail_after

    def read(self) -> HealthSample:
        self.reads += 1
        if self.fail_after is not None and self.reads > self.fail_after:
            raise ParseError("sensor gone")
        temp = 40.0 + self.reads
        return HealthSample(
            time.time(),
            temp,
            critical_warning=2 if temp >= 44 else 0,
            thermal_transitions=1 if temp >= 43 else 0,
        )


def test_the_sampler_reads_before_during_and_after() -> None:
    fake = Fake()
    with Sampler(fake, 0.02) as sampler:
        time.sleep(0.2)
    assert len(sampler.samples) >= 4 and fake.reads == len(sampler.samples)
    arrays = sampler.arrays()
    assert arrays["t_s"][0] == 0 and (arrays["t_s"][1:] > 0).all()
    assert arrays["temp_c"].tolist() == [41.0 + i for i in range(len(sampler.samples))]
    summary = summarize(sampler, warning_c=42.0)
    assert summary["temp_min_c"] == 41.0 and summary["samples"] == len(sampler.samples)
    assert len(summary["throttling"]) == 3  # warning temperature, warning bit, transitions


def test_a_failing_source_stops_sampling_and_says_why() -> None:
    with Sampler(Fake(fail_after=2), 0.01) as sampler:
        time.sleep(0.1)
    assert len(sampler.samples) == 2 and sampler.error == "fake: sensor gone"
    summary = summarize(sampler)
    assert summary["error"] == "fake: sensor gone" and summary["throttling"] == []


def test_no_source_no_thread_and_the_reason() -> None:
    with Sampler(None, 1.0, "a loop device has no temperature sensor") as sampler:
        pass
    assert not sampler.active and sampler.samples == []
    assert summarize(sampler) == {"source": None, "note": "a loop device has no temperature sensor"}


def test_a_transition_step_shows_its_temperature_range_and_throttling() -> None:
    step = {"text": "SEQ fill", "seconds": 12.0, "kernel": None, "fio_written": 1 << 30}
    assert _step_line(step) == "SEQ fill: 12.0 s, fio wrote 1.0 GiB"
    hot = {"temp_min_c": 41.0, "temp_max_c": 45.5, "throttling": ["3 thermal-management x"]}
    assert _step_line({**step, "health": hot}).endswith(
        " — 41.0–45.5 °C; throttling: 3 thermal-management x"
    )


class HostAt(FakeMachine):
    """A test host whose /sys is *root* (the commands really run, here); no smartctl there."""

    def __init__(self, root: Path) -> None:
        super().__init__("lab1", here=True, missing=frozenset({"smartctl"}))
        self.root = root

    def run(self, argv: Sequence[str], **kwargs: Any) -> Completed:
        return super().run([a.replace("/sys/", f"{self.root}/") for a in argv], **kwargs)

    glob = Machine.glob  # a shell's glob there, as over SSH

    def read(self, path: str) -> str | None:
        done = self.run(["cat", "--", path], timeout=5)
        return done.stdout if done.returncode == 0 else None


def test_a_sata_disk_on_a_test_host_reads_its_hwmon_there(tmp_path: Path) -> None:
    folder = tmp_path / "block" / "sda" / "device" / "hwmon" / "hwmon3"
    folder.mkdir(parents=True)
    (folder / "temp2_input").write_text("38000\n")
    (folder / "temp1_input").write_text("41500\n")
    source, what = find_source(_identity(), HostAt(tmp_path))
    assert isinstance(source, Hwmon) and what == f"hwmon {folder} on ssh root@lab1"
    sample = source.read()
    assert sample.temperature_c == 41.5 and sample.sensors_c == (38.0,)
    # without a sensor, smartctl there; without smartctl, the reason
    source, what = find_source(_identity(kernel_name="sdb"), HostAt(tmp_path))
    assert source is None
    assert what == (
        "no hwmon sensor and smartctl is not installed on ssh root@lab1"
        " (apt-get install smartmontools)"
    )
