"""The enterprise graphs say what happened: multi-worker points and the steady-state window."""

from __future__ import annotations

from pytest_ssd.methods.esd import figures as figs
from pytest_ssd.methods.esd.run import steady_verdict
from pytest_ssd.steady import FioSteadyState


def _steady(attained: bool, duration_s: int = 2) -> FioSteadyState:
    return FioSteadyState(
        kind="bw_slope",
        limit=10.0,
        percent=True,
        duration_s=duration_s,
        attained=attained,
        criterion=1.0,
        max_deviation=0.0,
        slope=1.0,
        bw_bytes_s=(1, 1),
        iops=(1, 1),
        bw_mean_bytes_s=1 << 30,
        iops_mean=1000,
    )


def test_a_wdpc_shorter_than_the_rule_window_is_not_judged_and_not_shaded() -> None:
    # seen in the quick profile: WDPC from 3.16 s for 1.456 s, a 2 s rule: the window was
    # drawn from 2.6 s (inside WIPC) and the verdict said "over 2 s"
    window, text = steady_verdict(_steady(True), wdpc_start_s=3.16, wdpc_s=1.456)
    assert window is None
    assert text.startswith("not judged: WDPC ran 1.46 s, shorter than the rule's 2 s window")


def test_the_shaded_window_is_the_rules_last_seconds_inside_wdpc() -> None:
    window, text = steady_verdict(_steady(True), wdpc_start_s=3.16, wdpc_s=5.0)
    assert window == (6.16, 8.16) and window[0] >= 3.16
    assert "attained" in text and "over 2 s" in text
    assert steady_verdict(_steady(False), wdpc_start_s=3.16, wdpc_s=5.0)[0] is None


def test_a_multi_worker_point_is_not_on_the_one_worker_line() -> None:
    curve = figs.SweepCurve("d", (1, 32, 128), (10.0, 300.0, 900.0), workers=(1, 1, 4))
    line, others = curve.split()
    assert line == [(1, 10.0), (32, 300.0)]
    assert others == {4: [(128, 900.0)]}
    fig = figs.sweep_figure([curve], "RND 4KiB read by QD", "outstanding I/Os", "IOPS")
    assert fig.axes[0].get_legend() is None, "the legend is under the axes, off the curves"
    labels = [t.get_text() for t in fig.legends[0].get_texts()]
    assert labels == ["d", "d: 4 workers × QD32"]
    lines = fig.axes[0].get_lines()
    assert list(lines[0].get_xdata()) == [1, 32] and lines[1].get_marker() == "D"


def test_old_records_without_workers_draw_as_before() -> None:
    curve = figs.SweepCurve("d", (1, 2), (1.0, 2.0))
    assert curve.split() == ([(1, 1.0), (2, 2.0)], {})
