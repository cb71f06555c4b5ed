"""Live lines of long steps and measurements, from fio's status documents."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_ssd.fio.job import FioJob
from pytest_ssd.fio.status import moved
from pytest_ssd.state import progress
from pytest_ssd.state.progress import Plan, Progress, plan_of
from pytest_ssd.state.relay import Relay, worker_writer

MiB, GiB = 1 << 20, 1 << 30


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
    assert plan_of([fill, rnd], capacity=2 * GiB) == Plan(total_bytes=2 * GiB + 4 * 256 * MiB)
    plan = plan_of([fill, timed], capacity=2 * GiB)
    assert plan == Plan(total_s=35.0), "with a time-based job: seconds"
    assert plan.long and not plan_of([FioJob("q", "rnd", 4096, io_bytes=MiB)], GiB).long


def test_a_line_says_what_how_far_how_fast_and_how_long(monkeypatch: pytest.MonkeyPatch) -> None:
    clock = iter([100.0, 101.0, 111.0, 121.0])
    monkeypatch.setattr(progress.time, "monotonic", lambda: next(clock))
    lines: list[tuple[str, bool]] = []
    follow = Progress(
        "d0 fill-pass-1", Plan(total_bytes=20 * GiB), lambda t, f: lines.append((t, f))
    )
    follow(status(0, 0))  # t = 101 s
    follow(status(5 * GiB, 40960))  # t = 111 s: 512 MiB/s, 4,096 IOPS
    assert lines[-1] == (
        "d0 fill-pass-1:  25.0 %  5.0 GiB/20.0 GiB  512 MiB/s  4,096 IOPS"
        "  elapsed 0:00:11  left 0:00:30",
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
