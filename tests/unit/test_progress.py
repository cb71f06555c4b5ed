"""Live lines of long steps and measurements, from fio's status documents."""

from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from pytest_ssd.errors import DeviceError
from pytest_ssd.fio.job import FioJob
from pytest_ssd.fio.status import StatusSink, moved
from pytest_ssd.state import progress
from pytest_ssd.state.accounting import counters_on
from pytest_ssd.state.progress import KernelFeed, Plan, Progress, feeding, plan_of
from pytest_ssd.state.relay import Relay, worker_writer
from tests.fake_machine import FakeMachine

MiB, GiB = 1 << 20, 1 << 30
GOLDEN = Path(__file__).parent.parent / "golden" / "fio"


def status(written: int, ios: int, read: int = 0) -> dict[str, object]:
    """A status document as fio --status-interval prints it (the fields read)."""
    job = {
        "jobname": "fill",
        "read": {"io_bytes": read, "total_ios": read // 4096},
        "write": {"io_bytes": written, "total_ios": ios},
        "trim": {"io_bytes": 0, "total_ios": 0},
    }
    return {"jobs": [job]}


def test_moved_counts_every_direction_and_never_the_clients_sum() -> None:
    doc = status(3 * MiB, 24, read=MiB)
    assert moved(doc) == (4 * MiB, 24 + 256)
    clients = {"client_stats": [*doc["jobs"], {**doc["jobs"][0], "jobname": "All clients"}]}
    assert moved(clients) == moved(doc)


def test_plan_of_adds_amounts_clones_and_times() -> None:
    fill = FioJob("fill", "seq", 128 * 1024, read_pct=0)  # one pass over the device
    rnd = FioJob("rnd", "rnd", 4096, read_pct=0, size=GiB, io_bytes=256 * MiB, numjobs=4)
    timed = FioJob("t", "rnd", 4096, read_pct=100, runtime_s=30, ramp_s=5)
    amount = Plan(total_bytes=2 * GiB + 4 * 256 * MiB, iops=True)
    assert plan_of([fill, rnd], capacity=2 * GiB) == amount, "the measured job's rate: IOPS"
    plan = plan_of([fill, timed], capacity=2 * GiB)
    assert plan == Plan(total_s=35.0, iops=True), "with a time-based job: seconds"
    assert plan.long and not plan_of([FioJob("q", "rnd", 4096, io_bytes=MiB)], GiB).long
    large = FioJob("l", "rnd", 128 * 1024, read_pct=0, io_bytes=GiB)
    assert not plan_of([rnd, fill], 2 * GiB).iops and not plan_of([large], GiB).iops, "MiB/s"


def test_a_line_says_what_how_far_how_fast_and_how_long(monkeypatch: pytest.MonkeyPatch) -> None:
    clock = iter([100.0, 101.0, 111.0, 121.0])
    monkeypatch.setattr(progress.time, "monotonic", lambda: next(clock))
    lines: list[tuple[str, bool]] = []
    follow = Progress(
        "d0 fill-pass-1", Plan(total_bytes=20 * GiB), lambda t, f: lines.append((t, f))
    )
    follow(status(0, 0))  # t = 101 s
    follow(status(5 * GiB, 40960))  # t = 111 s: 512 MiB/s (a sequential job: not in IOPS)
    assert lines[-1] == (
        "d0 fill-pass-1:  25.0 %  5.0 GiB/20.0 GiB  512 MiB/s  elapsed 0:00:11  left 0:00:30",
        False,
    )
    follow.close()  # t = 121 s
    assert lines[-1] == ("d0 fill-pass-1: done in 0:00:21 (5.0 GiB, 244 MiB/s)", True)


def test_a_time_based_line_counts_seconds(monkeypatch: pytest.MonkeyPatch) -> None:
    clock = iter([0.0, 45.0])
    monkeypatch.setattr(progress.time, "monotonic", lambda: next(clock))
    lines: list[str] = []
    follow = Progress("d0 wsat", Plan(total_s=180.0), lambda t, f: lines.append(t))
    follow(status(900 * MiB, 230400))
    assert lines[-1].startswith("d0 wsat:  25.0 %  45/180 s, 900 MiB  ")
    assert lines[-1].endswith("left 0:02:15")


def test_the_relay_shows_each_workers_newest_line_once(tmp_path: Path) -> None:
    shown: list[str] = []
    relay = Relay(tmp_path, shown.append, tty=False)
    gw0, gw1 = worker_writer(tmp_path, "gw0"), worker_writer(tmp_path, "gw1")
    gw0("d0 fill:  10.0 %", False)
    gw0("d0 fill:  20.0 %", False)
    gw1("d1 fill: done in 0:00:09", True)
    relay.poll()
    relay.poll()  # nothing changed: nothing shown again
    assert shown == ["[gw0] d0 fill:  20.0 %", "[gw1] d1 fill: done in 0:00:09"]
    assert json.dumps(sorted(p.name for p in (tmp_path / "progress").iterdir())) == json.dumps(
        ["gw0.line", "gw1.line"]
    ), "no partial file left behind"
    # in a log, a worker's next line waits its minute; its closing line, and the end, do not
    gw0("d0 fill:  30.0 %", False)
    relay.poll()
    assert shown[-1] == "[gw1] d1 fill: done in 0:00:09"
    gw0("d0 fill: done in 0:00:20", True)
    relay.poll()
    assert shown[-1] == "[gw0] d0 fill: done in 0:00:20"
    gw1("d1 rnd:  50.0 %", False)
    relay.stop()  # never started: the last look only
    assert shown[-1] == "[gw1] d1 rnd:  50.0 %"


def follow_golden(
    name: str, plan: Plan, monkeypatch: pytest.MonkeyPatch, *, bunched: bool = False
) -> list[str]:
    """The lines of a Progress fed fio's real status stream *name* (tests/golden/fio).

    Each report arrives at its ``timestamp_ms`` (*bunched*: every one after the first
    arrives with the last), the run starts a second before the first one (fio's
    interval) and ends with the last one.
    """
    docs: list[dict[str, object]] = []
    sink = StatusSink(docs.append)
    for line in (GOLDEN / name).read_text().splitlines(keepends=True):
        sink.feed(line)
    stamps = [int(str(doc["timestamp_ms"])) / 1000 for doc in docs]
    arrivals = [stamps[0], *[stamps[-1]] * (len(stamps) - 1)] if bunched else stamps
    clock = iter([stamps[0] - 1, *arrivals, stamps[-1]])
    monkeypatch.setattr(progress.time, "monotonic", lambda: next(clock))
    lines: list[str] = []
    follow = Progress("d0 job", plan, lambda text, final: lines.append(text))
    for doc in docs:
        follow(doc)
    follow.close()
    return lines


def test_fios_status_of_a_fill_in_gib(monkeypatch: pytest.MonkeyPatch) -> None:
    # fio --ioengine=null --size=16G --rw=write --bs=128k --rate=5g: three reports and the result
    fill = FioJob("fill", "seq", 128 * 1024, read_pct=0, io_bytes=16 * GiB)
    plan = plan_of([fill], capacity=16 * GiB)
    assert plan == Plan(total_bytes=16 * GiB) and not plan.iops
    lines = follow_golden("status_fill_16g.json", plan, monkeypatch)
    assert lines == [
        # 4,787,142,656 bytes in the first second; the rate then follows a moving average
        "d0 job:  27.9 %  4.5 GiB/16.0 GiB  4,565 MiB/s  elapsed 0:00:01  left 0:00:02",
        "d0 job:  58.9 %  9.4 GiB/16.0 GiB  4,711 MiB/s  elapsed 0:00:02  left 0:00:01",
        "d0 job:  90.0 %  14.4 GiB/16.0 GiB  4,827 MiB/s  elapsed 0:00:03  left 0:00:00",
        # the result, 0.3 s after the last report: too close to set a rate
        "d0 job: 100.0 %  16.0 GiB/16.0 GiB  4,827 MiB/s  elapsed 0:00:03  left 0:00:00",
        "d0 job: done in 0:00:03 (16.0 GiB, 4,948 MiB/s)",
    ]


def test_fios_status_of_a_timed_random_read_in_seconds_and_iops(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # fio --rw=randread --bs=4k --iodepth=8 --runtime=3 --time_based on a 64 MiB file
    rnd = FioJob("rnd", "rnd", 4096, iodepth=8, size=64 * MiB, runtime_s=3)
    plan = plan_of([rnd], capacity=64 * MiB)
    assert plan == Plan(total_s=3.0, iops=True) and not plan.long
    lines = follow_golden("status_randread_4k.json", plan, monkeypatch)
    assert lines == [
        "d0 job:  33.3 %  1/3 s, 261 MiB  66,709 IOPS  elapsed 0:00:01  left 0:00:02",
        "d0 job:  66.7 %  2/3 s, 650 MiB  76,590 IOPS  elapsed 0:00:02  left 0:00:01",
        "d0 job: 100.0 %  3/3 s, 1,017 MiB  81,851 IOPS  elapsed 0:00:03  left 0:00:00",
        # fio's start-up is in the time (the line's clock starts before fio's)
        "d0 job: 100.0 %  1,067 MiB, overrunning  81,851 IOPS  elapsed 0:00:03  left 0:00:00",
        "d0 job: done in 0:00:03 (1,067 MiB, 86,565 IOPS)",
    ]


def test_rates_are_on_fios_clock_when_reports_arrive_bunched(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def rates(bunched: bool) -> list[list[str]]:
        plan = Plan(total_bytes=16 * GiB)
        lines = follow_golden("status_fill_16g.json", plan, monkeypatch, bunched=bunched)
        return [re.findall(r"[\d,]+ MiB/s", line) for line in lines]

    assert rates(bunched=True) == rates(bunched=False)
    assert rates(bunched=True)[2] == ["4,827 MiB/s"]


@dataclass
class CountingHost(FakeMachine):
    """A test host whose disk's block-layer counters move 64 MiB and 512 writes a reading."""

    readings: int = 0

    def read(self, path: str) -> str | None:
        assert path == "/sys/class/block/sdb/stat"
        n, self.readings = self.readings, self.readings + 1
        sectors, ios = n * (64 << 20) // 512, n * 512
        return f"0 0 0 0 {ios} 0 {sectors} 0 0 0 0 0 0 0 0 0 0\n"


def test_a_host_run_is_followed_from_the_hosts_counters() -> None:
    host = CountingHost()
    docs: list[dict[str, Any]] = []
    with KernelFeed(docs.append, host, "sdb", every_s=0.02):
        time.sleep(0.15)
    assert len(docs) >= 3, "a reading every interval, and one at the end"
    written = [moved(d, ("write",))[0] for d in docs]
    assert written == [64 * (i + 1) << 20 for i in range(len(docs))], "since the start"
    assert moved(docs[-1], ("write",))[1] == 512 * len(docs)


def test_a_file_on_a_host_gets_no_feed() -> None:
    follow = Progress("x", Plan(1 << 30), lambda text, final: None)
    with feeding(follow, CountingHost(), None, live_status=False) as file:
        assert file is None, "a file on a host has no counters: the line at the end only"


def test_fios_own_status_feeds_the_line_where_it_comes_while_fio_runs() -> None:
    follow = Progress("x", Plan(1 << 30), lambda text, final: None)
    host = CountingHost()
    with feeding(follow, host, "sdb", live_status=True) as on_status:  # type: ignore[arg-type]
        assert on_status is follow and host.readings == 0, "fio's status, no counters read"
    with feeding(follow, host, "sdb", live_status=False) as on_status:  # type: ignore[arg-type]
        assert on_status is None and host.readings == 1, "the counters at the start"
    assert host.readings == 2, "and at the end"


def test_a_block_devices_unreadable_counters_are_an_error() -> None:
    class Gone(CountingHost):
        def read(self, path: str) -> str | None:
            return None

    assert counters_on(Gone(), None) is None  # type: ignore[arg-type]
    with pytest.raises(DeviceError, match=r"stat on ssh root@lab7: the kernel's counters"):
        counters_on(Gone(), "sdb")  # type: ignore[arg-type]


def test_a_stalled_run_says_so_gives_no_estimate_and_never_says_done() -> None:
    lines: list[tuple[str, bool]] = []
    follow = Progress(
        "d0 fill", Plan(total_bytes=GiB), lambda text, final: lines.append((text, final))
    )
    with pytest.raises(RuntimeError), follow:
        follow(status(100 * MiB, 100))
        assert "left: no estimate" not in lines[-1][0]
        follow.moved_at -= progress.STALLED_S + 32  # nothing has moved since, for 42 s
        follow(status(100 * MiB, 100))
        text = lines[-1][0]
        assert re.search(r"  stalled: no I/O completed for 0:00:4\d  elapsed ", text), text
        assert text.endswith("left: no estimate"), text
        raise RuntimeError("fio made no progress")
    text, final = lines[-1]
    assert final and re.fullmatch(r"d0 fill: stopped after 0:00:00, not done \(100 MiB, .*\)", text)
