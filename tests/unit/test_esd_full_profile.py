"""The jobs ``--ssd-profile=full`` plans for a 960 GB enterprise drive carry METHOD §5's numbers.

Nothing runs: the preconditioning, sweep and QoS jobs are inspected as fio
would receive them, and the plan of states from a purge.
"""

from __future__ import annotations

from pytest_ssd.device.drive_class import IndirectionUnit
from pytest_ssd.fio.job import FioJob
from pytest_ssd.methods.esd.workloads import (
    RND_STEADY,
    SEQ_STEADY,
    WORKERS_POINT,
    Limits,
    by_block_size,
    by_queue_depth,
    precondition,
    qos_jobs,
    timing,
)
from pytest_ssd.state.profile import Profile
from pytest_ssd.state.spec import parse_state
from pytest_ssd.state.steps import Context, path

KiB, MiB = 1 << 10, 1 << 20
GB960 = 960_197_124_096  # a "960 GB" drive (PM983 MZQLB960HAJR): 1,875,385,008 LBAs of 512 B
FULL = Profile("full")
ROW = timing(FULL)
NONE = Limits()


def opts(job: FioJob) -> dict[str, str]:
    return dict(job.options())


def test_preconditioning_numbers() -> None:
    seq, rnd = precondition(SEQ_STEADY, GB960, FULL), precondition(RND_STEADY, GB960, FULL)
    for plan, rw, bs in ((seq, "write", 128 * KiB), (rnd, "randwrite", 4 * KiB)):
        wipc, wdpc = (opts(job) for job in plan.jobs)
        for o in (wipc, wdpc):
            assert (o["rw"], o["bs"], o["iodepth"], o["numjobs"]) == (rw, str(bs), "256", "1")
            assert (o["ioengine"], o["direct"], o["offset"], o["size"]) == (
                "io_uring",
                "1",
                "0",
                str(GB960),
            )
        assert wipc["io_size"] == str(2 * GB960), "WIPC: 2 x capacity"
        assert "steadystate" not in wipc
        assert wdpc["io_size"] == str(23 * GB960), "WDPC: at most 23 x capacity"
        assert (wdpc["steadystate"], wdpc["steadystate_duration"]) == ("bw_slope:10%", "30")
        assert plan.wdpc.log_avg_ms == 1000 and "runtime" not in wdpc


def test_flow_from_a_purge_rests_once() -> None:
    ctx = Context(GB960, FULL)
    steps = path(None, parse_state(SEQ_STEADY), ctx)
    assert [s.kind for s in steps] == ["purge", "idle", "fio", "steady"]
    assert steps[1].idle_s == 900, "15 minutes after the purge, no idle after that"
    onward = path(parse_state(SEQ_STEADY), parse_state(RND_STEADY), ctx)
    assert [s.kind for s in onward] == ["fio", "steady"], "RND 2 x capacity, then steady state"
    assert onward[0].write_bytes == 2 * GB960


def check_timed(job: FioJob) -> None:
    o = opts(job)
    assert (o["ramp_time"], o["runtime"], o["time_based"]) == ("30", "300", "1")
    assert (o["ioengine"], o["offset"], o["size"]) == ("io_uring", "0", str(GB960))


def test_block_size_sweeps() -> None:
    for pattern in ("seq", "rnd"):
        for read_pct in (100, 0):
            sweep = by_block_size(pattern, read_pct, GB960, ROW, NONE)
            sizes = [p.job.block_size for p in sweep.points]
            assert sizes == [512 * 2**n for n in range(12)], "512 B ... 1 MiB"
            assert sizes[-1] == MiB and {p.job.iodepth for p in sweep.points} == {32}
            for point in sweep.points:
                check_timed(point.job)
                assert point.job.read_pct == read_pct and point.job.pattern == pattern


def test_queue_depth_sweeps() -> None:
    seq = by_queue_depth("seq", 100, GB960, ROW, NONE)
    assert [p.job.iodepth for p in seq.points] == [1, 2, 4, 8, 16, 32, 64, 128, 256]
    assert {p.job.block_size for p in seq.points} == {128 * KiB}
    rnd = by_queue_depth("rnd", 0, GB960, ROW, NONE, workers=[WORKERS_POINT])
    last = rnd.points[-1].job
    assert (last.numjobs, last.iodepth, last.block_size, last.rw) == (4, 32, 4 * KiB, "randwrite")
    assert opts(last)["group_reporting"] == "1" and rnd.points[-1].x == 128
    mixed = by_queue_depth("rnd", 70, GB960, ROW, NONE)
    assert {opts(p.job)["rwmixread"] for p in mixed.points} == {"70"}
    for point in (*seq.points, *rnd.points, *mixed.points):
        check_timed(point.job)


def test_qos_at_qd1() -> None:
    points = qos_jobs(GB960, ROW, NONE)
    assert [(p.job.rw, p.job.read_pct) for p in points] == [
        ("randread", 100),
        ("randwrite", 0),
        ("randrw", 70),
    ]
    for point in points:
        assert (point.job.iodepth, point.job.numjobs, point.job.block_size) == (1, 1, 4 * KiB)
        check_timed(point.job)
        assert 99.99 in point.job.percentiles


def test_indirection_unit_of_16k_skips_smaller_writes_only() -> None:
    limits = Limits(512, IndirectionUnit(16 * KiB, "NVMe NPWG 3"))
    writes = by_block_size("rnd", 0, GB960, ROW, limits)
    assert list(writes.skipped) == [
        f"rnd-write-bs{n}" for n in ("512B", "1KiB", "2KiB", "4KiB", "8KiB")
    ]
    assert "indirection unit of 16384 B (NVMe NPWG 3)" in writes.skipped["rnd-write-bs4KiB"]
    assert not by_block_size("rnd", 100, GB960, ROW, limits).skipped, "reads all run"
    assert [p.job.name for p in qos_jobs(GB960, ROW, limits) if p.skipped] == [
        "qos-write",
        "qos-70r",
    ]
    four_k = Limits(4096, IndirectionUnit(4096, "queue/optimal_io_size"))
    skipped = by_block_size("seq", 0, GB960, ROW, four_k).skipped
    assert list(skipped) == ["seq-write-bs512B", "seq-write-bs1KiB", "seq-write-bs2KiB"]
    assert "logical block" in skipped["seq-write-bs512B"], "a 4 KiB IU skips nothing by itself"
