"""The jobs ``--ssd-profile=full`` generates for a 1 TB drive carry the method's exact numbers.

Nothing runs: the job tables, the cSSD layout and the transition steps are
inspected as fio would receive them (METHOD §1, §4; seed 000).
"""

from __future__ import annotations

from pytest_ssd.fio.job import FioJob
from pytest_ssd.methods.csd.workloads import fill, lowqd, profiles
from pytest_ssd.state.layout import layout
from pytest_ssd.state.profile import Profile
from pytest_ssd.state.spec import StateSpec
from pytest_ssd.state.steps import Context, path

KiB, MiB, GiB = 1 << 10, 1 << 20, 1 << 30
TB = 1_000_204_886_016  # a "1 TB" drive: 1,953,525,168 LBAs of 512 B
FULL = Profile("full")
CSSD = layout(StateSpec("cssd"), TB, FULL.span(TB))
RND, SEQ = CSSD.region("rnd"), CSSD.region("seq")


def opts(job: FioJob) -> dict[str, str]:
    return dict(job.options())


def test_cssd_preconditioning_on_1tb() -> None:
    steps = path(None, StateSpec("cssd"), Context(TB, FULL))
    kinds = [s.kind for s in steps]
    assert kinds == ["purge", "idle", "fio", "idle", "fio", "idle", "discard", "idle"]
    assert steps[1].idle_s == 900, "15 minutes of rest after the purge"
    seq_fill, rnd_fill = (opts(s.jobs[0]) for s in steps if s.kind == "fio")
    assert (seq_fill["rw"], seq_fill["bs"], seq_fill["io_size"]) == ("write", "131072", str(2 * TB))
    assert (rnd_fill["rw"], rnd_fill["bs"]) == ("randwrite", "4096")
    assert (rnd_fill["offset"], rnd_fill["size"]) == ("0", str(8 * GiB)), "the first 8 GiB"
    (trim,) = [s for s in steps if s.kind == "discard"]
    used = TB * 3 // 4 // MiB * MiB
    assert trim.discard == (used, TB - used), "the last 25 % of LBA space"
    assert (SEQ.offset, SEQ.end) == (8 * GiB, used) and CSSD.notes == ()


def test_fill_drive_full_numbers() -> None:
    row = fill.PROFILES["full"]
    job = opts(fill.fill_job(1, TB, row))
    assert (job["rw"], job["bs"], job["iodepth"]) == ("write", "131072", "256")
    assert int(job["size"]) == TB // (128 * KiB) * 128 * KiB, "100 % of capacity, whole blocks"
    assert row.log_ms == 100 and row.passes == 2 and row.quantum == 128 * MiB


def test_quick_profiles_full_numbers() -> None:
    timing = profiles.CDM_TIMING["full"]
    assert (timing.passes, timing.pass_s, timing.interval_s, timing.span) == (5, 5.0, 5.0, GiB)
    labels = {name: [t.label for t in tests] for name, tests in profiles.CDM_PROFILES.items()}
    assert labels["default"] == ["SEQ1M Q8T1", "SEQ1M Q1T1", "RND4K Q32T1", "RND4K Q1T1"]
    assert labels["nvme"] == ["SEQ1M Q8T1", "SEQ128K Q32T1", "RND4K Q32T16", "RND4K Q1T1"]


def test_sync_writes_and_latency_full_numbers() -> None:
    seq, rnd = (opts(j) for j in profiles.sync_jobs(profiles.SYNC_SIZE["full"], SEQ, RND))
    for job, bs, region in ((seq, "131072", SEQ), (rnd, "4096", RND)):
        assert (job["bs"], job["iodepth"], job["fsync"], job["io_size"]) == (bs, "1", "1", str(GiB))
        assert (job["offset"], job["size"]) == (str(region.offset), str(region.size))
    latency = [opts(j) for j in profiles.latency_jobs(profiles.LATENCY_SIZE["full"], RND)]
    assert [j.get("rwmixread", j["rw"]) for j in latency] == ["randread", "70", "randwrite"]
    assert all(int(j["io_size"]) // 4096 >= 100_000 for j in latency), "p99.999 resolvable"


def test_low_qd_matrix_full_numbers() -> None:
    plan = lowqd.PLANS["full"]
    assert plan.read_shares == tuple(range(0, 101, 10)) and plan.queue_depths == (1, 2, 4)
    assert plan.repetitions == 5
    for pattern, region, bs, amount in (
        ("seq", SEQ, 128 * KiB, 3 * 128 * MiB),
        ("rnd", RND, 4 * KiB, 160 * 4 * MiB),
    ):
        jobs = [opts(p.job) for p in lowqd.plan_jobs(pattern, region, plan)]
        assert len(jobs) == 11 * 3 * 5
        assert {j["bs"] for j in jobs} == {str(bs)}
        assert {int(j["io_size"]) for j in jobs} == {amount}
        assert {j["iodepth"] for j in jobs} == {"1", "2", "4"}
        assert all(region.contains(int(j["offset"]), int(j["size"])) for j in jobs)
