"""Low-QD by read/write ratio: the matrix as fio jobs, trimmed means, weights, ranking, graphs."""

from __future__ import annotations

import json
import zlib
from collections.abc import Sequence

import numpy as np
import pytest
from matplotlib.lines import Line2D
from matplotlib.patches import Rectangle

from pytest_ssd.errors import ConfigError, ParseError
from pytest_ssd.figures import render as render_figure
from pytest_ssd.fio.job import FioJob, fio_seed, render
from pytest_ssd.fio.results import DirectionResult, JobResult
from pytest_ssd.methods.csd.analysis.lowqd import (
    Ranked,
    RatioMatrix,
    point_values,
    ranking,
    trimmed_mean,
    weighted_curve,
)
from pytest_ssd.methods.csd.figures.lowqd import ranking_bars, ratio_curves, weighted_curves
from pytest_ssd.methods.csd.workloads.lowqd import (
    PLANS,
    Amount,
    LowQdPlan,
    plan_jobs,
    point_jobs,
    throughput_mib_s,
)
from pytest_ssd.state.layout import Region

KiB, MiB, GiB = 1 << 10, 1 << 20, 1 << 30
PNG = b"\x89PNG\r\n\x1a\n"
RND = Region("rnd", 0, 8 * GiB, "rnd")
SEQ = Region("seq", 8 * GiB, 100 * GiB, "seq")
SMALL = LowQdPlan((0, 50, 100), (1, 2, 4), 3, Amount(8 * MiB, 3), Amount(16 * KiB, 160))


# --- trimmed mean, weights, ranking -------------------------------------------------------


def test_trimmed_mean_drops_one_max_and_one_min() -> None:
    assert trimmed_mean([5, 1, 3, 9, 4]) == pytest.approx(4.0)  # (3 + 4 + 5) / 3
    assert trimmed_mean([100.0, 102.0, 98.0, 250.0, 10.0]) == pytest.approx(100.0)
    # ties: one of each is dropped, not every copy
    assert trimmed_mean([2, 2, 2, 8]) == pytest.approx(2.0)
    assert trimmed_mean([1, 1, 5]) == pytest.approx(1.0)
    rows = trimmed_mean([[1, 2, 3, 4, 100], [10, 0, 20, 30, 40]])
    assert rows.tolist() == pytest.approx([3.0, 20.0])  # (2+3+4)/3, (10+20+30)/3


def test_trimmed_mean_needs_three_samples() -> None:
    with pytest.raises(ConfigError, match="2 samples"):
        trimmed_mean([1.0, 2.0])


def test_weighted_curve_is_70_20_10() -> None:
    curves = np.array([[10.0, 20.0], [30.0, 40.0], [50.0, 60.0]])
    # 0.7*10 + 0.2*30 + 0.1*50 = 18; 0.7*20 + 0.2*40 + 0.1*60 = 28
    assert weighted_curve(curves, (1, 2, 4)).tolist() == pytest.approx([18.0, 28.0])
    # QD order in the matrix does not matter, the QD does
    swapped = weighted_curve(curves[::-1], (4, 2, 1))
    assert swapped.tolist() == pytest.approx([18.0, 28.0])
    assert weighted_curve(curves, (1, 2, 4), {1: 0.5, 4: 0.5}).tolist() == pytest.approx(
        [30.0, 40.0]
    )


def test_weighted_curve_refuses_bad_weights() -> None:
    curves = np.ones((2, 3))
    with pytest.raises(ConfigError, match=r"QD \[4\] weighted but not measured"):
        weighted_curve(curves, (1, 2))
    with pytest.raises(ConfigError, match=r"add up to 0\.9"):
        weighted_curve(np.ones((3, 3)), (1, 2, 4), {1: 0.7, 2: 0.1, 4: 0.1})


def test_ranking_is_best_first_and_ties_share_a_place() -> None:
    assert ranking({"a": 10.0, "b": 30.0, "c": 20.0}) == (
        Ranked(1, "b", 30.0),
        Ranked(2, "c", 20.0),
        Ranked(3, "a", 10.0),
    )
    assert [(r.place, r.device) for r in ranking({"y": 5.0, "x": 5.0, "z": 1.0})] == [
        (1, "x"),
        (1, "y"),
        (3, "z"),
    ]


def matrix(scale: float = 1.0, block_size: int = 4 * KiB) -> RatioMatrix:
    # QD q, read share s, repetition r: 100 q + s + r, with one outlier run per point
    qds, shares = (1, 2, 4), (0, 50, 100)
    base = np.array([[[100.0 * q + s + r for r in range(5)] for s in shares] for q in qds])
    base[..., 4] *= 3  # the outlier: dropped as the max
    return RatioMatrix("rnd", block_size, shares, qds, base * scale)


def test_ratio_matrix_trims_weights_and_scores() -> None:
    m = matrix()
    # runs 100q+s + (0, 1, 2, 3, 3*(4)+...) -> drop min (r=0) and max (outlier): mean of r=1..3
    expected = np.array([[100.0 * q + s + 2 for s in (0, 50, 100)] for q in (1, 2, 4)])
    np.testing.assert_allclose(m.trimmed, expected)
    weighted = 0.7 * expected[0] + 0.2 * expected[1] + 0.1 * expected[2]
    assert m.weighted().tolist() == pytest.approx(weighted.tolist())
    assert m.score() == pytest.approx(weighted.mean())  # 150 + 52 = 202
    assert m.score() == pytest.approx(202.0)
    assert m.iops_per_mib_s == 256


def test_ratio_matrix_as_dict_keeps_every_run() -> None:
    data = json.loads(json.dumps(matrix().as_dict()))
    assert data["read_pct"] == [0, 50, 100] and data["repetitions"] == 5
    assert data["samples_mib_s"]["qd2"][1] == [250.0, 251.0, 252.0, 253.0, 762.0]
    assert data["trimmed_mib_s"]["qd2"][1] == pytest.approx(252.0)
    assert data["trimmed_iops"]["qd2"][1] == pytest.approx(252.0 * 256)
    assert data["score_mib_s"] == pytest.approx(202.0)
    assert data["score_iops"] == pytest.approx(202.0 * 256)
    assert data["weights"] == {"qd1": 0.7, "qd2": 0.2, "qd4": 0.1}


def test_ratio_matrix_checks_its_shape() -> None:
    with pytest.raises(ConfigError, match="expected"):
        RatioMatrix("seq", 128 * KiB, (0, 100), (1, 2, 4), np.ones((3, 3, 5)))


# --- the matrix as fio jobs ----------------------------------------------------------------


def test_full_plan_is_the_method() -> None:
    full = PLANS["full"]
    assert full.read_shares == (0, 10, 20, 30, 40, 50, 60, 70, 80, 90, 100)
    assert full.queue_depths == (1, 2, 4) and full.repetitions == 5
    assert full.seq.total == 384 * MiB and full.rnd.total == 640 * MiB
    assert (full.seq.describe(), full.rnd.describe()) == ("3 × 128MiB", "160 × 4MiB")
    # the RND point is one sample of 163,840 I/Os: enough to resolve five nines
    assert full.rnd.total // (4 * KiB) == 163_840 >= 10**5
    assert full.points == 165
    quick = PLANS["quick"]
    assert quick.queue_depths == full.queue_depths and quick.repetitions >= 3


def test_plan_needs_three_repetitions() -> None:
    with pytest.raises(ConfigError, match="at least 3"):
        LowQdPlan((0, 100), (1,), 2, Amount(MiB, 1), Amount(MiB, 1))


def test_rnd_jobs_span_the_region_by_amount_in_sweeps() -> None:
    jobs = plan_jobs("rnd", RND, PLANS["full"])
    assert len(jobs) == 165 and len({p.job.name for p in jobs}) == 165
    first = jobs[0].job
    assert (first.name, first.pattern, first.block_size) == ("rnd-q1-r000-n0", "rnd", 4 * KiB)
    assert all((p.job.offset, p.job.size) == (0, 8 * GiB) for p in jobs)
    assert all(p.job.io_bytes == 640 * MiB and p.job.runtime_s is None for p in jobs)
    # QD ascending, read share ascending, each point's 5 repetitions back to back
    order = [(p.point.queue_depth, p.point.read_pct) for p in jobs[::5]]
    assert order == [(qd, share) for qd in (1, 2, 4) for share in range(0, 101, 10)]
    assert [p.point.repetition for p in jobs[:10]] == [0, 1, 2, 3, 4] * 2
    # every job its own random stream (no point reads what the one before it wrote)
    assert len({p.job.seed for p in jobs}) == 165
    assert jobs[0].job.seed == zlib.crc32(b"rnd-q1-r000-n0")
    by_point = {(p.point.queue_depth, p.point.read_pct, p.point.repetition): p.job for p in jobs}
    job = by_point[(2, 70, 3)]
    assert (job.iodepth, job.read_pct, job.rw, job.name) == (2, 70, "randrw", "rnd-q2-r070-n3")


def test_seq_jobs_take_slices_in_turn() -> None:
    jobs = plan_jobs("seq", SEQ, PLANS["full"])
    amount = 384 * MiB
    offsets = [p.job.offset for p in jobs]
    assert offsets[:3] == [8 * GiB, 8 * GiB + amount, 8 * GiB + 2 * amount]
    assert all(p.job.size == amount == p.job.io_bytes for p in jobs)
    assert all(SEQ.contains(p.job.offset, amount) for p in jobs)
    slices = SEQ.size // amount  # 266 slices of 384 MiB in 100 GiB: no slice used twice
    assert slices > 165 and len(set(offsets)) == 165
    # a region of 4 slices: used in turn, round and round
    small = Region("seq", 0, 4 * amount + MiB, "seq")
    turns = [p.job.offset // amount for p in plan_jobs("seq", small, PLANS["full"])[:6]]
    assert turns == [0, 1, 2, 3, 0, 1]


def test_seq_on_a_region_smaller_than_two_slices_wraps_over_it() -> None:
    tiny = Region("seq", 128 * MiB, 512 * MiB, "seq")
    for item in plan_jobs("seq", tiny, PLANS["full"]):
        assert (item.job.offset, item.job.size, item.job.io_bytes) == (
            128 * MiB,
            512 * MiB,
            384 * MiB,
        )


def test_jobs_render_as_amount_based_fio_jobs() -> None:
    jobs = [p.job for p in plan_jobs("rnd", RND, SMALL)]
    text = render(jobs, "/dev/loop9")
    assert text.count("stonewall") == len(jobs) - 1
    section = text.split("[rnd-q2-r050-n1]")[1].split("\n\n")[0]
    job = next(j for j in jobs if j.name == "rnd-q2-r050-n1")
    for line in (
        "rw=randrw",
        "rwmixread=50",
        "iodepth=2",
        "bs=4096",
        f"io_size={160 * 16 * KiB}",
        "randrepeat=0",
        f"randseed={fio_seed(zlib.crc32(b'rnd-q2-r050-n1'), jobs.index(job) + 1)}",
        "size=8589934592",
        "offset=0",
    ):
        assert line in section.splitlines()
    assert "time_based" not in text and "runtime" not in text


def test_region_too_small_for_a_block_is_refused() -> None:
    with pytest.raises(ConfigError, match="does not fit"):
        plan_jobs("seq", Region("seq", 0, 64 * KiB, "seq"), SMALL)


# --- from fio results to the matrix ---------------------------------------------------------


def direction(name: str, bw_mib_s: float) -> DirectionResult:
    return DirectionResult(
        name,
        io_bytes=4096,
        total_ios=1,
        runtime_ms=1,
        iops=0.0,
        bw_bytes_s=bw_mib_s * MiB,
        clat=None,
        lat_mean_ns=None,
        slat_mean_ns=None,
    )


def result_for(job: FioJob) -> JobResult:
    # read MiB/s = 1000 q + share + repetition, write MiB/s = 10
    qd, share, rep = job.iodepth, job.read_pct, int(job.name[-1])
    directions = {}
    if share:
        directions["read"] = direction("read", 1000.0 * qd + share + rep)
    if share < 100:
        directions["write"] = direction("write", 10.0)
    return JobResult(job.name, 0, 1.0, 0.0, 0.0, {}, directions)


def test_throughput_adds_reads_and_writes() -> None:
    job = FioJob("rnd-q1-r050-n0", "rnd", 4096, read_pct=50, io_bytes=4096)
    assert throughput_mib_s(result_for(job)) == pytest.approx(1050.0 + 10.0)


def test_point_jobs_are_the_points_repetitions_where_the_matrix_puts_them() -> None:
    every = plan_jobs("seq", SEQ, SMALL)
    point = point_jobs("seq", SEQ, SMALL, 2, 50)
    assert [p.job.name for p in point] == ["seq-q2-r050-n0", "seq-q2-r050-n1", "seq-q2-r050-n2"]
    # the slices in turn are the whole matrix's: the 5th point's are the 13th-15th slices
    assert [p.job for p in point] == [p.job for p in every[12:15]]
    with pytest.raises(ConfigError, match="QD8 at 50 % read is not planned"):
        point_jobs("seq", SEQ, SMALL, 8, 50)


def point_of(
    qd: int, share: int, pattern: str = "rnd", plan: LowQdPlan = SMALL
) -> dict[str, object]:
    samples = [
        throughput_mib_s(result_for(p.job)) for p in point_jobs(pattern, RND, plan, qd, share)
    ]
    return point_values(
        pattern=pattern,
        block_size=4 * KiB,
        read_shares=plan.read_shares,
        queue_depths=plan.queue_depths,
        queue_depth=qd,
        read_pct=share,
        samples_mib_s=samples,
        amount=plan.amount(pattern).describe(),
    )


def test_point_values_keep_every_run_and_their_trimmed_mean() -> None:
    values = point_of(2, 50)
    assert values["samples_mib_s"] == [2060.0, 2061.0, 2062.0]  # QD2 50 %: 2050 + r + 10
    assert values["trimmed_mib_s"] == pytest.approx(2061.0)
    assert values["trimmed_iops"] == pytest.approx(2061.0 * 256)
    assert json.loads(json.dumps(values)) == values


def test_matrix_from_points_places_every_point() -> None:
    m = RatioMatrix.from_points([point_of(qd, share) for qd in (1, 2, 4) for share in (0, 50, 100)])
    assert m.samples.shape == (3, 3, 3) and m.block_size == 4 * KiB and m.missing == 0
    assert m.samples[0, 0].tolist() == [10.0, 10.0, 10.0]  # QD1, writes only
    assert m.samples[2, 2].tolist() == [4100.0, 4101.0, 4102.0]  # QD4 reads only
    assert m.trimmed[1, 1] == pytest.approx(2061.0)
    assert m.weighted_complete()


def test_a_missing_point_is_a_gap_never_interpolated() -> None:
    points = [point_of(qd, share) for qd in (1, 2, 4) for share in (0, 50, 100)]
    m = RatioMatrix.from_points([p for p in points if (p["queue_depth"], p["read_pct"]) != (2, 50)])
    assert (m.missing, m.cells) == (1, 9)
    assert np.isnan(m.trimmed[1, 1]) and not np.isnan(m.trimmed[1, 0])
    weighted = m.weighted()
    assert np.isnan(weighted[1]) and not np.isnan(weighted[[0, 2]]).any()
    assert not m.weighted_complete()
    ax = ratio_curves(m, "scratch").axes[0]
    assert labels(ax.lines)[-1].endswith("no mean: points missing")
    qd2 = np.asarray(ax.lines[1].get_ydata(), dtype=float)
    assert np.isnan(qd2[1]) and not np.isnan(qd2[[0, 2]]).any()
    complete = RatioMatrix.from_points(points)
    curves = weighted_curves({"partial": m, "whole": complete})
    assert labels(curves.axes[0].lines) == [
        f"1. whole: {complete.score():,.1f} MiB/s",
        "partial: not ranked (points missing)",
    ]


def test_points_of_other_matrices_do_not_mix() -> None:
    other = LowQdPlan((0, 100), (1, 2, 4), 3, Amount(8 * MiB, 3), Amount(16 * KiB, 160))
    with pytest.raises(ParseError, match="differ in read_shares"):
        RatioMatrix.from_points([point_of(1, 0), point_of(1, 0, plan=other)])
    with pytest.raises(ParseError, match="none"):
        RatioMatrix.from_points([])


# --- graphs --------------------------------------------------------------------------------


def labels(lines: Sequence[Line2D]) -> list[str]:
    return [str(line.get_label()) for line in lines]


def test_ratio_curves_draw_one_curve_per_qd_and_the_weighted_one() -> None:
    m = matrix()
    fig = ratio_curves(m, "scratch")
    ax = fig.axes[0]
    assert labels(ax.lines) == [
        "QD1",
        "QD2",
        "QD4",
        "weighted (QD1 70 %, QD2 20 %, QD4 10 %): mean 202.0 MiB/s",
    ]
    assert np.asarray(ax.lines[1].get_ydata()).tolist() == pytest.approx(m.trimmed[1].tolist())
    assert np.asarray(ax.lines[3].get_ydata()).tolist() == pytest.approx(m.weighted().tolist())
    assert len(ax.collections) == 3  # the bands of the runs
    assert ax.get_title().startswith("RND 4KiB low QD by read share — scratch")
    assert [t.get_text() for t in ax.get_xticklabels()] == ["0", "50", "100"]
    assert render_figure(fig).png.startswith(PNG)
    (iops,) = ax.child_axes  # the IOPS axis (limits set when drawn): 256 IOPS of 4 KiB a MiB/s
    assert iops.get_ylabel() == "IOPS"
    assert iops.get_ylim() == pytest.approx(tuple(256 * y for y in ax.get_ylim()))


def test_weighted_curves_and_ranking_bars_put_the_best_first() -> None:
    drives = {"slow": matrix(0.5), "fast": matrix(2.0), "mid": matrix()}
    fig = weighted_curves(drives)
    assert labels(fig.axes[0].lines) == [
        "1. fast: 404.0 MiB/s",
        "2. mid: 202.0 MiB/s",
        "3. slow: 101.0 MiB/s",
    ]
    assert render_figure(fig).png.startswith(PNG)
    bars = ranking_bars({name: m.score() for name, m in drives.items()}, "RND 4KiB ranking")
    ax = bars.axes[0]
    top_down = sorted(
        zip(ax.get_yticks(), [t.get_text() for t in ax.get_yticklabels()], strict=True),
        reverse=True,
    )
    assert [text for _, text in top_down] == ["1. fast", "2. mid", "3. slow"]
    rects = [p for p in ax.patches if isinstance(p, Rectangle)]
    widths = sorted(((p.get_y(), p.get_width()) for p in rects), reverse=True)
    assert [w for _, w in widths] == pytest.approx([404.0, 202.0, 101.0])
    assert render_figure(bars).png.startswith(PNG)


def test_a_seeded_jobs_stream_does_not_depend_on_its_place_in_the_fio_process() -> None:
    # fio seeds job number k with randseed * k (mod 2**64): the seed rendered for place k
    # makes that the job's own seed * 2**16, whatever k is, odd or even
    for seed in (0, 1, zlib.crc32(b"rnd-q1-r070-n2"), (1 << 48) - 1):
        for k in (*range(1, 70), 1024, 4096):
            value = fio_seed(seed, k)
            assert -(1 << 63) <= value < 1 << 63, "fio parses a signed 64-bit number"
            assert value * k % (1 << 64) == seed << 16, (seed, k)
    with pytest.raises(ConfigError, match="numjobs=1"):
        FioJob("x", "rnd", 4096, numjobs=4, seed=1)
