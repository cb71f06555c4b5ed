"""Admin polling under load: the poller's script, its output, the verdicts and the figure."""

from __future__ import annotations

import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from pytest_ssd.db import DriveResults
from pytest_ssd.db.model import DriveRef
from pytest_ssd.health.log import newest_error
from pytest_ssd.machine.machine import LOCAL
from pytest_ssd.methods.adminload import report
from pytest_ssd.methods.adminload.analysis import judge_percentile
from pytest_ssd.methods.adminload.figures import Group, polling_cost
from pytest_ssd.methods.adminload.poller import Poller, parse_polled
from pytest_ssd.methods.adminload.workloads import KIND
from pytest_ssd.proc import Completed
from pytest_ssd.report.sections.base import Context, FigureSink, Palette
from pytest_ssd.results.record import Derived
from pytest_ssd.verdict.tolerance import Band, SheetTolerances, Tolerances

GOLDEN = Path(__file__).parents[1] / "golden"
#: a stand-in for nvme-cli: smart-log and id-ctrl answer, error-log fails
FAKE_NVME = """#!/bin/sh
echo "$@" >> "$(dirname "$0")/calls"
[ "$1" = error-log ] && exit 5
exit 0
"""


#: run-to-run noise in no order (repeats that rise one after another drift: never judged)
NOISE = (0, 3, 1, 4, 2)


def run(p99_us: float, p999_us: float, samples: int = 100_000) -> dict[str, Any]:
    """One run's read figures as a measurement holds them."""
    percentiles = [
        {"p": 99.0, "us": p99_us, "resolved": True},
        {"p": 99.9, "us": p999_us, "resolved": samples >= 1000},
    ]
    return {"read": {"iops": 1.0, "clat": {"samples": samples, "percentiles": percentiles}}}


def test_the_golden_error_log_holds_no_error() -> None:
    assert newest_error((GOLDEN / "health" / "nvme-error-log.json").read_text()) == {}


def test_the_poller_output_is_counted() -> None:
    out = "smart-log 0\nerror-log 5\nid-ctrl 0\nsmart-log 0\nrounds 2\n"
    polled = parse_polled(Completed(("sh",), 0, out, "", 1.0), 2.0)
    assert (polled.rounds, polled.rate) == (2, 1.0)
    assert polled.answered == {"smart-log": 2, "id-ctrl": 1}
    assert polled.failed == {"error-log": 1}
    timed = "started 100.25\nsmart-log 0\nended 104.25\nrounds 2\n"
    assert parse_polled(Completed(("sh",), 0, timed, "", 1.0), 2.0).elapsed_s == 4.0, (
        "the loop's own time, not the caller's"
    )


def test_the_poller_runs_its_rounds_at_the_rate_until_stopped(tmp_path: Path) -> None:
    nvme = tmp_path / "nvme"
    nvme.write_text(FAKE_NVME)
    nvme.chmod(0o755)
    poller = Poller(LOCAL, str(nvme), Path("/dev/fake0n1"), 20.0, False, 1.0, tmp_path)
    with poller:
        time.sleep(0.6)
    polled = poller.polled
    assert polled is not None
    # never faster than its rate (20/s) over the time the loop ran (it sees the stop
    # file after the with block; a busy machine lets it run longer, or poll slower)
    assert polled.elapsed_s >= 0.5, polled
    assert 1 <= polled.rounds <= polled.elapsed_s * 20 + 2, polled
    assert polled.answered["smart-log"] == polled.answered["id-ctrl"] == polled.rounds
    assert polled.failed == {"error-log": polled.rounds}
    calls = (tmp_path / "calls").read_text().splitlines()
    assert "smart-log /dev/fake0n1 -o json" in calls and "id-ctrl /dev/fake0n1 -o json" in calls
    assert not any("telemetry" in call for call in calls), "the drive declares no telemetry"
    assert not Path(poller._stop).exists(), "its stop file is removed"
    assert "rounds" in (tmp_path / "adminload-poller-1.stdout").read_text(), "its output kept"
    with Poller(LOCAL, str(nvme), Path("/dev/fake0n1"), 20.0, True, 1.0, tmp_path) as again:
        time.sleep(0.2)
    assert again.polled is not None and again.polled.answered.get("telemetry-log", 0) >= 1


def test_polling_that_doubles_the_tail_regresses() -> None:
    base = [run(100 + i, 200 + i) for i in NOISE]
    slow = [run(200 + i, 400 + i) for i in NOISE]
    p99 = judge_percentile(
        "QD1 polled 10/s p99", "adminload-rnd-4k-qd1", 99.0, unpolled=base, polled=slow
    )
    assert (p99.verdict, p99.judged and p99.judged.verdict) == ("fail", "regressed")
    assert p99.detail.startswith(
        "QD1 polled 10/s p99: p99 202 µs polled, 102 µs not (medians): regressed: 1.98×"
        " (95 % CI 1.94–2.02; band ±5 % derived from the runs' spread)"
    )
    same = judge_percentile("c", "adminload-rnd-4k-qd1", 99.0, unpolled=base, polled=base)
    assert same.verdict == "pass" and "same" in same.detail


def test_a_band_of_the_datasheet_judges(tmp_path: Path) -> None:
    base = [run(100 + i, 200) for i in NOISE]
    slow = [run(120 + i, 200) for i in NOISE]  # 1.2x
    wide = Tolerances(sheet=SheetTolerances("sheet.toml", Band({}, 0.5)))
    verdict = judge_percentile(
        "c", "adminload-rnd-4k-qd1", 99.0, unpolled=base, polled=slow, tolerances=wide
    )
    assert (
        verdict.verdict == "pass"
        and "band ±50 % from sheet.toml [baseline] default" in verdict.detail
    )


def test_too_few_repeats_or_ios_are_not_judged() -> None:
    base = [run(100, 200) for _ in range(3)]
    few = judge_percentile("c", "p", 99.0, unpolled=base, polled=base)
    assert few.verdict == "not judged" and "cannot bound the ratio" in few.detail
    small = [run(100, 200, samples=5_000) for _ in range(5)]
    unresolved = judge_percentile("QD1 p99.9", "p", 99.9, unpolled=small, polled=small)
    assert unresolved.verdict == "not judged" and unresolved.judged is None
    assert "p99.9 needs ≥ 10,000 I/Os a run, the fewest run had 5,000" in unresolved.detail
    assert unresolved.polled_us == (None,) * 5, "shown as not resolved"


def test_the_figure_draws_both_sides_and_says_not_resolved() -> None:
    groups = [
        Group("QD1 1/s p99", (100.0, 110.0), (120.0, None), "pass"),
        Group("QD1 1/s p99.9", (None, None), (None, None), "not judged"),
    ]
    fig = polling_cost(groups, "#1f77b4", "drive: admin polling")
    (ax,) = fig.axes
    texts = [t.get_text() for t in ax.texts]
    assert texts == ["1 n/r", "n/r", "n/r"]
    assert [t.get_text() for t in ax.get_xticklabels()] == [
        "QD1 1/s p99\npass",
        "QD1 1/s p99.9\nnot judged",
    ]
    assert ax.get_yscale() == "log"


def test_the_section_draws_a_figure_and_a_table_per_drive(tmp_path: Path) -> None:
    base = [run(100 + i, 200 + i) for i in NOISE]
    slow = [run(200 + i, 400 + i) for i in NOISE]
    verdicts = [
        judge_percentile(f"QD1 polled 10/s p{p:g}", "j", p, unpolled=base, polled=slow)
        for p in (99.0, 99.9)
    ]
    values = {
        "qd": 1,
        "rate": 10.0,
        "pollers": [{"rate": 9.5}, {"rate": 9.8}],
        "health_interval_s": 1.0,
        "health_active": True,
        "percentiles": [v.as_dict() for v in verdicts],
    }
    test = "qual/test_admin_load.py::test_admin_polling_under_load[nvme0n1-qd1-10per-s]"
    record = Derived(test=test, device="nvme0n1", name=KIND, values=values)
    drive = DriveResults(DriveRef("run", "nvme0n1", "drive A"), derived=[record])
    ctx = Context((drive,), 1, Palette.of([drive]), FigureSink(tmp_path), suite="qual")
    section = report.section(ctx)
    assert section is not None and section.title == "Admin commands under load (suites/qual)"
    assert "<figcaption>drive A: p99 and p99.9 without and with admin polling" in section.body
    assert "<td>9.5–9.8/s</td>" in section.body and "<td>202 µs</td>" in section.body
    assert "every 1 s (--ssd-health-interval=0 for none)" in section.body
    assert report.section(replace(ctx, suite="csd")) is None, "only suites/qual's records"
