"""Speed profile (seed 002): quanta cut out of fio logs, moving average, sustained rate, dd.

Synthetic logs use windows of 125 ms and speeds in powers of two, so every time and
byte count below is exact in binary: 1024 MiB/s moves one 128 MiB quantum per window.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from pytest_ssd.analysis import (
    SelfCheck,
    SpeedProfile,
    fill_pass,
    parse_dd,
    read_io_log,
    speed_profile,
)
from pytest_ssd.errors import ConfigError, ParseError
from pytest_ssd.figures import render as render_figure
from pytest_ssd.fio.job import render
from pytest_ssd.methods.csd.figures import fill as graphs
from pytest_ssd.methods.csd.workloads.fill import (
    PROFILES,
    SELF_CHECK,
    check_chunks,
    check_job,
    dd_argv,
    read_job,
)

GOLDEN = Path(__file__).parent.parent / "golden" / "fio"
MiB, GiB = 1 << 20, 1 << 30
QUANTUM = 128 * MiB


def logged(*stretches: tuple[float, int], window_s: float = 0.125) -> tuple[np.ndarray, np.ndarray]:
    """Window ends and bytes done for (MiB/s, windows) stretches."""
    mib_s = np.concatenate([np.full(count, speed) for speed, count in stretches])
    t_s = np.arange(1, len(mib_s) + 1) * window_s
    return t_s, np.cumsum(mib_s * MiB * window_s)


def with_speeds(mib_s: list[float]) -> SpeedProfile:
    dt = QUANTUM / (np.array(mib_s) * MiB)
    return SpeedProfile(QUANTUM, np.cumsum(dt), dt, np.zeros(len(dt), dtype=bool), 0.1)


def test_constant_speed_gives_equal_quanta() -> None:
    profile = speed_profile(*logged((1024, 80)), QUANTUM)  # 10 s, 10 GiB
    assert profile.samples == 80
    assert profile.t_s.tolist() == [0.125 * k for k in range(1, 81)]
    assert profile.dt_s.tolist() == [0.125] * 80
    assert profile.v.tolist() == [1024 * MiB] * 80
    assert profile.q[-1] == 10 * GiB
    assert profile.running_mean.tolist() == [1024 * MiB] * 80
    # each quantum is exactly one window: measured, not interpolated
    assert profile.resolved and not profile.interpolated.any()
    assert profile.log_interval_s == 0.125


def test_step_shows_in_the_samples_and_the_moving_average() -> None:
    # 2 GiB at 1024 MiB/s, then 1 GiB at 256 MiB/s: 16 quanta of 0.125 s, 8 of 0.5 s
    profile = speed_profile(*logged((1024, 16), (256, 32)), QUANTUM)
    assert (profile.v / MiB).tolist() == [1024.0] * 16 + [256.0] * 8
    assert profile.running_mean[-1] == 3 * GiB / 6.0
    ends, moving = profile.moving(4)
    assert len(ends) == 21 and ends[0] == 0.5, "the first average ends at the 4th quantum"
    # dt = t[i] - t[i-4], dQ = 4 quanta: quanta 15-18 are two fast and two slow ones
    assert moving[17 - 3] == 4 * QUANTUM / (2 * 0.125 + 2 * 0.5)
    assert moving[0] == 1024 * MiB and moving[-1] == 256 * MiB
    assert len(profile.moving(25)[0]) == 0
    with pytest.raises(ConfigError):
        profile.moving(0)


def test_partial_quantum_is_left_out_and_a_pause_counts_in_its_quantum() -> None:
    # 512 MiB in 0.5 s, 1 s without a byte, 384 MiB in 0.375 s
    t_s, done = logged((1024, 4), (0, 8), (1024, 3))
    profile = speed_profile(t_s, done, QUANTUM)
    assert profile.samples == 7
    # the 4th quantum completes when the pause starts, the 5th 1 s + 0.125 s later
    assert profile.t_s[3] == 0.5 and profile.dt_s[4] == 1.125
    assert profile.t_s[-1] == 1.875
    # 896 MiB in 96 MiB quanta: 9 whole ones, the last 32 MiB left out
    odd = speed_profile(t_s, done, 96 * MiB)
    assert odd.samples == 9 and odd.q[-1] == 864 * MiB


def test_quanta_inside_one_window_are_marked_interpolated() -> None:
    # 250 ms windows at 1024 MiB/s hold four 64 MiB quanta each
    profile = speed_profile(*logged((1024, 8), window_s=0.25), 64 * MiB)
    assert profile.interpolated.all() and not profile.resolved
    # the golden per-I/O pass in 10 ms windows: its first I/Os complete at 10 ms, a
    # window then moves some 25 MiB, so 32 MiB quanta span at least two windows
    one = fill_pass("golden", read_io_log(GOLDEN / "fill_io_clat.log"), 256 << 20, 0.123, 0.010)
    golden = speed_profile(one.t_s, one.written, 32 * MiB)
    assert golden.samples == 8 and float(golden.q[-1]) == 256 << 20
    assert golden.summary()["interpolated"] == int(golden.interpolated.sum())


def test_sustained_rate_is_the_first_percentile_nearest_rank() -> None:
    speeds = [1000.0] * 198 + [100.0, 50.0]
    held = with_speeds(speeds).sustained(1.0)
    # 1 % of 200 samples is 2: the second slowest
    assert held.bw == pytest.approx(100 * MiB) and held.resolved and held.samples == 200
    assert with_speeds([*speeds[:149], 100.0]).sustained(1.0).bw == pytest.approx(1000 * MiB)
    few = with_speeds([1000.0] * 98 + [10.0]).sustained(1.0)
    assert few.bw == pytest.approx(10 * MiB) and not few.resolved, "99 samples: just the slowest"
    assert with_speeds([]).sustained(1.0).samples == 0
    with pytest.raises(ConfigError):
        with_speeds(speeds).sustained(100.0)


def test_summary_is_json_in_mib() -> None:
    summary = speed_profile(*logged((1024, 16), (256, 32)), QUANTUM).summary()
    assert summary["samples"] == 24 and summary["quantum_mib"] == 128.0
    assert summary["mean_mib_s"] == 512.0
    assert (summary["min_mib_s"], summary["max_mib_s"]) == (256.0, 1024.0)
    assert summary["sustained"] == {"p": 1.0, "mib_s": 256.0, "samples": 24, "resolved": False}


def test_bad_input_is_refused() -> None:
    with pytest.raises(ConfigError):
        speed_profile(*logged((1024, 4)), 0)
    with pytest.raises(ParseError):
        speed_profile(np.array([0.2, 0.1]), np.array([1.0, 2.0]), QUANTUM)
    assert speed_profile(np.zeros(0), np.zeros(0), QUANTUM).samples == 0


# --- the self-check against dd ---------------------------------------------------------


DD_REPORT = """1024+0 records in
1024+0 records out
1073741824 bytes (1.1 GB, 1.0 GiB) copied, 1.26234 s, 851 MB/s
"""


def test_dd_report_is_parsed() -> None:
    assert parse_dd(DD_REPORT) == (1073741824, 1.26234)
    assert parse_dd("1 byte copied, 6.5e-05 s, 15.4 kB/s\n") == (1, 6.5e-05)
    with pytest.raises(ParseError, match="no 'N bytes"):
        parse_dd("dd: failed to open '/dev/nope': No such file or directory\n")
    with pytest.raises(ParseError, match="0 s"):
        parse_dd("512 bytes copied, 0 s, ? B/s\n")


def test_self_check_ratio_and_tolerance() -> None:
    check = SelfCheck(plugin_bw=1000 * MiB, reader_bw=500 * MiB, reader="dd")
    assert check.ratio == 0.5 and check.agrees(2.0) and not check.agrees(1.9)
    assert SelfCheck(1000 * MiB, 2000 * MiB, "dd").agrees(2.0)
    assert not SelfCheck(1000 * MiB, 2001 * MiB, "dd").agrees(2.0)
    assert check.as_dict() == {"plugin_mib_s": 1000.0, "dd_mib_s": 500.0, "ratio": 0.5}
    # seen on scratch:1G: fio 817 MiB/s, dd 2,148 MiB/s right after (the loop device's jumps)
    seen = SelfCheck(817 * MiB, 2148 * MiB, "dd")
    assert seen.agrees(SELF_CHECK.factor(scratch=True))
    assert not seen.agrees(SELF_CHECK.factor(scratch=False))
    # bits for bytes is caught on either
    assert not SelfCheck(1000 * MiB, 125 * MiB, "dd").agrees(SELF_CHECK.factor(scratch=True))


def test_read_job_and_dd_read_the_same_span_the_same_way() -> None:
    row = PROFILES["full"]
    span = 3 * GiB + 12345  # not whole MiB: both read the whole MiB below it
    job = read_job(span, row)
    assert (job.rw, job.block_size, job.iodepth, job.ioengine, job.direct) == (
        "read",
        MiB,
        1,
        "psync",
        True,
    )
    assert job.size == 3 * GiB
    assert "write_lat_log=/tmp/p-speed-read" in render([job], "/dev/x", log_prefix="/tmp/p")
    chunks = check_chunks(span, row)
    # eight chunks spread over the span, each at most 1 GiB: 3 GiB / 8 = 384 MiB apart
    assert chunks == [(i * 384 * MiB, 384 * MiB) for i in range(8)]
    check = check_job(3, *chunks[3], row)
    assert (check.rw, check.block_size, check.iodepth, check.ioengine, check.offset) == (
        "read",
        MiB,
        1,
        "psync",
        3 * 384 * MiB,
    )
    argv = dd_argv("/usr/bin/env", "/usr/bin/dd", Path("/dev/x"), chunks[3], row)
    assert argv == [
        "/usr/bin/env",
        "LC_ALL=C",
        "/usr/bin/dd",
        "if=/dev/x",
        "of=/dev/null",
        f"bs={MiB}",
        "iflag=direct",
        f"skip={3 * 384}",
        "count=384",
    ]
    big = check_chunks(1 << 40, row)
    assert len(big) == 8 and all(size == GiB for _, size in big), "1 TB: 8 GiB per tool"


def test_speed_graphs_draw_samples_average_and_sustained_rate() -> None:
    profile = speed_profile(*logged((1024, 16), (256, 32)), QUANTUM)
    fig = graphs.speed_per_quantum([("read", profile)], 4)
    labels = [str(line.get_label()) for line in fig.axes[0].lines]
    assert labels == ["read: moving average of 4"]
    hist = graphs.speed_histogram([("read", profile)], 1.0)
    (marker,) = [line for line in hist.axes[0].lines if line.get_linestyle() == "--"]
    assert float(np.asarray(marker.get_xdata())[0]) == 256.0
    assert "not resolved by 24 samples" in str(marker.get_label())
    for figure in (fig, hist):
        assert render_figure(figure).png.startswith(b"\x89PNG")
