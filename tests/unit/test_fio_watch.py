"""fio's timeout by size and its stall watch (pytest_ssd.fio.watch)."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_ssd.errors import ConfigError
from pytest_ssd.fio import watch
from pytest_ssd.fio.job import FioJob
from pytest_ssd.fio.watch import FLOOR_RATE, TIMEOUT_MARGIN_S, StallWatch, timeout_for
from pytest_ssd.machine.machine import LOCAL, Machine
from tests.shell_machine import Shell

MiB, GiB = 1 << 20, 1 << 30


def test_the_timeout_is_by_size_not_six_hours() -> None:
    small = FioJob("small", "seq", 128 << 10, read_pct=0, size=64 * MiB)
    assert timeout_for([small], None) == TIMEOUT_MARGIN_S + 64
    big = FioJob("fill", "seq", 128 << 10, read_pct=0, io_bytes=4 << 40, numjobs=2)
    assert timeout_for([big], None) == TIMEOUT_MARGIN_S + 2 * (4 << 40) / FLOOR_RATE
    timed = FioJob("timed", "rnd", 4096, runtime_s=30, ramp_s=5)
    whole = FioJob("whole", "seq", 1 << 20)  # one pass over the target
    assert timeout_for([timed, whole], 10 * GiB) == TIMEOUT_MARGIN_S + 35 + 10 * 1024


def test_the_allowance_is_by_kind_and_the_environment_sets_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    read, write = FioJob("r", "rnd", 4096), FioJob("w", "rnd", 4096, read_pct=0)
    monkeypatch.delenv(watch.STALL_ENV, raising=False)
    assert watch.stall_allowance([read]) == watch.READ_STALL_S == 60
    assert watch.stall_allowance([read, write]) == watch.WRITE_STALL_S == 120
    monkeypatch.setenv(watch.STALL_ENV, "7")
    assert watch.stall_allowance([write]) == 7
    for bad in ("0", "nan", "soon", "1e9"):
        monkeypatch.setenv(watch.STALL_ENV, bad)
        with pytest.raises(ConfigError, match="give seconds between 1 and 86400"):
            watch.stall_allowance([read])


def test_the_watch_stops_only_when_nothing_completes(monkeypatch: pytest.MonkeyPatch) -> None:
    now = [0.0]
    monkeypatch.setattr(watch.time, "monotonic", lambda: now[0])
    readings = iter([(1, 8), (2, 16), (2, 16), (2, 16), None, (2, 16), (2, 16)])
    stall = StallWatch(lambda: next(readings), 10.0, "/dev/loop7", every_s=1.0)
    said = []
    for t in (1, 2, 6, 12.5, 13.5, 14.5, 24.5):
        now[0] = t
        said.append(stall())
    # moved at 2; still at 12.5 (10.5 s); unreadable at 13.5 counts as moving; still at 24.5
    assert said[:3] == [None, None, None] and said[4:6] == [None, None]
    assert (
        said[3]
        == said[6]
        == (
            "fio made no progress on /dev/loop7 for 10 s (no I/O completed: the device or its"
            " driver hangs); stopped"
        )
    )


def test_the_counters_are_what_completes() -> None:
    # reads, merged, sectors, ms, writes, merged, sectors, ms, in flight, io ms, queue ms,
    # discards, merged, sectors, ms, flushes, ms
    text = "1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17\n"
    assert watch.parse_done(text) == (1, 3, 5, 7, 12, 14, 16)
    assert watch.parse_done("1 2 3 4 5 6 7 8 9 10 11\n") == (1, 3, 5, 7)  # an older kernel


@pytest.mark.parametrize("machine", [LOCAL, Shell()], ids=["here", "by-commands"])
def test_a_files_size_and_watch_are_read_on_its_machine(machine: Machine, tmp_path: Path) -> None:
    data = tmp_path / "target"
    data.write_bytes(b"x" * 12345)
    assert watch.capacity(machine, str(data)) == 12345
    assert watch.capacity(machine, str(tmp_path / "absent")) is None
    found = watch.stall_watch(machine, [FioJob("j", "seq", 4096)], str(tmp_path / "absent"), "x")
    assert found is None, "no device, no watch"


#: devices tests attach and detach, whose size may change between two reads
SETTLES = ("loop", "nbd", "zram", "ram")


def test_a_block_device_is_read_from_its_sysfs_on_its_machine() -> None:
    # not a loop device: other tests attach and detach those (a size read between two reads)
    name = next(
        (
            p.name
            for p in sorted(Path("/sys/class/block").glob("*"))
            if not p.name.startswith(SETTLES) and Path(f"/dev/{p.name}").exists()
        ),
        None,
    )
    if name is None:
        pytest.skip("no block device here that other tests leave alone")
    sectors = int(Path(f"/sys/class/block/{name}/size").read_text())
    for machine in (LOCAL, Shell()):
        assert watch.capacity(machine, f"/dev/{name}") == sectors * 512
        found = watch.stall_watch(machine, [FioJob("j", "seq", 4096)], f"/dev/{name}", "x")
        assert found is not None and found.every_s == machine.poll_s
        assert found._last is not None, "the counters before fio starts"
    assert (LOCAL.poll_s, Shell().poll_s) == (watch.EVERY_S, 5.0)
