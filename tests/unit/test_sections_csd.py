"""The consumer suite's comparison section on the results of a real quick run (tests/golden/csd).

The golden drive is a scratch:4G run of ``suites/csd`` read back from its
``results.sqlite`` and trimmed (see tests/golden/csd/README.md).  A second
drive is the same results made slower by a known factor, so every ranking
has a known order; others miss a test, ran a different workload or kept no
logs, to bring out the notes.
"""

from __future__ import annotations

import copy
import dataclasses
import json
import re
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from matplotlib.axes import Axes
from matplotlib.collections import PathCollection
from matplotlib.colors import to_hex
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Rectangle

from pytest_ssd.analysis.fill import FillPass
from pytest_ssd.db import DriveRef, DriveResults, ResultsDb, Series
from pytest_ssd.db.arrays import pack, unpack
from pytest_ssd.errors import ParseError
from pytest_ssd.figures.latency import LatencySample
from pytest_ssd.methods.csd.analysis.lowqd import RatioMatrix
from pytest_ssd.methods.csd.figures.fill import pass_of, series_of
from pytest_ssd.methods.csd.figures.grid import grid_of, grid_of_values
from pytest_ssd.methods.csd.report import section
from pytest_ssd.methods.csd.workloads.profiles import CDM_PROFILES, CdmScore
from pytest_ssd.report.sections.base import Context, FigureSink, Palette, Section
from pytest_ssd.report.sections.match import SHAPE
from pytest_ssd.report.sections.suites import suite_view
from pytest_ssd.results.record import Derived, Measurement
from pytest_ssd.text import latency

GOLDEN = Path(__file__).resolve().parents[1] / "golden" / "csd"
CSD = "suites/csd/"
FAST, SLOW = "fast 4 GiB", "slow 4 GiB"
#: the slow drive's throughput is the fast one's over this, its latencies this times longer
FACTOR = 2.0
#: what the golden run's section draws, in the method's order
FIGURES = [
    "csd quick profiles fob",
    "csd quick profiles cssd-1",
    "csd quick profiles cssd-2",
    "csd quick profiles used75",
    "csd fill bandwidth vs written",
    "csd fill latency vs time",
    "csd fill mean bandwidth",
    "csd read bandwidth vs read",
    "csd sync writes",
    *(
        title
        for key in ("cssd-1-seq", "cssd-1-rnd", "cssd-2-seq", "cssd-2-rnd")
        for title in (
            f"csd low QD {FAST} {key}",
            f"csd low QD {SLOW} {key}",
            f"csd low QD weighted {key}",
            f"csd low QD ranking {key}",
        )
    ),
    *(f"csd tail lat-rnd4k-qd1-{mix} cssd-{n}" for n in (1, 2) for mix in ("read", "70r", "write")),
]


# --- the golden drive ---------------------------------------------------------------------


def load(label: str = FAST, run_id: str = "run-a") -> DriveResults:
    """The golden drive under *label* (a fresh copy each time)."""
    data = json.loads((GOLDEN / "scratch-4g.json").read_text())
    arrays = unpack((GOLDEN / "scratch-4g.npz").read_bytes())
    drive = DriveRef(run_id, data["dut_id"], label, True, data["description"])
    return DriveResults(
        drive,
        measurements=[Measurement(**m) for m in data["measurements"]],
        derived=[Derived(**d) for d in data["derived"]],
        series=[
            Series(s["test"], s["name"], s["meta"], {a: arrays[f"{i}.{a}"] for a in s["arrays"]})
            for i, s in enumerate(data["series"])
        ],
        tests=data["tests"],
    )


def export(db_path: Path, out: Path) -> None:
    """Write the golden files from a run's database (``python -m tests.unit.test_sections_csd``)."""
    with ResultsDb(db_path) as db:
        drive = db.run("latest").drives[0]
        found = db.results(drive)
    kept = [s for s in found.series if ".clat-" not in s.name or s.name.startswith("lat-")]
    measurements = []
    for m in found.measurements:
        data = m.as_dict()
        data["workload"] = {k: v for k, v in m.workload.items() if k in (*SHAPE, "label")}
        data.update(start="", end="", artifacts="")
        if not m.name.startswith(("lat-", "sync-")):  # the section reads the rest from derived
            data["metrics"] = {
                d: {k: v for k, v in metrics.items() if k in ("iops", "bw_mib_s")}
                for d, metrics in m.metrics.items()
            }
        measurements.append(data)
    identity = {k: drive.description["identity"].get(k) for k in ("size_bytes", "transport")}
    out.mkdir(parents=True, exist_ok=True)
    (out / "scratch-4g.json").write_text(
        json.dumps(
            {
                "dut_id": drive.dut_id,
                "description": {"identity": identity},
                "measurements": measurements,
                "derived": [d.as_dict() for d in found.derived],
                "tests": found.tests,
                "series": [
                    {"test": s.test, "name": s.name, "meta": s.meta, "arrays": sorted(s.arrays)}
                    for s in kept
                ],
            },
            sort_keys=True,
            separators=(",", ":"),
        )
    )
    flat = {f"{i}.{a}": v for i, s in enumerate(kept) for a, v in s.arrays.items()}
    (out / "scratch-4g.npz").write_bytes(pack(flat))


SCALED = ("mib_s", "mb_s", "iops")


def _scale(value: Any, factor: float) -> Any:
    """Every number in *value* times *factor*."""
    if isinstance(value, dict):
        return {k: _scale(v, factor) for k, v in value.items()}
    if isinstance(value, list):
        return [_scale(v, factor) for v in value]
    number = isinstance(value, int | float) and not isinstance(value, bool)
    return value * factor if number else value


def slower(drive: DriveResults, factor: float = FACTOR) -> DriveResults:
    """*drive* with every throughput divided by *factor* and every latency multiplied by it."""
    out = copy.deepcopy(drive)
    out.measurements = [
        dataclasses.replace(
            m,
            metrics={
                d: {
                    k: v / factor if k in ("bw_mib_s", "bw_mb_s", "iops") else v
                    for k, v in data.items()
                }
                for d, data in m.metrics.items()
            },
        )
        for m in out.measurements
    ]
    out.derived = [
        dataclasses.replace(
            record,
            values={
                k: _scale(v, 1 / factor) if any(u in k for u in SCALED) else v
                for k, v in record.values.items()
            },
        )
        for record in out.derived
    ]
    for i, s in enumerate(out.series):
        arrays = dict(s.arrays)
        if "ns" in arrays:
            arrays["ns"] = (arrays["ns"] * factor).astype(np.int64)
        if "bw" in arrays:
            arrays["bw"], arrays["written"] = arrays["bw"] / factor, arrays["written"] / factor
        out.series[i] = dataclasses.replace(s, arrays=arrays)
    return out


def without(drive: DriveResults, module: str) -> DriveResults:
    """*drive* with no results from ``suites/csd/<module>`` (the test did not run)."""
    prefix = f"{CSD}{module}::"
    out = copy.copy(drive)
    out.measurements = [m for m in drive.measurements if not m.test.startswith(prefix)]
    out.derived = [d for d in drive.derived if not d.test.startswith(prefix)]
    out.series = [s for s in drive.series if not s.test.startswith(prefix)]
    out.tests = {t: o for t, o in drive.tests.items() if not t.startswith(prefix)}
    return out


MODULES = (
    "test_quick_profiles.py",
    "test_fill_drive.py",
    "test_sync_writes.py",
    "test_lowqd.py",
    "test_latency.py",
)


def only(drive: DriveResults, *modules: str) -> DriveResults:
    """*drive* with results of *modules* only (fewer figures to build)."""
    for module in set(MODULES) - set(modules):
        drive = without(drive, module)
    return drive


# --- building the section without rendering -----------------------------------------------


@dataclasses.dataclass
class Kept(FigureSink):
    """A sink that keeps the figures (to look at their artists) instead of rendering them."""

    figures: dict[str, Figure] = dataclasses.field(default_factory=dict)

    def html(self, fig: Figure, title: str) -> str:
        assert title not in self.figures, f"two figures titled {title!r}"
        self.figures[title] = fig
        return f'<figure data-title="{title}"></figure>'


def build(*drives: DriveResults, current: int = 1) -> tuple[Section | None, Kept]:
    sink = Kept(Path("/nonexistent"))
    ctx = Context(tuple(map(suite_view, drives)), current, Palette.of(drives), sink, "csd")
    return section(ctx), sink


def notes_of(built: Section | None) -> list[str]:
    assert built is not None
    return re.findall(r"<li>(.*?)</li>", built.body)


def bars_top_down(ax: Axes) -> list[tuple[str, float, str]]:
    """(y label, width, colour) of a horizontal bar chart, top bar first."""
    labels = {
        round(float(y)): t.get_text()
        for y, t in zip(ax.get_yticks(), ax.get_yticklabels(), strict=True)
    }
    rects = [p for p in ax.patches if isinstance(p, Rectangle)]
    ordered = sorted(rects, key=lambda r: r.get_y(), reverse=True)
    return [
        (labels[round(r.get_y() + r.get_height() / 2)], r.get_width(), to_hex(r.get_facecolor()))
        for r in ordered
    ]


@pytest.fixture(scope="module")
def pair() -> tuple[Section | None, Kept, Palette]:
    fast, slow = load(FAST), slower(load(SLOW, "run-b"))
    built, sink = build(fast, slow)
    return built, sink, Palette.of([fast, slow])


# --- the tests ----------------------------------------------------------------------------


def test_nothing_from_the_consumer_suite_gives_no_section() -> None:
    smoke = Measurement(
        "suites/smoke/test_corners.py::test_corner[scratch-seq-read]",
        "scratch",
        "seq-read",
        {"pattern": "seq"},
        {},
        "",
        "",
        "",
    )
    drive = DriveResults(DriveRef("r", "scratch", "smoke only"), measurements=[smoke])
    assert build(drive)[0] is None
    assert build()[0] is None


def test_two_drives_get_every_comparison_in_the_methods_order(pair: Any) -> None:
    built, sink, _ = pair
    assert built.id == "ssd-suite-csd" and built.title == "Consumer SSD suite (suites/csd)"
    assert list(sink.figures) == FIGURES
    headings = re.findall(r"<h3>(.*?)</h3>", built.body)
    assert headings == [
        "Quick profiles (CrystalDiskMark-like, best pass)",
        "Fill drive and full-span read",
        "Sync writes (fsync after every write)",
        "Low-QD performance by read share",
        "Percentile and tail latency (QD1)",
    ]
    assert notes_of(built) == [], "the two drives compare everywhere"
    assert built.html().count('<figure data-title="') == len(FIGURES)


def legend(ax: Axes) -> list[str]:
    """The axes' legend, or the figure's under it (one for every panel)."""
    figure = ax.get_figure()
    found = ax.get_legend() or (figure.legends[0] if figure and figure.legends else None)
    return [t.get_text() for t in found.get_texts()] if found else []


def test_quick_profiles_are_grouped_bars_in_mb_s_and_iops(pair: Any) -> None:
    built, sink, palette = pair
    fig = sink.figures["csd quick profiles fob"]
    seq, rnd = fig.axes[0], fig.axes[1]
    assert seq.get_ylabel() == "MB/s (10⁶ bytes/s)" and rnd.get_ylabel() == "IOPS"
    assert legend(seq) == [FAST, SLOW]
    values = line_values(load(), "fob", "default")
    heights: dict[str, list[float]] = {FAST: [], SLOW: []}
    for rect in (p for p in seq.patches if isinstance(p, Rectangle)):
        colour = to_hex(rect.get_facecolor())
        heights[FAST if colour == palette.colour(FAST) else SLOW].append(rect.get_height())
    expected = [
        values[f"{t.key}.{d}.mb_s"]
        for t in CDM_PROFILES["default"]
        if t.pattern == "seq"
        for d in ("read", "write")
    ]
    assert heights[FAST] == pytest.approx(expected)
    assert heights[SLOW] == pytest.approx([v / FACTOR for v in expected])
    iops = [
        values[f"{t.key}.{d}.iops"]
        for t in CDM_PROFILES["default"]
        if t.pattern == "rnd"
        for d in ("read", "write")
    ]
    rnd_fast = [
        r.get_height()
        for r in rnd.patches
        if isinstance(r, Rectangle) and to_hex(r.get_facecolor()) == palette.colour(FAST)
    ]
    assert rnd_fast == pytest.approx(iops)
    # one row per profile item, read and write of each drive: IOPS (MB/s) for RND
    cells = r"<td>(.*?)</td>" * 4
    row = re.search(rf"<td>Default RND4K Q1T1</td>{cells}", built.body)
    assert row is not None
    read = values["rnd4k-q1t1.read.mb_s"]
    assert row.group(1).endswith(f" IOPS ({read:,.1f} MB/s)")
    assert row.group(3).endswith(f" IOPS ({read / FACTOR:,.1f} MB/s)")
    # SEQ: MB/s (MiB/s)
    row = re.search(rf"<td>Default SEQ1M Q8T1</td>{cells}", built.body)
    assert row is not None
    seq = values["seq1m-q8t1.write.mb_s"]
    assert row.group(2).startswith(f"{seq:,.1f} MB/s (") and row.group(2).endswith(" MiB/s)")


def test_grid_of_values_is_the_grid_the_test_drew() -> None:
    tests = CDM_PROFILES["nvme"]
    scores = [
        CdmScore("nvme", t, d, (100.0, 300.0), (95.4, 286.1), (10.0, 30.0))
        for t in tests
        for d in ("read", "write")
    ]
    values: dict[str, object] = {}
    for score in scores:
        values.update(score.as_values())
    assert grid_of_values("NVMe", tests, values) == grid_of("NVMe", tests, scores)
    partial = grid_of_values("NVMe", tests, {})
    assert all(cell is None for row in partial.rows for cell in row.cells)


def test_fill_curves_overlay_the_drives_and_mark_the_gap(pair: Any) -> None:
    _, sink, palette = pair
    fig = sink.figures["csd fill bandwidth vs written"]
    assert [ax.get_xlabel() for ax in fig.axes] == ["written (GiB)"] * 2
    assert all(ax.get_ylabel() == "bandwidth (MiB/s)" for ax in fig.axes)
    assert "pass 1" in fig.axes[0].get_title() and "pass 2" in fig.axes[1].get_title()
    for ax in fig.axes:
        assert legend(ax)[:2] == [FAST, SLOW]
    latency = sink.figures["csd fill latency vs time"].axes[0]
    assert latency.get_ylabel() == "latency (ms)"
    gaps = [line for line in latency.lines if line.get_linestyle() == ":"]
    assert [to_hex(str(g.get_color())) for g in gaps] == [
        palette.colour(FAST),
        palette.colour(SLOW),
    ]
    assert str(gaps[0].get_label()).startswith(f"{FAST}: idle ")


def test_fill_mean_bars_are_sorted_highest_first(pair: Any) -> None:
    _, sink, palette = pair
    fig = sink.figures["csd fill mean bandwidth"]
    titles = [ax.get_title() for ax in fig.axes]
    assert titles == [
        "fill pass 1: mean MiB/s",
        "fill pass 2: mean MiB/s",
        "full-span read: mean MiB/s",
    ]
    fill = load().derived_values(f"{CSD}test_fill_drive.py::test_fill_drive", "fill")
    assert fill is not None
    top_down = bars_top_down(fig.axes[0])
    assert top_down == [
        (FAST, pytest.approx(fill["pass1_mib_s"]), palette.colour(FAST)),
        (SLOW, pytest.approx(fill["pass1_mib_s"] / FACTOR), palette.colour(SLOW)),
    ]
    assert all(ax.get_xlabel() == "MiB/s" for ax in fig.axes)


def test_bars_stay_sorted_when_the_run_reported_is_the_slower() -> None:
    parts = ("test_fill_drive.py", "test_sync_writes.py", "test_lowqd.py")
    slow, fast = only(slower(load(SLOW)), *parts), only(load(FAST, "run-b"), *parts)
    _, sink = build(slow, fast)
    for title in ("csd fill mean bandwidth", "csd sync writes"):
        for ax in sink.figures[title].axes:
            widths = [w for _, w, _ in bars_top_down(ax)]
            assert widths == sorted(widths, reverse=True), f"{title}: {ax.get_title()}"
            assert [name for name, _, _ in bars_top_down(ax)] == [FAST, SLOW]
    ranking = sink.figures["csd low QD ranking cssd-1-rnd"].axes[0]
    assert [name for name, _, _ in bars_top_down(ranking)] == [f"1. {FAST}", f"2. {SLOW}"]


def test_sync_writes_one_panel_per_workload_and_round(pair: Any) -> None:
    _, sink, palette = pair
    fig = sink.figures["csd sync writes"]
    assert [ax.get_title() for ax in fig.axes] == [
        f"{workload} write + fsync, cssd, round {n}"
        for n in (1, 2)
        for workload in ("SEQ 128KiB Q1T1", "RND 4KiB Q1T1")
    ]
    for ax in fig.axes:
        (fast, fast_mib_s, fast_colour), (slow, slow_mib_s, _) = bars_top_down(ax)
        assert (fast, slow, fast_colour) == (FAST, SLOW, palette.colour(FAST))
        assert slow_mib_s == pytest.approx(fast_mib_s / FACTOR)


def line_values(drive: DriveResults, state: str, profile: str) -> dict[str, Any]:
    """The quick-profile lines of *profile* in *state*, merged (what the grid shows)."""
    merged: dict[str, Any] = {}
    for record in drive.derived:
        if record.name == "cdm-line" and f"[scratch-{state}-{profile}-" in record.test:
            merged.update(record.values)
    assert len(merged) > 3, f"no {profile} lines at {state}"
    return merged


def lowqd_points(drive: DriveResults, cssd_round: int, pattern: str) -> list[dict[str, Any]]:
    """The low-QD point records of one matrix, in the order they ran."""
    return [
        r.values
        for r in drive.derived
        if r.name == "lowqd-point" and f"[scratch-{pattern}-cssd{cssd_round}-" in r.test
    ]


def test_low_qd_weighted_curves_and_ranking(pair: Any) -> None:
    built, sink, palette = pair
    curves = sink.figures["csd low QD weighted cssd-1-rnd"].axes[0]
    lines = [line for line in curves.lines if isinstance(line, Line2D)]
    assert [str(line.get_label()).split(":")[0] for line in lines] == [f"1. {FAST}", f"2. {SLOW}"]
    assert [to_hex(str(line.get_color())) for line in lines] == [
        palette.colour(FAST),
        palette.colour(SLOW),
    ]
    fast, slow = (np.asarray(line.get_ydata(), dtype=float) for line in lines)
    assert slow == pytest.approx(fast / FACTOR)
    points = lowqd_points(load(), 1, "rnd")
    assert len(points) == 9, "QD 1, 2, 4 x 0, 70, 100 % read"
    values = RatioMatrix.from_points(points).as_dict()
    assert fast == pytest.approx(values["weighted_mib_s"])
    assert curves.get_xlabel() == "read share (%)" and curves.get_ylabel().startswith("MiB/s")
    ranking = sink.figures["csd low QD ranking cssd-1-rnd"].axes[0]
    assert bars_top_down(ranking)[0][:2] == (f"1. {FAST}", pytest.approx(values["score_mib_s"]))
    assert f"{values['score_mib_s']:,.1f} (1.)" in built.body


def test_tail_latency_overlays_the_drives_on_the_nines_axis(pair: Any) -> None:
    built, sink, palette = pair
    ax = sink.figures["csd tail lat-rnd4k-qd1-70r cssd-1"].axes[0]
    steps = [line for line in ax.lines if isinstance(line, Line2D)]
    assert [to_hex(str(s.get_color())) for s in steps] == [
        palette.colour(FAST),
        palette.colour(SLOW),
    ]
    assert [t.get_text() for t in ax.get_yticklabels()] == ["90", "99", "99.9", "99.99", "99.999"]
    assert ax.get_xlabel() == "completion latency (µs)"
    marks = [c for c in ax.collections if isinstance(c, PathCollection)]
    hollow = [bool(np.all(np.asarray(m.get_facecolor())[0] == 1.0)) for m in marks]
    # 10,240 I/Os (quick profile) resolve p99.99, not p99.999: one hollow mark per drive
    assert hollow == [False, False, False, False, True] * 2
    # the table: the merged histogram's percentiles, "n/r" where not resolved
    fast = load()
    m = fast.measurement(
        f"{CSD}test_latency.py::test_percentile_and_tail_latency[cssd-1]", "lat-rnd4k-qd1-70r"
    )
    assert m is not None
    pairs = [
        pair
        for s in fast.series
        if s.test == m.test and s.name.startswith(f"{m.name}.")
        for pair in zip(s.arrays["ns"].tolist(), s.arrays["count"].tolist(), strict=True)
    ]
    p99 = LatencySample.of_bins("x", 0.0, pairs).percentiles([99.0])[0].ns / 1000
    row = re.search(
        rf"<td>RND 4KiB Q1T1 70% read</td><td>{FAST}</td><td>[\d,]+</td>"
        r"<td>(.*?)</td><td>(.*?)</td>(?:<td>.*?</td>){3}<td>(.*?)</td>",
        built.body,
    )
    assert row is not None
    assert row.group(2) == latency(p99) and row.group(3) == "histogram"
    assert re.search(rf"<td>{SLOW}</td>(?:<td>[^<]*</td>){{5}}<td>n/r</td>", built.body)


def test_without_histograms_the_tail_falls_back_to_fios_percentiles() -> None:
    fast, bare = only(load(FAST), "test_latency.py"), only(load(SLOW, "run-b"), "test_latency.py")
    bare.series = [s for s in bare.series if ".clat-" not in s.name]
    built, sink = build(fast, bare)
    ax = sink.figures["csd tail lat-rnd4k-qd1-read cssd-1"].axes[0]
    assert len([line for line in ax.lines if isinstance(line, Line2D)]) == 1, "no steps for bare"
    assert len([c for c in ax.collections if isinstance(c, PathCollection)]) == 10
    assert re.search(
        rf"<td>{SLOW}</td>(?:<td>[^<]*</td>){{6}}<td>fio&#x27;s percentiles</td>", built.body
    )
    assert (
        f"{SLOW}: left out of the tail: lat-rnd4k-qd1-70r: no latency histogram to merge "
        "read and write"
    ) in notes_of(built)


def test_notes_say_which_drive_misses_a_test_and_why() -> None:
    parts = ("test_fill_drive.py", "test_sync_writes.py")
    fast = only(load(FAST), *parts)
    failed = without(only(load("no sync", "run-b"), *parts), "test_sync_writes.py")
    failed.tests[f"{CSD}test_sync_writes.py::test_sync_writes[scratch-cssd-1]"] = "failed"
    built, sink = build(fast, failed)
    assert notes_of(built)[:2] == [
        "no sync: left out of the sync writes in cssd, round 1: "
        "test_sync_writes.py::test_sync_writes[cssd-1] failed",
        "no sync: left out of the sync writes in cssd, round 2: "
        "test_sync_writes.py::test_sync_writes[cssd-2] did not run",
    ]
    assert [name for name, _, _ in bars_top_down(sink.figures["csd sync writes"].axes[0])] == [FAST]
    assert legend(sink.figures["csd fill bandwidth vs written"].axes[0])[:2] == [FAST, "no sync"]


def test_notes_say_whose_workload_differs() -> None:
    parts = ("test_sync_writes.py", "test_lowqd.py")
    fast, other = only(load(FAST), *parts), only(load("other shape", "run-b"), *parts)
    key = f"{CSD}test_sync_writes.py::test_sync_writes[cssd-1]"
    other.measurements = [
        dataclasses.replace(m, workload={**m.workload, "iodepth": 4})
        if m.test.endswith("[scratch-cssd-1]") and m.name == "sync-rnd4k-qd1"
        else m
        for m in other.measurements
    ]
    for values in lowqd_points(other, 1, "seq"):
        values["read_shares"] = [0, 10, 100]
    built, sink = build(fast, other)
    notes = notes_of(built)
    assert (
        "other shape: left out of the sync writes in cssd, round 1: sync-rnd4k-qd1 left out, "
        "workload differs (iodepth 4 vs 1)"
    ) in notes, key
    assert any(
        n.startswith(
            "other shape: left out of low QD in cssd, round 1 (seq): the matrix "
            "differs (read_shares [0, 10, 100] vs [0, 70, 100])"
        )
        for n in notes
    )
    ranking = sink.figures["csd low QD ranking cssd-1-seq"].axes[0]
    assert [name for name, _, _ in bars_top_down(ranking)] == [f"1. {FAST}"]
    round_2 = sink.figures["csd low QD ranking cssd-2-seq"].axes[0]
    assert len(bars_top_down(round_2)) == 2, "the other round still compares"


def test_a_drive_without_fill_logs_keeps_its_bars_and_table_row() -> None:
    fast = only(load(FAST), "test_fill_drive.py")
    old = only(slower(load("no logs", "run-b")), "test_fill_drive.py")
    old.series = [s for s in old.series if not s.name.startswith(("fill-pass", "speed-read"))]
    built, sink = build(fast, old)
    assert "no logs: fill curves left out: no fill logs stored" in notes_of(built)
    assert legend(sink.figures["csd fill bandwidth vs written"].axes[0]) == [FAST]
    bars = sink.figures["csd fill mean bandwidth"].axes[0]
    assert [name for name, _, _ in bars_top_down(bars)] == [FAST, "no logs"]
    assert built is not None and "<td>no logs</td>" in built.body


def test_a_drive_compared_with_itself_gets_its_run_and_a_colour_of_its_own() -> None:
    now = only(load(FAST, "run-b"), "test_sync_writes.py")
    before = only(slower(load(FAST, "run-a")), "test_sync_writes.py")
    _, sink = build(now, before)
    ax = sink.figures["csd sync writes"].axes[0]
    names = [name for name, _, _ in bars_top_down(ax)]
    colours = {colour for _, _, colour in bars_top_down(ax)}
    assert names == [FAST, f"{FAST} (run-a)"] and len(colours) == 2


def test_drives_without_consumer_results_are_named() -> None:
    smoke = DriveResults(DriveRef("r", "other", "smoke drive"))
    built, _ = build(only(load(), "test_sync_writes.py"), smoke)
    assert notes_of(built)[0] == "smoke drive: no results from suites/csd"


def test_fill_pass_travels_as_a_series() -> None:
    t = np.array([0.1, 0.2, 0.3])
    one = FillPass(
        "pass 1",
        t,
        np.full(3, 1e9),
        np.cumsum(np.full(3, 1e8)),
        t,
        np.full(3, 5e5),
        300_000_000,
        0.3,
    )
    meta, arrays = series_of(one, "write")
    back = pass_of(json.loads(json.dumps(meta)), unpack(pack(arrays)))
    assert (back.name, back.io_bytes, back.runtime_s) == ("pass 1", 300_000_000, 0.3)
    assert back.written.tolist() == one.written.tolist() and back.mean_bw == one.mean_bw
    assert meta["units"]["bw"] == "B/s" and meta["direction"] == "write"
    with pytest.raises(ParseError, match="not a fill pass"):
        pass_of({"kind": "clat-histogram"}, {"ns": np.zeros(1)})


def test_figures_render_into_the_run_folder(tmp_path: Path) -> None:
    fill = "test_fill_drive.py"
    drives = (only(load(FAST), fill), only(slower(load(SLOW, "run-b")), fill))
    ctx = Context(tuple(map(suite_view, drives)), 1, Palette.of(drives), FigureSink(tmp_path))
    built = section(ctx)
    assert built is not None
    page = built.html()
    assert page.startswith('<section class="ssd-section" id="ssd-suite-csd">')
    assert page.count("<img ") == 4 == len(ctx.figures.saved)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        f"{i:02d}-csd-{name}.{ext}"
        for i, name in enumerate(
            (
                "fill-bandwidth-vs-written",
                "fill-latency-vs-time",
                "fill-mean-bandwidth",
                "read-bandwidth-vs-read",
            ),
            start=1,
        )
        for ext in ("png", "svg")
    )


def test_a_section_drawing_graphs_says_how_far_it_is(tmp_path: Path) -> None:
    """Between its section's own lines the report is not silent while the graphs draw."""
    drives = (only(load(FAST), "test_fill_drive.py"),)
    said: list[str] = []
    sink = FigureSink(tmp_path, progress=said.append, every_s=0.0)
    sink.starting("Consumer SSD suite (suites/csd)")
    ctx = Context(tuple(map(suite_view, drives)), 1, Palette.of(drives), sink)
    assert section(ctx) is not None
    assert said == [
        f"report: Consumer SSD suite (suites/csd): {n} graphs so far" for n in (1, 2, 3, 4)
    ]
    quiet = FigureSink(tmp_path / "quiet", progress=said.append, every_s=3600.0)  # an hour apart
    assert section(Context(ctx.drives, 1, ctx.palette, quiet)) is not None and len(said) == 4


if __name__ == "__main__":
    export(Path(sys.argv[1]), GOLDEN)


def test_the_fill_table_writes_latencies_in_their_unit(pair: Any) -> None:
    built, _, _ = pair
    part = built.body[built.body.index("Fill drive and full-span read") :]
    part = part[part.index("<table") : part.index("</table>")]
    header = re.findall(r"<th>(.*?)</th>", part)
    rows = [
        dict(zip(header, re.findall(r"<td>(.*?)</td>", r), strict=True))
        for r in re.findall(r"<tr><td>.*?</tr>", part)
    ]
    assert len(rows) == 2, rows
    # the fill's mean completion latency (was '–': read under a name never stored) and its
    # highest window (was '14.8' under 'max window latency ms', '2.24e+03' at seconds)
    assert [(r["mean latency"], r["max window latency"]) for r in rows] == [
        ("8.59 ms", "14.77 ms")
    ] * 2
