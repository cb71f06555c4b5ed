"""Fill drive analysis: fio logs as series, and the cache rule on synthetic curves.

Synthetic passes are logs of 100 ms windows (0.1 s is inexact in binary, so sums are
compared with ``approx``); a step of 2048 MiB/s writes 204.8 MiB per window, 100
windows = 20 GiB.  The default rule: moving median of 5 windows below 70 % of the
plateau for at least 5 s and 1 GiB.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from matplotlib.lines import Line2D

from pytest_ssd.analysis import (
    CacheEstimate,
    CacheRule,
    FillPass,
    FioLog,
    estimate_cache,
    fill_pass,
    log_path,
    moving_median,
    read_log,
)
from pytest_ssd.errors import ConfigError, ParseError
from pytest_ssd.fio.job import render
from pytest_ssd.fio.results import parse_output
from pytest_ssd.report import fill as graphs
from pytest_ssd.report.figures import render as render_figure
from pytest_ssd.state.profile import Profile
from pytest_ssd.workloads.fill import PROFILES, fill_job, idle_gap_s

GOLDEN = Path(__file__).parent.parent / "golden" / "fio"
MiB, GiB = 1 << 20, 1 << 30
WINDOW_S = 0.1


def synthetic(*stretches: tuple[float, int], window_s: float = WINDOW_S) -> FillPass:
    """A pass logged in windows of *window_s*: (MiB/s, windows) stretches, end to end."""
    mib_s = np.concatenate([np.full(count, speed) for speed, count in stretches])
    return from_speeds(mib_s, window_s)


def from_speeds(mib_s: np.ndarray, window_s: float = WINDOW_S) -> FillPass:
    t_ms = np.arange(1, len(mib_s) + 1) * window_s * 1000
    bw = FioLog(t_ms / 1000, mib_s * 1024, np.ones(len(mib_s), dtype=np.int64))
    lat = FioLog(t_ms / 1000, np.full(len(mib_s), 1e6), np.ones(len(mib_s), dtype=np.int64))
    written = float(np.sum(mib_s * MiB * window_s))
    return fill_pass("synthetic", bw, lat, round(written), len(mib_s) * window_s)


def golden() -> tuple[FillPass, int, float]:
    write = parse_output((GOLDEN / "fill.json").read_text()).jobs[0].directions["write"]
    assert write.lat_mean_ns is not None
    one = fill_pass(
        "golden", read_log(GOLDEN / "fill_bw.log"), read_log(GOLDEN / "fill_lat.log"),
        write.io_bytes, write.runtime_ms / 1000,
    )  # fmt: skip
    return one, write.io_bytes, write.lat_mean_ns


# --- fio logs ------------------------------------------------------------------------------


def test_golden_log_reads_as_seconds_kib_and_directions() -> None:
    log = read_log(GOLDEN / "fill_bw.log")
    assert len(log.t_s) == 40
    assert log.t_s[0] == pytest.approx(0.121) and log.t_s[-1] == pytest.approx(0.510)
    assert log.value[0] == 1815272 and set(log.direction.tolist()) == {1}
    assert len(log.only("write").t_s) == 40 and len(log.only("read").t_s) == 0


def test_golden_pass_accounts_for_fio_bytes_less_the_last_window() -> None:
    one, io_bytes, lat_mean_ns = golden()
    # fio ran 521 ms and logged up to 510 ms: about 11 ms of writes are not in the log
    unlogged = io_bytes - float(one.written[-1])
    assert 0 < unlogged <= 0.011 * float(one.bw.max()) * 1.5
    assert one.coverage == pytest.approx(0.9724, abs=1e-4)
    # the first window runs from the job's start to fio's first log line at 121 ms
    assert float(one.written[0]) == pytest.approx(1815272 * 1024 * 0.121)
    assert one.mean_bw == pytest.approx(io_bytes / 0.521)
    assert one.log_interval_s == pytest.approx(0.010)
    # per-window latency means average out to fio's mean within 1 %
    assert float(one.lat_ns.mean()) == pytest.approx(lat_mean_ns, rel=0.01)


def test_the_log_is_kept_as_logged_and_its_coverage_says_how_well_it_adds_up() -> None:
    # a stalled start as seen on a loaded VM: the first line at 240 ms says 762 MiB/s,
    # though fio wrote only 40 MiB before the ten 10 ms windows at 1000 MiB/s
    t_s = np.array([0.24, *np.linspace(0.25, 0.34, 10)])
    mib_s = np.array([762.0, *[1000.0] * 10])
    log = FioLog(t_s, mib_s * 1024, np.ones(11, dtype=np.int64))
    one = fill_pass("stalled start", log, log, 140 * MiB, 0.34)
    assert float(one.written[0]) == pytest.approx(0.24 * 762 * MiB)
    assert one.bw.tolist() == pytest.approx((mib_s * MiB).tolist())
    assert one.coverage == pytest.approx((0.24 * 762 + 100) / 140)
    with pytest.raises(ParseError, match="no write windows"):
        fill_pass("no length", FioLog(np.array([0.0]), np.array([1.0]), np.array([1])), log, 1, 1)


def test_log_path_is_where_the_engine_puts_it(tmp_path: Path) -> None:
    job = fill_job(1, 64 * MiB, PROFILES["full"])
    text = render([job], "/dev/null", log_prefix=str(tmp_path / "log"))
    assert f"write_bw_log={tmp_path / 'log'}-fill-pass-1" in text
    assert "log_avg_msec=100" in text
    assert log_path(tmp_path, job.name, "bw") == tmp_path / "log-fill-pass-1_bw.1.log"


def test_bad_logs_raise_parse_errors_naming_the_file(tmp_path: Path) -> None:
    bad = tmp_path / "bad.log"
    bad.write_text("120, 1000, 1, 0, 0\nnot, a, log\n")
    with pytest.raises(ParseError, match=r"bad\.log"):
        read_log(bad)
    with pytest.raises(ParseError, match=r"missing\.log"):
        read_log(tmp_path / "missing.log")
    empty = tmp_path / "empty.log"
    empty.write_text("")
    assert len(read_log(empty).t_s) == 0
    reads = FioLog(np.array([0.1]), np.array([1.0]), np.array([0]))
    with pytest.raises(ParseError, match="no write windows"):
        fill_pass("reads only", reads, reads, 1, 1.0)


# --- the moving median and the rule's parameters -----------------------------------------


def test_moving_median_is_centred_and_ignores_single_outliers() -> None:
    values = np.array([1.0, 1.0, 9.0, 1.0, 1.0, 5.0, 5.0, 5.0])
    assert moving_median(values, 3).tolist() == [1.0, 1.0, 1.0, 1.0, 5.0, 5.0]
    assert moving_median(values, 1).tolist() == values.tolist()
    assert len(moving_median(values[:2], 3)) == 0
    with pytest.raises(ConfigError, match="odd"):
        moving_median(values, 4)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [({"window": 4}, "odd"), ({"drop": 1.2}, "fraction"), ({"min_s": -1}, "negative"),
     ({"plateau": 0}, "plateau")],
)  # fmt: skip
def test_rule_parameters_are_checked(kwargs: dict[str, float], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        CacheRule(**kwargs)  # type: ignore[arg-type]


# --- the cache rule on synthetic curves ---------------------------------------------------


def test_flat_curve_has_no_cache_and_says_so() -> None:
    estimate = estimate_cache(synthetic((2000, 600)))
    assert estimate.resolved and not estimate.found
    assert estimate.cache_bytes is None and estimate.post_bw is None
    assert estimate.plateau_bw == pytest.approx(2000 * MiB)
    assert estimate.reason.startswith("no sustained drop")


def test_step_at_20_gib_is_found_exactly() -> None:
    estimate = estimate_cache(synthetic((2048, 100), (512, 300)))
    assert estimate.resolved and estimate.found
    assert estimate.cache_bytes == pytest.approx(20 * GiB)
    assert estimate.drop_s == pytest.approx(10.0)
    assert estimate.plateau_bw == pytest.approx(2048 * MiB)
    assert estimate.post_bw == pytest.approx(512 * MiB)
    assert estimate.recovered_bytes is None
    data = estimate.as_dict()
    assert data["cache_gib"] == pytest.approx(20.0)
    assert data["post_cache_mib_s"] == pytest.approx(512.0)
    assert data["cache_resolved"] is True


def noisy(mib_s: np.ndarray, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    speeds = mib_s * rng.normal(1.0, 0.1, len(mib_s))
    spikes = rng.choice(len(mib_s), 12, replace=False)
    speeds[spikes[:6]] *= 0.1  # a single stalled window here and there
    speeds[spikes[6:]] *= 3.0  # and a burst
    return np.asarray(np.clip(speeds, 1.0, None))


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_step_with_noise_is_found_within_two_windows(seed: int) -> None:
    clean = np.concatenate([np.full(100, 2048.0), np.full(300, 512.0)])
    one = from_speeds(noisy(clean, seed))
    estimate = estimate_cache(one)
    assert estimate.resolved and estimate.cache_bytes is not None
    step = float(one.written[99])  # the bytes the noisy pass wrote in its first 100 windows
    assert abs(estimate.cache_bytes - step) <= 2 * 204.8 * MiB
    assert estimate.post_bw == pytest.approx(512 * MiB, rel=0.1)
    flat = estimate_cache(from_speeds(noisy(np.full(400, 2048.0), seed)))
    assert flat.resolved and not flat.found, "noise alone is no drop"


def test_short_dip_is_not_the_cache() -> None:
    # 10 GiB at 2048, 2 s at 300 (a GC pause), 20 GiB at 2048, then the real drop
    one = synthetic((2048, 50), (300, 20), (2048, 100), (512, 300))
    estimate = estimate_cache(one)
    assert estimate.cache_bytes == pytest.approx(float(one.written[169]))
    assert estimate.cache_bytes == pytest.approx(30 * GiB + 20 * 30 * MiB)
    only_dip = estimate_cache(synthetic((2048, 50), (300, 20), (2048, 300)))
    assert only_dip.resolved and not only_dip.found


def test_long_stall_that_writes_little_is_not_the_cache() -> None:
    # 8 s at 5 MiB/s: long enough in time, but 40 MiB is far from the rule's 1 GiB
    estimate = estimate_cache(synthetic((2048, 50), (5, 80), (2048, 300)))
    assert estimate.resolved and not estimate.found
    looser = CacheRule(min_bytes=32 * MiB)
    found = estimate_cache(synthetic((2048, 50), (5, 80), (2048, 300)), looser)
    assert found.cache_bytes == pytest.approx(10 * GiB)


def test_cache_that_recovers_reports_the_first_drop_and_the_recovery() -> None:
    # 20 GiB at 2048, 10 s at 512 (5 GiB), 20 GiB at 2048 again
    estimate = estimate_cache(synthetic((2048, 100), (512, 100), (2048, 100)))
    assert estimate.cache_bytes == pytest.approx(20 * GiB)
    assert estimate.recovered_bytes == pytest.approx(25 * GiB)
    # after the drop: 25 GiB in 20 s
    assert estimate.post_bw == pytest.approx(25 * GiB / 20)


def test_short_burst_after_the_drop_is_no_recovery() -> None:
    estimate = estimate_cache(synthetic((2048, 100), (512, 100), (2048, 3), (512, 200)))
    assert estimate.cache_bytes == pytest.approx(20 * GiB)
    assert estimate.recovered_bytes is None


def test_slow_start_does_not_hide_the_cache() -> None:
    # the first 0.6 s crawl (a drive waking up), then the cache: the plateau is the cache's
    estimate = estimate_cache(synthetic((500, 6), (2048, 100), (512, 300)))
    assert estimate.plateau_bw == pytest.approx(2048 * MiB)
    assert estimate.cache_bytes == pytest.approx(6 * 50 * MiB + 20 * GiB)


def test_drop_cut_off_by_the_end_of_the_pass_is_not_resolved() -> None:
    estimate = estimate_cache(synthetic((2048, 200), (512, 20)))
    assert not estimate.resolved and estimate.cache_bytes is None
    assert "end of the pass" in estimate.reason
    assert estimate.as_dict()["cache_gib"] is None
    # 5.1 s at the end: the last two windows have no centred median but count for the run
    enough = estimate_cache(synthetic((2048, 200), (512, 51)))
    assert enough.resolved and enough.cache_bytes == pytest.approx(40 * GiB)


def test_too_few_windows_are_not_resolved() -> None:
    estimate = estimate_cache(synthetic((2048, 14)))
    assert not estimate.resolved and estimate.cache_bytes is None
    assert estimate.reason == "14 windows: the rule needs 15 at least"


def test_golden_pass_has_no_cache_under_either_profile() -> None:
    one, _, _ = golden()
    for name in ("full", "quick"):
        estimate = estimate_cache(one, PROFILES[name].cache)
        assert estimate.resolved and not estimate.found, name


# --- the table ---------------------------------------------------------------------------


def test_full_profile_is_the_method_and_quick_scales_the_gap() -> None:
    full = PROFILES["full"]
    assert (full.block_size, full.iodepth, full.passes, full.log_ms) == (128 << 10, 256, 2, 100)
    assert full.quantum == 128 * MiB
    job = fill_job(2, 4 * GiB, full)
    assert (job.rw, job.offset, job.size, job.io_bytes, job.runtime_s) == (
        "write", 0, 4 * GiB, None, None,
    )  # fmt: skip
    # fio would round a partial block up and write past the span
    assert fill_job(1, 4 * GiB + 4096, full).size == 4 * GiB
    assert idle_gap_s(Profile("full")) == 300.0
    assert idle_gap_s(Profile("quick")) == 1.0


# --- graphs ------------------------------------------------------------------------------


def test_graphs_mark_the_cache_and_the_idle_gap() -> None:
    one = synthetic((2048, 100), (512, 300))
    two = synthetic((2048, 100), (512, 300))
    estimates: list[CacheEstimate] = [estimate_cache(one), estimate_cache(two)]
    fig = graphs.bw_vs_written([one, two], estimates)
    dashed = [line for line in fig.axes[0].lines if line.get_linestyle() == "--"]
    assert [float(np.asarray(line.get_xdata())[0]) for line in dashed] == pytest.approx([20, 20])
    latency = graphs.latency_vs_time([one, two], gap_s=300.0)
    gap = [
        line for line in latency.axes[0].lines
        if isinstance(line, Line2D) and line.get_label() == "idle 300 s"
    ]  # fmt: skip
    assert len(gap) == 1 and line_x(gap[0]) == pytest.approx(40.0)
    assert line_x(latency.axes[0].lines[-1]) == pytest.approx(40.1), "pass 2 follows the gap"
    for figure in (fig, latency, graphs.bw_vs_time([one, two]), graphs.mean_bars([one, two])):
        assert render_figure(figure).png.startswith(b"\x89PNG")


def line_x(line: Line2D) -> float:
    return float(np.asarray(line.get_xdata())[0])


def test_bandwidth_vs_time_draws_the_temperature_on_the_same_time_axis() -> None:
    one = synthetic((500.0, 20))
    health = {"t_s": np.array([0.0, 1.0, 2.0]), "temp_c": np.array([41.0, 43.5, 45.0])}
    fig = graphs.bw_vs_time([one, one], [health, None])
    first, second = (ax for ax in fig.axes if ax.get_ylabel() == "MiB/s")
    twins = [ax for ax in fig.axes if ax.get_ylabel() == "temperature (°C)"]
    assert len(twins) == 1 and twins[0].get_shared_x_axes().joined(twins[0], first)
    assert twins[0].lines[0].get_ydata().tolist() == [41.0, 43.5, 45.0]
    no_sensor = {"t_s": np.array([0.0]), "temp_c": np.array([np.nan])}
    assert len(graphs.bw_vs_time([one], [no_sensor]).axes) == 1
    assert second is not first
