"""The declared-features checks on the ``ssd`` fixture: read, compare, record, fail or skip.

Each verdict is recorded with ``ssd.derive("qualification", ...)`` (part ``features``);
not met fails the test in the verdict's one line, not judged skips it with the reason.
What the drive declares is its identify data as the session read it (``nvme id-ctrl`` and
``id-ns`` on the device's machine), its logs are read now.
"""

from __future__ import annotations

from pathlib import Path
from typing import NoReturn

import pytest

from pytest_ssd.bench import SsdBench
from pytest_ssd.device.nvme import (
    NvmeInfo,
    SmartCounters,
    log_json,
    parse_fw_log,
    parse_smart_counters,
)
from pytest_ssd.fio.job import FioJob
from pytest_ssd.health.sources import without
from pytest_ssd.methods.features import PART
from pytest_ssd.methods.features.checks import (
    CHECKS,
    NOT_JUDGED,
    NOT_MET,
    TITLES,
    FeatureVerdict,
    Written,
    data_units,
    endurance,
)
from pytest_ssd.specs.model import Datasheet

MiB = 1 << 20
#: what the endurance test writes (sequential, from the device's start): quick, full
WRITE_BYTES = {"quick": 64 * MiB, "full": 1024 * MiB}


def record(ssd: SsdBench, verdict: FeatureVerdict) -> None:
    """The verdict as a qualification record (the shared contract's fields)."""
    values = {"part": PART, "check": verdict.check, "verdict": verdict.contract}
    ssd.derive("qualification", {**values, "detail": verdict.message})


def conclude(ssd: SsdBench, verdicts: list[FeatureVerdict]) -> None:
    """Record each verdict; fail on the first not met, else skip on a not judged one."""
    for verdict in verdicts:
        record(ssd, verdict)
    failed = [v.message for v in verdicts if v.status == NOT_MET]
    if failed:
        pytest.fail("; ".join(failed), pytrace=False)
    skipped = [v.message for v in verdicts if v.status == NOT_JUDGED]
    if skipped:
        pytest.skip("; ".join(skipped))


def _refuse(ssd: SsdBench, check: str, why: str) -> NoReturn:
    verdict = FeatureVerdict(check, NOT_JUDGED, f"{check}: not judged: {why}")
    record(ssd, verdict)
    pytest.skip(verdict.message)


def declared(ssd: SsdBench, check: str) -> tuple[Datasheet, NvmeInfo]:
    """The device's datasheet with its ``[features]`` and identify data; the test is
    skipped in one line (and recorded not judged) when either is missing."""
    identity = ssd.dut.identity
    if identity.nvme is None:
        why = without(identity, "NVMe identify data") or f"{identity.path} is not NVMe"
        _refuse(ssd, check, why)
    sheet = ssd.datasheet
    if sheet is None:
        _refuse(ssd, check, f"no datasheet describes {identity.model or identity.path}")
    if sheet.features is None:
        _refuse(ssd, check, f"{sheet.path} states no [features]")
    return sheet, identity.nvme


def check_declared(ssd: SsdBench, name: str) -> FeatureVerdict:
    """The feature *name* (:data:`~.checks.CHECKS`) checked, recorded and concluded."""
    sheet, info = declared(ssd, TITLES[name])
    verdict = CHECKS[name](sheet, info)
    if name == "firmware-slots" and verdict.status != NOT_JUDGED:
        verdict = _with_fw_log(ssd, verdict)
    conclude(ssd, [verdict])
    return verdict


def _with_fw_log(ssd: SsdBench, verdict: FeatureVerdict) -> FeatureVerdict:
    """The firmware log's active slot beside the check; a slot beyond the declared ones is
    not met."""
    info = ssd.dut.identity.nvme
    assert info is not None
    log = parse_fw_log(log_json(ssd.machine, Path(ssd.dut.path), "fw-log", ssd.artifacts))
    slots = info.controller.firmware_slots
    active = log.revisions.get(log.active_slot, "?")
    said = f"{verdict.message}; fw-log: slot {log.active_slot} active ({active})"
    if log.active_slot > slots or any(slot > slots for slot in log.revisions):
        return FeatureVerdict(verdict.check, NOT_MET, f"{said}: beyond the {slots} declared")
    return FeatureVerdict(verdict.check, verdict.status, said)


def smart_counters(ssd: SsdBench) -> SmartCounters:
    """The drive's wear counters now."""
    text = log_json(ssd.machine, Path(ssd.dut.path), "smart-log", ssd.artifacts)
    return parse_smart_counters(text)


def write_job(ssd: SsdBench) -> FioJob:
    """The endurance test's sequential write: the profile's bytes, at most the device."""
    size = min(WRITE_BYTES[ssd.profile.name], ssd.dut.identity.size_bytes) // MiB * MiB
    return FioJob(
        name="features-write", pattern="seq", block_size=MiB, iodepth=8, read_pct=0, size=size
    )


def check_endurance(ssd: SsdBench) -> list[FeatureVerdict]:
    """Write :func:`write_job`, with the SMART log read before and after: the drive counted
    the writes (data units), and its wear estimate keeps within the rated endurance."""
    sheet, _ = declared(ssd, "endurance")
    if sheet.features is None or sheet.features.endurance_bytes(1.0) is None:
        _refuse(ssd, "endurance", f"{sheet.path} states no endurance_tbw or endurance_dwpd")
    before = smart_counters(ssd)
    result = ssd.run(write_job(ssd))
    after = smart_counters(ssd)
    written = Written(result.directions["write"].io_bytes, before, after)
    verdicts = [data_units(written), endurance(sheet, after, written.host_bytes)]
    conclude(ssd, verdicts)
    return verdicts
