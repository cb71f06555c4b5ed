"""The SNIA PTS jobs ``--ssd-profile=full`` sends fio for a 960 GB drive carry the PTS's numbers.

Nothing runs: the plans, the round jobs and the way to the PTS state are
inspected as fio would receive them (METHOD §3, §5; SNIA SSS PTS).
"""

from __future__ import annotations

from pytest_ssd.fio.job import FioJob, render
from pytest_ssd.methods.snia.run import PTS_STATE
from pytest_ssd.methods.snia.workloads import Cell, plan
from pytest_ssd.state.profile import Profile
from pytest_ssd.state.spec import parse_state
from pytest_ssd.state.steps import Context, path
from pytest_ssd.steady.snia import SniaRule

KiB = 1 << 10
GB960 = 1_875_385_008 * 512  # a "960 GB" drive: 960,197,124,096 bytes
FULL, QUICK = Profile("full"), Profile("quick")
IOPS_BLOCKS = [1024 * KiB, 128 * KiB, 64 * KiB, 32 * KiB, 16 * KiB, 8 * KiB, 4 * KiB, 512]


def opts(job: FioJob) -> dict[str, str]:
    return dict(job.options())


def test_full_rule_and_cells_are_the_pts() -> None:
    full = plan(FULL)
    assert full.cell_s == 60, "1-minute cells"
    assert full.rule == SniaRule(window=5, range_pct=20.0, slope_pct=10.0, max_rounds=25)


def test_iops_round_on_960gb() -> None:
    test = plan(FULL).tests()["iops"]
    jobs = [opts(j) for j in test.round_jobs(GB960, 60)]
    assert len(jobs) == 7 * 8
    mixes = [
        int(j.get("rwmixread", {"randread": 100, "randwrite": 0}.get(j["rw"], -1))) for j in jobs
    ]
    # R/W mix the outer loop, block size the inner, both in the PTS's order
    assert mixes == [m for m in (100, 95, 65, 50, 35, 5, 0) for _ in range(8)]
    assert [int(j["bs"]) for j in jobs] == IOPS_BLOCKS * 7
    assert {j["rw"] for j in jobs} == {"randread", "randrw", "randwrite"}
    for job in jobs:
        assert (job["iodepth"], job["numjobs"], job["offset"]) == ("32", "4", "0")
        assert (job["time_based"], job["runtime"]) == ("1", "60")
        assert "ramp_time" not in job and "io_size" not in job
        bs = int(job["bs"])
        assert int(job["size"]) == GB960 // bs * bs, "the whole drive, whole blocks"
    assert test.cells[test.tracked_index] == Cell(0, 4 * KiB) and test.metric == "iops"


def test_throughput_and_latency_rounds_on_960gb() -> None:
    tests = plan(FULL).tests()
    assert list(tests) == ["iops", "throughput-1MiB", "throughput-128KiB", "latency"]
    for name, bs in (("throughput-1MiB", 1024 * KiB), ("throughput-128KiB", 128 * KiB)):
        test = tests[name]
        jobs = [opts(j) for j in test.round_jobs(GB960, 60)]
        assert [(j["rw"], j["bs"]) for j in jobs] == [("read", str(bs)), ("write", str(bs))]
        assert {(j["iodepth"], j["numjobs"], j["runtime"]) for j in jobs} == {("32", "1", "60")}
        assert test.cells[test.tracked_index] == Cell(0, bs) and test.metric == "bw_mib_s"
    latency = tests["latency"]
    jobs = [opts(j) for j in latency.round_jobs(GB960, 60)]
    assert [(j["rw"], j.get("rwmixread"), j["bs"]) for j in jobs] == [
        (rw, mix, bs)
        for rw, mix in (("randread", None), ("randrw", "65"), ("randwrite", None))
        for bs in ("8192", "4096", "512")
    ]
    assert {(j["iodepth"], j["numjobs"], j["runtime"]) for j in jobs} == {("1", "1", "60")}
    assert latency.cells[latency.tracked_index] == Cell(0, 4 * KiB)
    assert latency.metric == "clat_mean_us"


def test_a_round_is_one_fio_process_with_stonewalled_cells() -> None:
    jobs = plan(FULL).tests()["latency"].round_jobs(GB960, 60)
    text = render(jobs, "/dev/nvme0n1")
    assert text.count("stonewall") == len(jobs) - 1


def test_pts_state_is_purge_then_wipc_2x_capacity() -> None:
    (marker,) = PTS_STATE.mark.args
    assert PTS_STATE.mark.kwargs == {"pristine": True}
    steps = path(None, parse_state(marker), Context(GB960, FULL))
    assert [s.kind for s in steps] == ["purge", "idle", "fio"]
    assert steps[1].idle_s == 900
    wipc = opts(steps[2].jobs[0])
    assert (wipc["rw"], wipc["bs"], wipc["iodepth"]) == ("write", "131072", "256")
    assert (wipc["size"], wipc["io_size"]) == (str(GB960), str(2 * GB960))


def test_quick_plan_is_the_documented_reduction() -> None:
    quick = plan(QUICK)
    assert quick.cell_s == 1 and quick.rule == SniaRule(max_rounds=6)
    iops = quick.tests()["iops"]
    assert iops.mixes == (100, 65, 0) and iops.block_sizes == (128 * KiB, 4 * KiB, 512)
    assert iops.tracked in iops.cells
    assert quick.tests()["latency"].cells == plan(FULL).tests()["latency"].cells
