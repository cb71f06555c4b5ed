"""Drive class guess, --dut-class, applicability and the indirection unit (METHOD §5, §6)."""

from __future__ import annotations

import argparse
import dataclasses
import json
from pathlib import Path

import pytest

from pytest_ssd.device.drive_class import (
    ALL_CLASSES,
    classify,
    dut_class,
    guess,
    indirection_unit,
    skip_reason,
)
from pytest_ssd.device.identity import DeviceIdentity
from pytest_ssd.device.nvme import NvmeInfo, parse_id_ctrl, parse_id_ns
from pytest_ssd.methods.esd import ESD_CLASSES
from pytest_ssd.methods.wsat import WSAT_CLASSES

GOLDEN = Path(__file__).resolve().parents[1] / "golden" / "nvme"
BASE = DeviceIdentity(
    path="/dev/nvme0n1",
    kind="block",
    kernel_name="nvme0n1",
    size_bytes=960_197_124_096,
    logical_block_size=512,
    physical_block_size=512,
    rotational=False,
    discard=True,
    model="SAMSUNG MZQLB960HAJR-00007",
    serial="S1",
    firmware="EDA5202Q",
    transport="nvme",
)


def drive(model: str, size: int) -> DeviceIdentity:
    return dataclasses.replace(BASE, model=model, size_bytes=size)


@pytest.mark.parametrize(
    ("model", "size", "expected"),
    [
        ("SAMSUNG MZQLB960HAJR-00007", 960_197_124_096, "essd-ri"),  # PM983 960 GB
        ("INTEL SSDPE2KE016T8", 1_600_321_314_816, "essd-mu"),  # P4610 1.6 TB
        ("INTEL SSDPE21K375GA", 375_083_606_016, "essd-wi"),  # Optane P4800X 375 GB
        ("Micron_7450_MTFDKCC3T8TFR", 3_840_755_982_336, "essd-ri"),
        ("Samsung SSD 970 PRO 1TB", 1_024_209_543_168, "cssd"),
        ("SAMSUNG MZQL2", 1_234_567_890_432, "essd-ri"),  # enterprise, no capacity point
    ],
)
def test_guess(model: str, size: int, expected: str) -> None:
    found = guess(drive(model, size))
    assert found.name == expected, found.reason
    assert not found.given and not found.scratch and model in found.reason


def test_given_class_wins_and_scratch_always_applies() -> None:
    given = classify(drive("Samsung SSD 970 PRO 1TB", 10**12), False, "essd-wi")
    assert given.given and given.name == "essd-wi" and "--dut-class" in given.describe()
    scratch = classify(BASE, True, None)
    assert scratch.scratch and all(scratch.applies(c) for c in (ESD_CLASSES, WSAT_CLASSES))
    assert dut_class("essd-mu") == "essd-mu"
    with pytest.raises(argparse.ArgumentTypeError, match="use one of cssd, essd-ri"):
        dut_class("enterprise")


def test_applicability_table_of_seed_000() -> None:
    def runs(name: str) -> list[str]:
        one = classify(BASE, False, name)  # type: ignore[arg-type]
        suites = {"csd": ALL_CLASSES, "esd": ESD_CLASSES, "wsat": WSAT_CLASSES}
        return [s for s, classes in suites.items() if skip_reason(one, classes, s) is None]

    assert runs("cssd") == ["csd"]
    assert runs("essd-ri") == runs("essd-mu") == ["csd", "esd"]
    assert runs("essd-wi") == ["csd", "esd", "wsat"]
    reason = skip_reason(
        classify(drive("Samsung SSD 970 PRO 1TB", 10**12), False, None), ESD_CLASSES, "suites/esd"
    )
    assert reason is not None and reason.startswith("suites/esd applies to essd-ri, essd-mu")
    assert "cssd (consumer; guessed:" in reason and "--dut-class" in reason


def _nvme(npwg: int, nsfeat: int) -> NvmeInfo:
    ns = json.loads((GOLDEN / "id-ns.json").read_text())
    ns.update(npwg=npwg, nsfeat=nsfeat)
    ctrl = parse_id_ctrl((GOLDEN / "id-ctrl.json").read_text())
    return NvmeInfo(ctrl, parse_id_ns(json.dumps(ns)))


def _sysfs(tmp_path: Path, optimal: int) -> Path:
    queue = tmp_path / "block" / "nvme0n1" / "queue"
    queue.mkdir(parents=True)
    (queue / "optimal_io_size").write_text(f"{optimal}\n")
    return tmp_path


def test_indirection_unit_sources(tmp_path: Path) -> None:
    golden = dataclasses.replace(BASE, nvme=_nvme(0, 0x14))
    assert indirection_unit(golden, _sysfs(tmp_path, 0)).bytes is None, "golden: not exposed"
    npwg = dataclasses.replace(BASE, nvme=_nvme(31, 0x10))
    iu = indirection_unit(npwg, tmp_path)
    assert (iu.bytes, iu.source) == (32 * 512, "NVMe NPWG 31")
    assert iu.skips_write(4096) is not None and iu.skips_write(16384) is None
    ignored = dataclasses.replace(BASE, nvme=_nvme(31, 0))  # NSFEAT: NPWG not valid
    assert indirection_unit(ignored, tmp_path).bytes is None
    other = tmp_path / "other"
    block = indirection_unit(dataclasses.replace(BASE, nvme=None), _sysfs(other, 65536))
    assert (block.bytes, block.source) == (65536, "queue/optimal_io_size")
    small = indirection_unit(BASE, _sysfs(tmp_path / "small", 4096))
    assert small.bytes == 4096 and small.skips_write(512) is None, "4 KiB IUs skip nothing"
