"""What a measurement records of its machine's CPUs (/proc/stat), and what a verdict makes of it."""

from __future__ import annotations

import pytest

from pytest_ssd.fio.results import JobResult
from pytest_ssd.state.cpu import CpuTimes, busy_cpus, host_cpus, parse_pressure, parse_stat
from pytest_ssd.verdict.judge import judge_point

#: this machine's /proc/stat (2 CPUs), its first lines
STAT = """cpu  1147078 1263 812708 635818 143737 0 82751 2159 0 0
cpu0 563245 699 406107 352529 72510 0 14716 1110 0 0
cpu1 583833 563 406601 283288 71226 0 68034 1049 0 0
intr 1 2 3
"""


def _job(usr: float, sys: float, elapsed: float) -> JobResult:
    return JobResult("j", 0, elapsed, usr, sys, {}, {})


def test_proc_stat_gives_busy_and_idle_jiffies_and_the_cpus() -> None:
    times = parse_stat(STAT)
    assert times == CpuTimes(
        busy=1147078 + 1263 + 812708 + 82751 + 2159,
        total=1147078 + 1263 + 812708 + 635818 + 143737 + 82751 + 2159,
        cpus=2,
    )
    assert parse_stat("intr 1 2\n") is None


def test_the_cpu_pressure_is_the_some_lines_total() -> None:
    text = (
        "some avg10=21.23 avg60=19.48 avg300=20.81 total=6198988770\n"
        "full avg10=0.00 avg60=0.00 avg300=0.00 total=0\n"
    )
    assert parse_pressure(text) == 6198988770
    assert parse_pressure("full total=3\n") is None


def test_the_share_of_the_run_a_task_waited_for_a_cpu() -> None:
    before = CpuTimes(busy=1000, total=3000, cpus=2, waited_us=5_000_000, at_us=0)
    after = CpuTimes(busy=1200, total=3200, cpus=2, waited_us=11_000_000, at_us=10_000_000)
    found = host_cpus(before, after, [], 10)
    assert found == {"busy": 2.0, "fio": 0.0, "others": 2.0, "waiting": 0.6}


def test_busy_cpus_between_two_readings_less_fio_are_the_others() -> None:
    before = CpuTimes(busy=1000, total=3000, cpus=2)
    after = CpuTimes(busy=1000 + 150, total=3000 + 200, cpus=2)  # 75 % of 2 CPUs busy
    assert busy_cpus(before, after) == pytest.approx(1.5)
    assert busy_cpus(after, after) is None, "no time passed"
    # fio: 40 % usr + 20 % sys of one CPU over 8 s of a 10 s run
    found = host_cpus(before, after, [_job(40, 20, 8)], 10)
    assert found == {"busy": 1.5, "fio": 0.48, "others": 1.02}
    assert host_cpus(None, after, [], 10) is None


def _runs(iops: list[float], others: float) -> list[dict[str, object]]:
    cpus = {"busy": others + 1, "fio": 1.0, "others": others}
    return [{"read": {"iops": v}, "host_cpus": cpus} for v in iops]


BASE = [1000.0, 1010.0, 990.0, 1005.0, 995.0]
SLOW = [700.0, 707.0, 693.0, 703.5, 696.5]


def test_a_regression_measured_while_the_machine_was_busier_is_unknown() -> None:
    (quiet,) = judge_point("p", _runs(BASE, 0.1), _runs(SLOW, 0.2))
    assert quiet.verdict == "regressed", "the machine did the same beside fio"
    (busy,) = judge_point("p", _runs(BASE, 0.1), _runs(SLOW, 1.9))
    assert busy.verdict == "unknown"
    assert busy.reason == (
        "other work on the device's machine: 2.9 CPUs busy during the new run's"
        " repeats, 1.1 during the baseline's"
    )
    # the baseline busier: the new build's slowness is not the host's doing
    (stands,) = judge_point("p", _runs(BASE, 1.9), _runs(SLOW, 0.1))
    assert stands.verdict == "regressed"
    # an improvement measured while the baseline's machine was busier is unknown
    (better,) = judge_point("p", _runs(SLOW, 1.9), _runs(BASE, 0.1))
    assert better.verdict == "unknown" and "2.9 during the baseline's" in better.reason


def test_work_taking_the_cpu_a_slowed_fio_left_is_not_a_busier_machine() -> None:
    """Every CPU busy both times (here beside the test suite): the drive slowed, fio used
    0.3 CPU less and the other work took it (1.4 CPUs beside fio, then 1.7): the
    regression stands."""

    def runs(iops: list[float], fio: float) -> list[dict[str, object]]:
        cpus = {"busy": 2.0, "fio": fio, "others": 2.0 - fio, "waiting": 0.73}
        return [{"read": {"iops": v}, "host_cpus": cpus} for v in iops]

    (slowed,) = judge_point("p", runs(BASE, 0.6), runs(SLOW, 0.3))
    assert slowed.verdict == "regressed", slowed.reason


def test_a_tail_many_times_longer_on_a_busier_machine_is_not_claimed() -> None:
    """fio waiting for a CPU made a loop device's p99 18 times as long (measured here, two
    CPU-bound processes started during the new run): no factor is the drive's for sure."""
    (busy,) = judge_point("p", _runs(BASE, 0.7), _runs([v / 18 for v in BASE], 1.4))
    assert busy.verdict == "unknown" and busy.ratio == pytest.approx(1 / 18)


def test_a_machine_whose_cpus_are_all_busy_shows_its_load_as_waiting() -> None:
    """Once every CPU is busy, other work cannot add busy CPUs: the share of the run a task
    waited for a CPU (PSI) still rises (measured here: 31 % quiet, 81 % beside three
    CPU-bound processes), and a regression measured then is unknown."""

    def runs(iops: list[float], waiting: float) -> list[dict[str, object]]:
        cpus = {"busy": 2.0, "fio": 1.1, "others": 0.9, "waiting": waiting}
        return [{"read": {"iops": v}, "host_cpus": cpus} for v in iops]

    (quiet,) = judge_point("p", runs(BASE, 0.31), runs(SLOW, 0.35))
    assert quiet.verdict == "regressed"
    (waited,) = judge_point("p", runs(BASE, 0.31), runs(SLOW, 0.81))
    assert waited.verdict == "unknown"
    assert waited.reason == (
        "other work on the device's machine: a task waited for a CPU 81 % of the new run's"
        " repeats, 31 % of the baseline's"
    )
