"""Declared features against a datasheet, on golden nvme-cli 2.3 output of QEMU's controller."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from pytest_ssd.device.nvme import (
    NvmeInfo,
    SmartCounters,
    parse_fw_log,
    parse_id_ctrl,
    parse_id_ns,
    parse_smart_counters,
)
from pytest_ssd.errors import DatasheetError, ParseError
from pytest_ssd.methods.features.checks import (
    CHECKS,
    TITLES,
    Written,
    data_units,
    endurance,
)
from pytest_ssd.specs.features import Features
from pytest_ssd.specs.load import load_datasheet
from pytest_ssd.specs.model import Datasheet

GOLDEN = Path(__file__).parents[1] / "golden"
SHEET = Path(__file__).parents[2] / "datasheets" / "qemu-nvme-ctrl.toml"
MiB = 1 << 20


@pytest.fixture(scope="module")
def info() -> NvmeInfo:
    return NvmeInfo(
        parse_id_ctrl((GOLDEN / "nvme" / "id-ctrl.json").read_text()),
        parse_id_ns((GOLDEN / "nvme" / "id-ns.json").read_text()),
    )


@pytest.fixture(scope="module")
def sheet() -> Datasheet:
    return load_datasheet(SHEET)


def stating(sheet: Datasheet, **changes: object) -> Datasheet:
    assert sheet.features is not None
    return replace(sheet, features=replace(sheet.features, **changes))


def test_the_controller_declares_what_the_features_read(info: NvmeInfo) -> None:
    ctrl = info.controller
    assert (ctrl.nn, ctrl.frmw, ctrl.lpa) == (256, 3, 7)
    assert (ctrl.firmware_slots, ctrl.slot1_read_only) == (1, True)
    assert not ctrl.telemetry, "LPA 7: bits 0-2, no telemetry (bit 3)"


def test_the_shipped_qemu_sheet_states_only_features(sheet: Datasheet) -> None:
    assert sheet.specs == () and sheet.features is not None
    assert sheet.features.lba_formats is not None and (4096, 8) in sheet.features.lba_formats
    assert sheet.features.sanitize == ()


@pytest.mark.parametrize("name", list(CHECKS))
def test_the_qemu_sheet_is_met_by_qemus_controller(
    name: str, sheet: Datasheet, info: NvmeInfo
) -> None:
    verdict = CHECKS[name](sheet, info)
    assert verdict.status == "met", verdict.message
    assert verdict.check == TITLES[name] and verdict.message.startswith(f"{verdict.check}: ")
    assert verdict.contract == "pass" and "\n" not in verdict.message


WRONG = [
    (
        "lba-formats",
        {"lba_formats": ((512, 0), (520, 0))},
        "LBA formats: 520 stated but not offered",
    ),
    ("namespaces", {"namespaces": 128}, "namespaces: NN 256 (the datasheet states 128)"),
    ("volatile-write-cache", {"volatile_write_cache": False}, "present (VWC 0x7)"),
    ("format", {"format_crypto_erase": True}, "format_crypto_erase False (stated True)"),
    ("sanitize", {"sanitize": ("block-erase",)}, "sanitize: none (SANICAP 0x0)"),
    ("firmware-slots", {"firmware_slots": 2}, "firmware_slots 1 (stated 2) (FRMW 0x3)"),
    ("power-states", {"power_states_w": (8.25,)}, "PS0 25 W (stated 8.25 W)"),
    ("power-states", {"power_states_w": (25.0, 10.0)}, "1 declared (PS0 25 W), 2 stated"),
    (
        "temperature-thresholds",
        {"critical_temperature_c": 85},
        "critical 99.85 °C (CCTEMP 373 K; stated 85 °C)",
    ),
]


@pytest.mark.parametrize(("name", "changes", "said"), WRONG)
def test_a_wrong_statement_is_not_met_in_one_line(
    name: str, changes: dict[str, object], said: str, sheet: Datasheet, info: NvmeInfo
) -> None:
    verdict = CHECKS[name](stating(sheet, **changes), info)
    assert (verdict.status, verdict.contract) == ("not met", "fail")
    assert said in verdict.message and "\n" not in verdict.message


def test_a_capacity_not_sold_is_not_met(sheet: Datasheet, info: NvmeInfo) -> None:
    other = replace(sheet, drive=replace(sheet.drive, capacities_gb=(960.0,)))
    verdict = CHECKS["capacity"](other, info)
    assert verdict.status == "not met"
    assert "namespace 2.147 GB: not within 1 % of the stated 960 GB" in verdict.message


@pytest.mark.parametrize("name", [n for n in CHECKS if n != "capacity"])
def test_a_feature_not_stated_is_not_judged(name: str, sheet: Datasheet, info: NvmeInfo) -> None:
    verdict = CHECKS[name](replace(sheet, features=Features()), info)
    assert verdict.status == "not judged"
    assert "not judged: the datasheet states no" in verdict.message


def test_golden_fw_log_and_smart_counters() -> None:
    log = parse_fw_log((GOLDEN / "nvme" / "fw-log.json").read_text())
    assert (log.active_slot, log.revisions) == (1, {1: "1.0....."})
    counters = parse_smart_counters((GOLDEN / "health" / "nvme-smart-log.json").read_text())
    assert counters == SmartCounters(data_units_written=0, data_units_read=1, percent_used=0)
    with pytest.raises(ParseError, match="'data_units_written' is missing"):
        parse_smart_counters('{"data_units_read": "1", "percent_used": 0}')


def counted(before: int, after: int, used: int = 0) -> Written:
    return Written(64 * MiB, SmartCounters(before, 0, 0), SmartCounters(after, 0, used))


def test_data_units_count_the_hosts_writes() -> None:
    # 64 MiB is 131.072 units of 512,000 B: the counter rises by 131 or 132 (rounded up)
    assert data_units(counted(10, 142)).status == "met"
    assert data_units(counted(10, 141)).status == "met"
    wrong = data_units(counted(10, 10))
    assert wrong.status == "not met"
    assert (
        "counted 0 data units (0 B) for 67,108,864 B written (expected 131..133)" in wrong.message
    )


def test_endurance_against_the_drives_wear_estimate(sheet: Datasheet) -> None:
    rated = stating(sheet, endurance_tbw=1.0)  # 1 TB
    tb = 10**12 // 512_000  # data units in 1 TB
    young = endurance(rated, SmartCounters(tb // 1000, 0, 0), 64 * MiB)
    assert young.status == "not judged" and "percent_used counts whole percent" in young.message
    worn = endurance(rated, SmartCounters(tb // 10, 0, 50), 64 * MiB)
    assert worn.status == "not met" and "says 50 % used: wearing faster than rated" in worn.message
    fine = endurance(rated, SmartCounters(tb // 10, 0, 10), 64 * MiB)
    assert fine.status == "met" and "(10 % of it;" in fine.message
    dwpd = stating(sheet, endurance_dwpd=1.0, warranty_years=5.0)
    assert "1 DWPD over 5 years" in endurance(dwpd, SmartCounters(0, 0, 0), 0).message
    assert endurance(sheet, SmartCounters(0, 0, 0), 0).status == "not judged"


FEATURES_BAD = [
    ("namespaces = -1", "features.namespaces", "must be an integer 0..4,294,967,295"),
    ('sanitize = ["crypto"]', "features.sanitize", "must be a list of crypto-erase"),
    ("lba_formats = [500]", "features.lba_formats", "a power of two of at least 512"),
    ('lba_formats = ["4k"]', "features.lba_formats", "sizes such as 512, 4096 or '4096+8'"),
    ("power_states_w = []", "features.power_states_w", "a list of 1..32 powers in W"),
    ("endurance_dwpd = 1", "features.endurance_dwpd", "give endurance_dwpd with warranty_years"),
    ("volatile_write_cache = 1", "features.volatile_write_cache", "must be true or false"),
    ("colour = 1", "features.colour", "unknown key: use lba_formats"),
]


@pytest.mark.parametrize(("line", "where", "problem"), FEATURES_BAD)
def test_a_bad_features_table_is_one_line(
    tmp_path: Path, line: str, where: str, problem: str
) -> None:
    path = tmp_path / "sheet.toml"
    path.write_text(f'[drive]\nname = "X"\nmodel = "X"\ncapacity_gb = 1\n\n[features]\n{line}\n')
    with pytest.raises(DatasheetError) as caught:
        load_datasheet(path)
    assert (caught.value.where, "\n" in str(caught.value)) == (where, False)
    assert problem in caught.value.problem


def test_a_sheet_needs_speed_lines_or_features(tmp_path: Path) -> None:
    path = tmp_path / "sheet.toml"
    path.write_text('[drive]\nname = "X"\nmodel = "X"\ncapacity_gb = 1\n')
    with pytest.raises(
        DatasheetError, match=r"at least one \[\[specs\]\] line \(or \[features\]\)"
    ):
        load_datasheet(path)
