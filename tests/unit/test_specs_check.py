"""Spec checks against the seeds' figures, matching datasheets to devices, and planning."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from pytest_ssd.device.identity import DeviceIdentity
from pytest_ssd.errors import DatasheetError, ParseError
from pytest_ssd.fio.results import DirectionResult, JobResult, Latency
from pytest_ssd.specs import (
    Datasheet,
    Metric,
    Quantity,
    Reading,
    SpecCheck,
    checks,
    failures_first,
    load_datasheet,
    measured,
    mismatch,
    plan,
    require_match,
    select,
)
from pytest_ssd.state.spec import parse_state

DATASHEETS = Path(__file__).parents[2] / "datasheets"
EVO = DATASHEETS / "samsung-850-evo-1tb.toml"
PM983 = DATASHEETS / "samsung-pm983-960gb.toml"

#: seed 001, METHOD §7: the PM983's measured figures, every one meeting the datasheet
PM983_MEASURED = {
    "seq-read-qd32": Quantity(3504, "MB/s"),
    "seq-write-qd32": Quantity(1319, "MB/s"),
    "rnd-read-qd32x4": Quantity(442_000, "IOPS"),
    "rnd-write-qd32x4": Quantity(46, "kIOPS"),
    "qos-read-mean": Quantity(74, "µs"),
    "qos-read-p99": Quantity(0.09, "ms"),
    "qos-read-p9999": Quantity(0.12, "ms"),
    "qos-write-mean": Quantity(22, "µs"),
    "qos-write-p99": Quantity(0.03, "ms"),
    "qos-write-p9999": Quantity(0.04, "ms"),
}
#: seed 003: the 850 EVO's figures and the verdicts at tolerance 0.9
MB_S, IOPS = "MB/s", "IOPS"
EVO_MEASURED = {
    "seq-read-qd8": (
        Quantity(534, MB_S),
        "SEQ read QD8 128KiB: 534 MB/s = 98.9 % of spec 540 MB/s (needs ≥ 90 %)",
    ),
    "seq-write-qd8": (
        Quantity(515, MB_S),
        "SEQ write QD8 128KiB: 515 MB/s = 99.0 % of spec 520 MB/s (needs ≥ 90 %)",
    ),
    "rnd-read-qd32": (
        Quantity(80_000, IOPS),
        "RND read QD32 4KiB: 80,000 IOPS = 81.6 % of spec 98,000 IOPS (needs ≥ 90 %)",
    ),
    "rnd-write-qd32": (
        Quantity(67_000, IOPS),
        "RND write QD32 4KiB: 67,000 IOPS = 74.4 % of spec 90,000 IOPS (needs ≥ 90 %)",
    ),
}


def identity(model: str | None, size: int, firmware: str | None) -> DeviceIdentity:
    return DeviceIdentity(
        path="/dev/nvme0n1",
        kind="block",
        kernel_name="nvme0n1",
        size_bytes=size,
        logical_block_size=512,
        physical_block_size=4096,
        rotational=False,
        discard=True,
        model=model,
        serial="S1",
        firmware=firmware,
        transport="nvme",
    )


def test_seed_001_pm983_meets_every_line_of_its_datasheet() -> None:
    sheet = load_datasheet(PM983)
    by_id = checks(sheet)
    assert set(by_id) == set(PM983_MEASURED), "every line has a seed figure"
    verdicts = [by_id[line_id].evaluate(value) for line_id, value in PM983_MEASURED.items()]
    assert [v.line.id for v in verdicts if not v.met] == []
    assert [by_id[i].fails(value) for i, value in PM983_MEASURED.items()] == [None] * 10
    p99 = by_id["qos-read-p99"].evaluate(PM983_MEASURED["qos-read-p99"])
    assert p99.message == (
        "RND read QD1 4KiB p99 latency: 0.09 ms = 90.0 % of spec 0.1 ms (needs ≤ 100 %)"
    )
    rnd = by_id["rnd-read-qd32x4"].evaluate(PM983_MEASURED["rnd-read-qd32x4"])
    assert rnd.message == (
        "RND read QD32×4 4KiB: 442 kIOPS = 110.5 % of spec 400 kIOPS (needs ≥ 90 %)"
    )


def test_seed_003_850_evo_meets_seq_but_not_rnd_at_tolerance_0_9() -> None:
    sheet = load_datasheet(EVO)
    by_id = checks(sheet)
    assert {line.tolerance for line in sheet.specs} == {0.9}
    failures = {i: by_id[i].fails(value) for i, (value, _) in EVO_MEASURED.items()}
    assert failures == {
        "seq-read-qd8": None,
        "seq-write-qd8": None,
        "rnd-read-qd32": EVO_MEASURED["rnd-read-qd32"][1],
        "rnd-write-qd32": EVO_MEASURED["rnd-write-qd32"][1],
    }
    for line_id, (value, message) in EVO_MEASURED.items():
        assert by_id[line_id].evaluate(value).message == message


def _per_tb_line() -> SpecCheck:
    line = load_datasheet(EVO).line("rnd-read-qd32")
    return SpecCheck(dataclasses.replace(line, value=100_000, per_tb=True), 960_197_124_096)


def test_a_per_tb_line_divides_the_figure_by_the_drives_decimal_tb() -> None:
    # 960,197,124,096 bytes are 0.9602 TB (10¹² bytes): 90,000 IOPS are 93,730.8 IOPS per TB
    verdict = _per_tb_line().evaluate(Quantity(90_000, "IOPS"))
    assert verdict.met and verdict.ratio is not None
    assert float(verdict.ratio) == pytest.approx(90_000 / 0.960197124096 / 100_000)
    assert verdict.message == (
        "RND read QD32 4KiB: 90,000 IOPS on 0.9602 TB = 93,730.8 IOPS per TB"
        " = 93.7 % of spec 100,000 IOPS per TB (needs ≥ 90 %)"
    )
    row = verdict.as_dict()
    assert (row["per_tb"], row["measured_total"]) == (True, 90_000)
    assert row["measured"] == pytest.approx(93_730.8, abs=0.1)
    assert row["capacity_tb"] == pytest.approx(0.960197124096)
    # the same figure on a drive twice the size is half as much per TB: not met
    double = dataclasses.replace(_per_tb_line(), capacity_bytes=2 * 960_197_124_096)
    assert double.fails(Quantity(90_000, "IOPS")) is not None


def test_a_per_tb_line_without_the_capacity_is_an_error() -> None:
    check = dataclasses.replace(_per_tb_line(), capacity_bytes=None)
    with pytest.raises(ValueError, match="'rnd-read-qd32' is per TB: give the drive's capacity"):
        check.evaluate(Quantity(90_000, "IOPS"))


def test_a_product_line_sheet_matches_each_of_its_capacities() -> None:
    sheet = load_datasheet(PM983)
    line = dataclasses.replace(sheet.drive, capacities_gb=(960, 1920))
    sheet = dataclasses.replace(sheet, drive=line)
    model = "SAMSUNG MZQLB960HAJR-00007"
    assert mismatch(sheet, identity(model, 1_920_383_410_176, "EDA5202Q")) is None
    assert mismatch(sheet, identity(model, 3_840_755_982_336, "EDA5202Q")) == (
        "capacity 3.84 TB is not 960 or 1920 GB"
    )


def test_verdict_rows_sort_failures_first() -> None:
    by_id = checks(load_datasheet(EVO))
    verdicts = [by_id[i].evaluate(value) for i, (value, _) in EVO_MEASURED.items()]
    rows = [v.as_dict() for v in failures_first(verdicts)]
    assert [(r["id"], r["verdict"]) for r in rows] == [
        ("rnd-read-qd32", "not met"),
        ("rnd-write-qd32", "not met"),
        ("seq-read-qd8", "met"),
        ("seq-write-qd8", "met"),
    ]
    first = rows[0]
    assert first["line"] == "RND read QD32 4KiB"
    assert (first["spec"], first["measured"], first["unit"]) == (98_000, 80_000, "IOPS")
    assert first["ratio"] == pytest.approx(80 / 98)
    assert first["conditions"] == {
        "pattern": "rnd",
        "direction": "read",
        "read_pct": 100,
        "block_size": 4096,
        "qd": 32,
        "jobs": 1,
        "state": "fob",
    }


def test_measured_in_another_unit_is_converted_for_the_message() -> None:
    seq_read = SpecCheck(load_datasheet(EVO).line("seq-read-qd8"))
    # seed 003's fio line: READ: bw=506MiB/s (531MB/s)
    assert seq_read.evaluate(Quantity(506, "MiB/s")).message.startswith(
        "SEQ read QD8 128KiB: 530.6 MB/s = 98.3 % of spec 540 MB/s"
    )
    with pytest.raises(ValueError, match="cannot convert"):
        seq_read.evaluate(Quantity(74, "µs"))


def test_limits_are_exact() -> None:
    evo, pm983 = load_datasheet(EVO), load_datasheet(PM983)
    ceiling = SpecCheck(evo.line("seq-read-qd8"))  # 540 MB/s, needs 90 % = 486 MB/s
    assert ceiling.fails(Quantity(486, "MB/s")) is None
    assert ceiling.fails(Quantity(485.99, "MB/s")) is not None
    bound = SpecCheck(pm983.line("qos-write-p99"))  # 0.06 ms
    assert bound.fails(Quantity(60, "µs")) is None
    assert bound.fails(Quantity(60_001, "ns")) == (
        "RND write QD1 4KiB p99 latency: 0.06 ms = 100.0 % of spec 0.06 ms (needs ≤ 100 %)"
    )


def test_line_tolerance_overrides_the_default() -> None:
    line = dataclasses.replace(load_datasheet(EVO).line("rnd-read-qd32"), tolerance=0.8)
    assert SpecCheck(line).fails(Quantity(80_000, "IOPS")) is None
    assert SpecCheck(line).evaluate(Quantity(80_000, "IOPS")).needs == "≥ 80 %"


def test_a_bare_number_is_refused_its_unit_would_be_a_guess() -> None:
    # the PM983 sheet is in kIOPS: 46 read as a bare number in the line's unit would be
    # 46,000 IOPS for a drive that measured 46 IOPS
    line = load_datasheet(PM983).line("rnd-write-qd32x4")
    with pytest.raises(TypeError, match=r"give a Quantity with its unit or the result's Reading"):
        SpecCheck(line).evaluate(46)  # type: ignore[arg-type]


def test_a_percentile_the_sample_cannot_resolve_is_not_judged() -> None:
    # seed 001's PM983 p99.99 from 247 I/Os: the slowest I/O, 513.8 ms, is no p99.99
    line = load_datasheet(PM983).line("qos-read-p9999")
    verdict = SpecCheck(line).evaluate(Reading(Quantity(513.8, "ms"), samples=247, needs=10_000))
    assert (verdict.status, verdict.met, verdict.measured, verdict.ratio) == (
        "not judged",
        False,
        None,
        None,
    )
    assert verdict.message == (
        "RND read QD1 4KiB p99.99 latency: not judged: p99.99 needs ≥ 10,000 I/Os, had 247"
    )
    row = verdict.as_dict()
    assert (row["verdict"], row["measured"], row["ratio"]) == ("not judged", None, None)
    assert row["reason"] == "p99.99 needs ≥ 10,000 I/Os, had 247"
    assert SpecCheck(line).fails(Reading(Quantity(513.8, "ms"), 247, 10_000)) is None
    met = SpecCheck(line).evaluate(Quantity(0.11, "ms"))
    assert failures_first([met, verdict]) == [verdict, met]


def test_measured_marks_a_percentile_unresolved_from_the_sample_size() -> None:
    line = load_datasheet(PM983).line("qos-read-p99")  # p99 needs 100 I/Os
    bins = tuple((1000 + i, 1) for i in range(69))
    few = Latency(69, 1000, 1068, 1034.0, 1.0, bins, {})
    result = job(dataclasses.replace(direction("read", 1.0, 1.0), clat=few))
    reading = measured(line, result)
    assert (reading.resolved, reading.samples, reading.needs) == (False, 69, 100)
    assert reading.why_not(line) == "p99 needs ≥ 100 I/Os, had 69"
    assert SpecCheck(line).evaluate(reading).status == "not judged"
    enough = Latency(100, 1000, 1099, 1050.0, 1.0, tuple((1000 + i, 1) for i in range(100)), {})
    full = measured(line, job(dataclasses.replace(direction("read", 1.0, 1.0), clat=enough)))
    assert full.resolved and full.quantity == Quantity(1098, "ns")


PM983_IDENTITY = identity("SAMSUNG MZQLB960HAJR-00007", 960_197_124_096, "EDA5202Q")


@pytest.mark.parametrize(
    ("changes", "reason"),
    [
        ({}, None),
        ({"firmware": "EDB7902Q"}, None),
        ({"model": "samsung  mzqlb960hajr-00007"}, None),
        (
            {"model": "Samsung SSD 970 PRO 1TB"},
            "model 'Samsung SSD 970 PRO 1TB' is not SAMSUNG MZQLB960HAJR-*",
        ),
        ({"model": None}, "model 'unknown' is not SAMSUNG MZQLB960HAJR-*"),
        ({"size_bytes": 1_920_383_410_176}, "capacity 1.92 TB is not 960 GB"),
        ({"firmware": "EDW1234Q"}, "firmware 'EDW1234Q' is not EDA5* or EDB7*"),
        ({"firmware": None}, "firmware 'unknown' is not EDA5* or EDB7*"),
    ],
)
def test_pm983_datasheet_matches_its_drive_only(
    changes: dict[str, object], reason: str | None
) -> None:
    device = dataclasses.replace(PM983_IDENTITY, **changes)  # type: ignore[arg-type]
    assert mismatch(load_datasheet(PM983), device) == reason


def test_850_evo_matches_the_truncated_scsi_model() -> None:
    device = identity("Samsung SSD 850", 1_000_204_886_016, "EMT02B6Q")
    assert mismatch(load_datasheet(EVO), device) is None


def test_mismatch_is_a_clear_error_unless_forced() -> None:
    sheet = load_datasheet(EVO)
    with pytest.raises(DatasheetError) as caught:
        require_match(sheet, PM983_IDENTITY)
    assert str(caught.value) == (
        f"{EVO}: drive: Samsung SSD 850 EVO 1TB does not match /dev/nvme0n1: model "
        "'SAMSUNG MZQLB960HAJR-00007' is not Samsung SSD 850 EVO 1TB or Samsung SSD 850 "
        "(add --datasheet-force to use it anyway)"
    )
    require_match(sheet, PM983_IDENTITY, force=True)


def test_select_picks_the_datasheet_of_the_device() -> None:
    sheets: list[Datasheet] = [load_datasheet(EVO), load_datasheet(PM983)]
    assert select(sheets, PM983_IDENTITY) is sheets[1]
    loop = identity(None, 1 << 30, None)
    assert select(sheets, loop) is None


def test_plan_gives_the_state_and_the_fio_job_of_a_line() -> None:
    line = load_datasheet(PM983).line("rnd-read-qd32x4")
    planned = plan(line, runtime_s=60, ramp_s=5)
    assert planned.state == parse_state("ss(rnd-4k-write-qd256)")
    job = planned.job
    assert (job.name, job.rw, job.block_size, job.iodepth, job.numjobs) == (
        "rnd-read-qd32x4",
        "randread",
        4096,
        32,
        4,
    )
    assert (job.runtime_s, job.ramp_s, job.offset, job.size) == (60, 5, 0, None)


def test_plan_asks_fio_for_the_lines_percentile() -> None:
    line = load_datasheet(PM983).line("qos-read-p9999")
    assert 99.99 in plan(line).job.percentiles
    deeper = dataclasses.replace(line, metric=Metric("latency", 99.9999))
    percentiles = plan(deeper).job.percentiles
    assert 99.9999 in percentiles
    assert len(percentiles) <= 20
    assert list(percentiles) == sorted(percentiles)


def direction(name: str, iops: float, bw: float, p99_ns: int = 0) -> DirectionResult:
    clat = Latency(1000, 10, 99_000, 70_000.0, 1.0, (), {99.0: p99_ns})
    return DirectionResult(name, 1, 1000, 1000, iops, bw, clat, 74_000.0, None)


def job(*directions: DirectionResult) -> JobResult:
    return JobResult("j", 0, 1.0, 0.0, 0.0, {}, {d.direction: d for d in directions})


def test_measured_reads_the_lines_figure_from_fio() -> None:
    sheet = load_datasheet(PM983)
    result = job(direction("read", 442_000.0, 1.81e9, p99_ns=90_000), direction("write", 1.0, 2.0))
    assert measured(sheet.line("rnd-read-qd32x4"), result) == Reading(Quantity(442_000, "IOPS"))
    assert measured(sheet.line("seq-read-qd32"), result) == Reading(Quantity(1.81e9, "B/s"))
    p99 = measured(sheet.line("qos-read-p99"), result)
    assert p99 == Reading(Quantity(90_000, "ns"), samples=1000)
    assert measured(sheet.line("qos-read-mean"), result) == Reading(Quantity(74_000, "ns"))
    mixed = dataclasses.replace(sheet.line("rnd-read-qd32x4"), read_pct=70)
    assert measured(mixed, result) == Reading(Quantity(442_001, "IOPS"))
    with pytest.raises(ParseError, match="fio job 'j' has no write results"):
        measured(sheet.line("seq-write-qd32"), job(direction("read", 1.0, 1.0)))
