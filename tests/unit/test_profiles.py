"""Quick profiles, sync writes and QD1 latency: job tables, best pass, grids, latency tables."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from matplotlib.collections import PathCollection
from matplotlib.patches import Rectangle
from matplotlib.text import Text

from pytest_ssd.errors import ConfigError, ParseError
from pytest_ssd.figures import nines_x
from pytest_ssd.figures import render as render_figure
from pytest_ssd.figures.latency import (
    NOT_RESOLVED,
    LatencySample,
    distribution,
    format_latency,
    tail,
    tail_table,
)
from pytest_ssd.fio.job import render
from pytest_ssd.fio.results import DirectionResult, JobResult, parse_output, percentiles_from_bins
from pytest_ssd.methods.csd.figures.grid import Bar, Cell, grid_of, mib_bars, results_grid
from pytest_ssd.methods.csd.workloads.profiles import (
    CDM_PROFILES,
    CDM_TIMING,
    LATENCY_SIZE,
    SYNC_SIZE,
    CdmTest,
    CdmTiming,
    Span,
    best_pass,
    cdm_bursts,
    cdm_passes,
    cdm_prepare,
    cdm_scores,
    latency_jobs,
    sync_jobs,
)
from pytest_ssd.state.layout import Region

KiB, MiB, GiB = 1 << 10, 1 << 20, 1 << 30
GOLDEN = Path(__file__).parent.parent / "golden" / "fio"
PNG = b"\x89PNG\r\n\x1a\n"
SEQ_REGION = Region("seq", 8 * GiB, 100 * GiB, "seq")
RND_REGION = Region("rnd", 0, 8 * GiB, "rnd")


def golden_job(name: str) -> JobResult:
    return parse_output((GOLDEN / name).read_text()).jobs[0]


def direction(name: str, mb_s: float, block_size: int) -> DirectionResult:
    bw = mb_s * 1e6
    return DirectionResult(
        name, int(bw), int(bw) // block_size, 1000, bw / block_size, bw, None, None, None
    )


# ---- the method's numbers ------------------------------------------------------------------


def test_full_cdm_timing_is_crystaldiskmarks() -> None:
    assert CDM_TIMING["full"] == CdmTiming(passes=5, pass_s=5.0, interval_s=5.0, span=1 * GiB)
    quick = CDM_TIMING["quick"]
    assert 1 <= quick.passes < 5 and quick.pass_s < 5 and quick.interval_s == 0
    assert quick.span <= 1 * GiB


def test_cdm_profiles_are_default_and_nvme() -> None:
    def table(profile: str) -> list[tuple[str, int, int, int, str]]:
        return [
            (t.pattern, t.block_size, t.iodepth, t.numjobs, t.label) for t in CDM_PROFILES[profile]
        ]

    assert table("default") == [
        ("seq", 1 * MiB, 8, 1, "SEQ1M Q8T1"),
        ("seq", 1 * MiB, 1, 1, "SEQ1M Q1T1"),
        ("rnd", 4 * KiB, 32, 1, "RND4K Q32T1"),
        ("rnd", 4 * KiB, 1, 1, "RND4K Q1T1"),
    ]
    assert table("nvme") == [
        ("seq", 1 * MiB, 8, 1, "SEQ1M Q8T1"),
        ("seq", 128 * KiB, 32, 1, "SEQ128K Q32T1"),
        ("rnd", 4 * KiB, 32, 16, "RND4K Q32T16"),
        ("rnd", 4 * KiB, 1, 1, "RND4K Q1T1"),
    ]


def test_sync_and_latency_sizes() -> None:
    assert SYNC_SIZE["full"].amount == 1 * GiB
    assert SYNC_SIZE["quick"].amount < SYNC_SIZE["full"].amount
    full = LATENCY_SIZE["full"]
    assert (full.ios, full.amount) == (163_840, 640 * MiB)
    assert full.ios >= 100_000, "five nines need 10^5 I/Os"
    assert 10_000 <= LATENCY_SIZE["quick"].ios < 100_000


# ---- CDM passes ----------------------------------------------------------------------------


def test_passes_read_first_then_write_each_test_in_turn() -> None:
    spans = {"seq": Span(8 * GiB, 1 * GiB), "rnd": Span(0, 1 * GiB)}
    passes = cdm_passes("nvme", CDM_TIMING["full"], spans)
    assert len(passes) == 4 * 2 * 5
    assert [p.job.name for p in passes[:6]] == [
        "nvme-seq1m-q8t1-read-1",
        "nvme-seq1m-q8t1-read-2",
        "nvme-seq1m-q8t1-read-3",
        "nvme-seq1m-q8t1-read-4",
        "nvme-seq1m-q8t1-read-5",
        "nvme-seq128k-q32t1-read-1",
    ]
    assert [p.direction for p in passes] == ["read"] * 20 + ["write"] * 20
    assert len({p.job.name for p in passes}) == len(passes)
    for one in passes:
        job = one.job
        assert (job.runtime_s, job.ramp_s, job.io_bytes) == (5.0, 0.0, None)
        assert job.read_pct == (100 if one.direction == "read" else 0)
        assert (job.offset, job.size) == ((8 * GiB, 1 * GiB) if job.pattern == "seq" else (0, GiB))
    t16 = next(p.job for p in passes if p.test.numjobs == 16)
    assert dict(t16.options())["group_reporting"] == "1"


def test_unknown_profile_is_refused() -> None:
    with pytest.raises(ConfigError, match="unknown CDM profile 'atto'"):
        cdm_passes("atto", CDM_TIMING["full"], {})


def test_passes_share_one_fio_process_only_without_an_interval() -> None:
    span = {"seq": Span(0, GiB), "rnd": Span(0, GiB)}
    full, quick = CDM_TIMING["full"], CDM_TIMING["quick"]
    passes = cdm_passes("default", full, span)
    assert [len(b) for b in cdm_bursts(passes, full)] == [1] * len(passes)
    quick_passes = cdm_passes("default", quick, span)
    assert cdm_bursts(quick_passes, quick) == [quick_passes]
    assert cdm_bursts((), quick) == []


def test_span_is_the_first_limit_bytes_of_the_region_in_whole_mib() -> None:
    assert Span.within(SEQ_REGION, 1 * GiB) == Span(8 * GiB, 1 * GiB)
    small = Region("rnd", 0, 100 * MiB + 4096, "rnd")
    assert Span.within(small, 1 * GiB) == Span(0, 100 * MiB)
    with pytest.raises(ConfigError, match="smaller than 1 MiB"):
        Span.within(Region("rnd", 0, 4096, "rnd"), 1 * GiB)


def test_prepare_writes_the_whole_span_once() -> None:
    job = cdm_prepare(Span(0, 1 * GiB))
    options = dict(job.options())
    assert (options["rw"], options["bs"], options["iodepth"]) == ("write", str(MiB), "8")
    assert (options["offset"], options["size"]) == ("0", str(GiB))
    assert "runtime" not in options and "io_size" not in options


@pytest.mark.parametrize(
    ("values", "best"),
    [([1.0], 0), ([3.0, 5.0, 4.0], 1), ([5.0, 2.0, 5.0], 0), ([0.0, 0.0], 0)],
)
def test_best_pass_is_the_fastest_first_on_a_tie(values: list[float], best: int) -> None:
    assert best_pass(values) == best


def test_best_pass_of_nothing_is_refused() -> None:
    with pytest.raises(ConfigError):
        best_pass([])


def test_scores_keep_every_pass_and_name_the_best() -> None:
    span = {"seq": Span(0, GiB), "rnd": Span(0, GiB)}
    passes = cdm_passes("default", CdmTiming(3, 1.0, 0.0, GiB), span)
    speeds = iter(range(1, len(passes) + 1))
    measured = {
        p.job.name: direction(p.direction, float((next(speeds) * 7) % 11 + 1), p.test.block_size)
        for p in passes
    }
    scores = cdm_scores(passes, measured)
    assert [(s.test.label, s.direction) for s in scores][:5] == [
        ("SEQ1M Q8T1", "read"),
        ("SEQ1M Q1T1", "read"),
        ("RND4K Q32T1", "read"),
        ("RND4K Q1T1", "read"),
        ("SEQ1M Q8T1", "write"),
    ]
    first = scores[0]
    assert first.mb_s == (8.0, 4.0, 11.0)  # passes 1..3: (n * 7) % 11 + 1
    assert first.best == 2
    values = first.as_values()
    assert values["seq1m-q8t1.read.mb_s"] == 11.0
    assert values["seq1m-q8t1.read.best_pass"] == 3
    assert values["seq1m-q8t1.read.passes_mb_s"] == [8.0, 4.0, 11.0]
    assert values["seq1m-q8t1.read.mib_s"] == pytest.approx(11.0 / 1.048576)


# ---- sync and latency jobs -----------------------------------------------------------------


def test_sync_jobs_fsync_every_write_at_qd1_inside_their_regions() -> None:
    seq, rnd = sync_jobs(SYNC_SIZE["full"], SEQ_REGION, RND_REGION)
    for job, region, rw, bs in (
        (seq, SEQ_REGION, "write", 128 * KiB),
        (rnd, RND_REGION, "randwrite", 4 * KiB),
    ):
        options = dict(job.options())
        assert (options["rw"], options["bs"], options["iodepth"]) == (rw, str(bs), "1")
        assert options["fsync"] == "1"
        assert options["io_size"] == str(GiB) and "runtime" not in options
        assert (options["offset"], options["size"]) == (str(region.offset), str(region.size))
    assert "fsync=1" in render([seq, rnd], "/dev/null").split("[sync-rnd4k-qd1]")[1]


def test_latency_jobs_are_rnd_4k_qd1_by_io_count() -> None:
    jobs = latency_jobs(LATENCY_SIZE["full"], RND_REGION)
    assert [(j.name, j.read_pct) for j in jobs] == [
        ("lat-rnd4k-qd1-read", 100),
        ("lat-rnd4k-qd1-70r", 70),
        ("lat-rnd4k-qd1-write", 0),
    ]
    for job in jobs:
        assert (job.pattern, job.block_size, job.iodepth, job.numjobs) == ("rnd", 4096, 1, 1)
        assert job.io_bytes == 163_840 * 4096 and job.runtime_s is None
        assert (job.offset, job.size) == (0, 8 * GiB)
    assert dict(jobs[1].options())["rwmixread"] == "70"


# ---- grids ---------------------------------------------------------------------------------


def test_grid_rows_follow_the_profile_with_iops_only_for_rnd() -> None:
    span = {"seq": Span(0, GiB), "rnd": Span(0, GiB)}
    timing = CdmTiming(2, 1.0, 0.0, GiB)
    passes = cdm_passes("default", timing, span)
    measured = {
        p.job.name: direction(p.direction, 100.0 * p.number, p.test.block_size)
        for p in passes
        if p.direction == "read"
    }
    reads = [p for p in passes if p.direction == "read"]
    grid = grid_of("Default", CDM_PROFILES["default"], cdm_scores(reads, measured))
    text = grid.text()
    assert text[0] == ["", "Read", "Write"]
    assert [row[0] for row in text[1:]] == [t.label for t in CDM_PROFILES["default"]]
    # the best pass (the second, 200 MB/s) is shown; no write was measured
    assert text[1][1] == "200.00 MB/s\n190.73 MiB/s"
    assert text[3][1] == "200.00 MB/s\n190.73 MiB/s\n48,828 IOPS"
    assert {row[2] for row in text[1:]} == {"–"}


def test_cell_text() -> None:
    cell = Cell(mb_s=7012.345, mib_s=6687.5, iops=1_711_999.6)
    assert cell.text(with_iops=False) == "7,012.35 MB/s\n6,687.50 MiB/s"
    assert cell.text(with_iops=True).endswith("\n1,712,000 IOPS")


def test_results_grid_draws_one_panel_per_profile() -> None:
    rows = (CdmTest("seq", MiB, 8), CdmTest("rnd", 4096, 32, 16))
    grids = [grid_of(title, rows, ()) for title in ("Default", "NVMe")]
    fig = results_grid(grids, "quick profiles at fob")
    assert [ax.get_title() for ax in fig.axes] == ["Default", "NVMe"]
    texts = [t.get_text() for t in fig.axes[1].texts if isinstance(t, Text)]
    assert texts == ["", "Read", "Write", "SEQ1M Q8T1", "–", "–", "RND4K Q32T16", "–", "–"]
    assert render_figure(fig).png.startswith(PNG)


def test_mib_bars_put_the_fastest_on_top_of_each_group() -> None:
    bars = [Bar("SEQ", "a", 10.0), Bar("SEQ", "b", 30.0), Bar("RND", "a", 2.0)]
    fig = mib_bars(bars, "sync writes")
    assert [ax.get_title() for ax in fig.axes] == ["SEQ", "RND"]
    widths = [p.get_width() for p in fig.axes[0].patches if isinstance(p, Rectangle)]
    assert widths == [10.0, 30.0], "barh draws bottom up: the fastest ends on top"
    assert render_figure(fig).png.startswith(PNG)


# ---- latency samples and the tail table ----------------------------------------------------


def test_sample_merges_read_and_write_bins() -> None:
    job = golden_job("randrw_70_30_qd1.json")
    read, write = job.directions["read"], job.directions["write"]
    sample = LatencySample.of("RND 70% read", job)
    assert sample.total == read.total_ios + write.total_ios == 31_177
    assert sample.iops == pytest.approx(read.iops + write.iops)
    assert np.all(np.diff(sample.values_ns) > 0)
    assert read.clat is not None and write.clat is not None
    merged = percentiles_from_bins([*read.clat.bins, *write.clat.bins], [50, 99, 99.99])
    assert sample.percentiles([50, 99, 99.99]) == merged
    xs, shares = sample.cdf()
    assert shares[-1] == 100.0 and np.all(np.diff(shares) > 0)
    assert xs[0] == sample.values_ns[0] / 1000


def test_sample_needs_the_bins() -> None:
    with pytest.raises(ParseError, match="no clat bins"):
        LatencySample.of("plain", golden_job("plain_json.json"))


def test_latency_format() -> None:
    p = percentiles_from_bins([(43_616, 10), (1_234_567, 90)], [5, 99.9])
    assert format_latency(p[0]) == "43.6 µs"
    assert format_latency(p[1]) == NOT_RESOLVED, "100 I/Os cannot resolve p99.9"
    q = percentiles_from_bins([(1_234_567, 1000)], [99.9])[0]
    assert q.resolved and format_latency(q) == "1.23 ms", "under four digits before the point"


def test_tail_table_marks_what_the_sample_cannot_resolve() -> None:
    job = golden_job("randrw_70_30_qd1.json")
    read = JobResult(job.name, 0, 1, 0, 0, {}, {"read": job.directions["read"]})
    write = JobResult(job.name, 0, 1, 0, 0, {}, {"write": job.directions["write"]})
    samples = [
        LatencySample.of("read", read),
        LatencySample.of("mix", job),
        LatencySample.of("write", write),
    ]
    table = tail_table(samples)
    rows = table.rows()
    assert rows[0] == ["Percentile", "read", "mix", "write"]
    assert [row[0] for row in rows[1:]] == ["90%", "99%", "99.9%", "99.99%", "99.999%"]
    # 21,835 reads and 31,177 I/Os resolve p99.99; 9,342 writes do not; nobody p99.999
    assert [row[1] != NOT_RESOLVED for row in rows[1:]] == [True, True, True, True, False]
    assert [row[2] != NOT_RESOLVED for row in rows[1:]] == [True, True, True, True, False]
    assert [row[3] != NOT_RESOLVED for row in rows[1:]] == [True, True, True, False, False]
    assert all(cell.endswith(" µs") for row in rows[1:4] for cell in row[1:])
    values = table.values()
    assert values["write.p99.99_us"] is None and values["mix.p99.999_us"] is None
    assert values["read.p90_us"] == samples[0].percentiles([90])[0].ns / 1000


def test_tail_figure_marks_unresolved_nines_hollow() -> None:
    job = golden_job("randrw_70_30_qd1.json")
    samples = [LatencySample.of("mix", job)]
    table = tail_table(samples)
    fig = tail(samples, table, "tail")
    ax = fig.axes[0]
    marks = [c for c in ax.collections if isinstance(c, PathCollection)]
    assert len(marks) == 5
    hollow = [bool(np.all(np.asarray(m.get_facecolor())[0] == 1.0)) for m in marks]
    assert hollow == [False, False, False, False, True]
    assert [float(np.asarray(m.get_offsets())[0, 1]) for m in marks] == pytest.approx(
        [nines_x(p) for p in table.nines]
    )
    assert [t.get_text() for t in ax.get_yticklabels()] == ["90", "99", "99.9", "99.99", "99.999"]
    assert ax.get_yscale() == "log" and ax.get_xscale() == "log"
    assert render_figure(fig).png.startswith(PNG)


def test_distribution_legend_shows_mean_iops() -> None:
    job = golden_job("randrw_70_30_qd1.json")
    fig = distribution([LatencySample.of("RND 70% read", job)], "distribution")
    (line,) = fig.axes[0].lines
    assert line.get_label() == "RND 70% read (31,146 IOPS)"
    assert float(np.asarray(line.get_ydata())[-1]) == 100.0
    assert render_figure(fig).png.startswith(PNG)
