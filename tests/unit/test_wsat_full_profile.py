"""The WSAT jobs ``--ssd-profile=full`` sends fio for a 960 GB drive: seed 000's numbers.

RND 4 KiB writes and SEQ 512 B 50/50 until 4 x capacity or 24 h, from FOB
(METHOD §6).  Nothing runs.
"""

from __future__ import annotations

from pytest_ssd.fio.job import FioJob, render
from pytest_ssd.methods.wsat.workloads import TIMING, WORKLOADS, amount_of, timing
from pytest_ssd.state.profile import Profile
from pytest_ssd.state.spec import StateSpec
from pytest_ssd.state.steps import Context, path

GB960 = 1_875_385_008 * 512
FULL = Profile("full")


def effective(job: FioJob) -> dict[str, str]:
    """The options as fio reads the job file: a later line wins."""
    lines = render([job], "/dev/nvme0n1", log_prefix="/tmp/log").splitlines()
    return dict(line.split("=", 1) for line in lines if "=" in line)


def test_rnd_4k_write_until_4x_capacity_or_24h() -> None:
    job = WORKLOADS["rnd-4k-write"].job(GB960, timing(FULL))
    opts = effective(job)
    assert (opts["rw"], opts["bs"], opts["iodepth"], opts["numjobs"]) == (
        "randwrite",
        "4096",
        "32",
        "1",
    )
    assert (opts["offset"], opts["size"]) == ("0", str(GB960)), "the whole drive"
    assert opts["io_size"] == str(4 * GB960) == str(amount_of(job)), "4 x capacity"
    assert opts["runtime"] == str(24 * 3600) and opts["time_based"] == "0", "or 24 h, first wins"
    assert opts["log_avg_msec"] == "1000" and "write_bw_log" in opts
    assert job.planned_seconds == 24 * 3600, "fio's timeout follows the cap"


def test_seq_512b_mix_for_4x_capacity() -> None:
    opts = effective(WORKLOADS["seq-512b-50r"].job(GB960, timing(FULL)))
    assert (opts["rw"], opts["rwmixread"], opts["bs"], opts["iodepth"]) == ("rw", "50", "512", "32")
    assert opts["io_size"] == str(4 * GB960) and opts["runtime"] == str(24 * 3600)


def test_rounds_and_fob_start() -> None:
    assert TIMING["full"].round_s == 60, "the PTS's WSAT reports per minute"
    steps = path(StateSpec("wipc"), StateSpec("fob"), Context(GB960, FULL))
    assert [s.kind for s in steps] == ["purge", "idle"] and steps[1].idle_s == 900


def test_quick_scales_to_the_span_and_caps_time() -> None:
    quick = TIMING["quick"]
    job = WORKLOADS["rnd-4k-write"].job(1 << 30, quick)
    assert amount_of(job) == 4 << 30 and job.runtime_s == quick.time_cap_s == 20
    assert (quick.log_ms, quick.round_s) == (100, 1)
