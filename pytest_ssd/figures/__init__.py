"""Graphs as matplotlib ``Figure`` objects (Agg, no pyplot state)."""

from __future__ import annotations

import base64
import io
import weakref
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import matplotlib
import numpy as np
import numpy.typing as npt
from matplotlib.axes import Axes
from matplotlib.axis import Axis
from matplotlib.backend_bases import RendererBase
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.text import Annotation, Text
from matplotlib.ticker import (
    FixedLocator,
    FuncFormatter,
    LogFormatter,
    NullLocator,
    ScalarFormatter,
)
from matplotlib.transforms import Bbox
from PIL import Image

from pytest_ssd.fio.job import format_bytes
from pytest_ssd.results.record import Measurement
from pytest_ssd.text import file_stem, latency_unit

#: colours per device, stable across graphs
PALETTE = ("#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#17becf")
NINES = (90.0, 99.0, 99.9, 99.99, 99.999, 99.9999)


#: margin around the tight bounding box, inches (matplotlib's savefig.pad_inches)
PAD_INCHES = 0.1
#: the widest a figure may be at :func:`render`'s 100 dpi: it fits a 1,400 px window at 100 %
MAX_WIDTH_PX = 1300
#: how wide a test's own graph is drawn (pytest-html's results table shows it at that size)
TEST_GRAPH_PX = 800


@dataclass(frozen=True)
class Rendered:
    """A figure rendered once to PNG (for the report) and SVG (for print)."""

    png: bytes
    svg: bytes

    @property
    def png_base64(self) -> str:
        return base64.b64encode(self.png).decode("ascii")

    def save(self, folder: Path, title: str) -> Path:
        """Write ``<stem>.png`` and ``<stem>.svg`` into *folder*; return the PNG's path."""
        folder.mkdir(parents=True, exist_ok=True)
        stem = file_stem(title)
        (folder / f"{stem}.svg").write_bytes(self.svg)
        png = folder / f"{stem}.png"
        png.write_bytes(self.png)
        return png


def value_text(value: float) -> str:
    """A bar's value, enough digits to read at any size: 1,448 · 14.8 · 0.82 (never "0")."""
    if not np.isfinite(value):
        return ""
    if abs(value) >= 100:
        return f"{value:,.0f}"
    return f"{value:.1f}" if abs(value) >= 10 else f"{value:.2g}" if value else "0"


def value_labels(ax: Axes, bars: Any, fontsize: str = "small") -> None:
    """Each bar's value above it, upright (see :func:`value_text`)."""
    ax.bar_label(bars, labels=[value_text(b.get_height()) for b in bars], fontsize=fontsize)


def plain_number(value: float) -> str:
    """A tick's number as people write it: 2,000 · 150 · 0.5 (never 2×10³)."""
    return f"{value:,.0f}" if abs(value) >= 1 else f"{value:g}"


class PlainLogFormatter(LogFormatter):
    """matplotlib's choice of which log ticks to label, each as :func:`plain_number`.

    *factor* turns a tick's data value into the number written (a latency axis in µs
    labelled in ms: 0.001).
    """

    def __init__(self, *args: Any, factor: float = 1.0, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.factor = factor

    def __call__(self, x: float, pos: int | None = None) -> str:
        return plain_number(x * self.factor) if super().__call__(x, pos) else ""


def thousands(axis: Axis) -> None:
    """Plain tick labels with thousands separators on a log axis: 2,000 µs, not 2×10³.

    An axis spanning up to two decades also labels some ticks between the decades
    (200, 300, 500 ...), so a narrow range still reads.
    """
    axis.set_major_formatter(PlainLogFormatter())
    axis.set_minor_formatter(PlainLogFormatter(labelOnlyBase=False, minor_thresholds=(2, 0.5)))
    # minor labels as large as the decades' (matplotlib draws them smaller)
    axis.set_tick_params(which="minor", labelsize="medium")


@dataclass(frozen=True)
class LatencyAxis:
    """What a latency axis shows: its words, and how many µs one of its data units is."""

    quantity: str
    us_per_unit: float = 1.0


#: the latency axes of figures not yet rendered (:func:`latency_axis`), scaled by :func:`render`
_LATENCY_AXES: weakref.WeakKeyDictionary[Axis, LatencyAxis] = weakref.WeakKeyDictionary()


def latency_axis(axis: Axis, quantity: str, *, us_per_unit: float = 1.0) -> None:
    """Mark *axis* as a latency: :func:`render` writes its ticks in the unit that keeps
    them under four digits before the point (µs, ms, s: as the tables do) and puts
    that unit in its label, ``completion latency (ms)``.

    The data stay as given (*us_per_unit* µs in one of their units: 1,000 for ms).
    """
    _LATENCY_AXES[axis] = LatencyAxis(quantity, us_per_unit)
    axis.set_label_text(f"{quantity} ({'ms' if us_per_unit == 1000 else 'µs'})")


def value_axis(axis: Axis, quantity: str, unit: str) -> None:
    """Label *axis* ``quantity (unit)``; a latency in µs is scaled as :func:`latency_axis`."""
    if unit == "µs":
        latency_axis(axis, quantity)
    else:
        axis.set_label_text(f"{quantity} ({unit})")


def scale_latency_axes(fig: Figure) -> None:
    """Every latency axis of *fig* (:func:`latency_axis`) in its unit, for its view limits."""
    for ax in (*fig.axes, *(child for parent in fig.axes for child in parent.child_axes)):
        for axis, limits in ((ax.xaxis, ax.get_xlim()), (ax.yaxis, ax.get_ylim())):
            found = _LATENCY_AXES.get(axis)
            if found is None:
                continue
            highest = max(abs(v) for v in limits if np.isfinite(v)) * found.us_per_unit
            unit, scale, _ = latency_unit(highest)
            factor = found.us_per_unit / scale
            axis.set_label_text(f"{found.quantity} ({unit})")
            if axis.get_scale() == "log":
                thousands(axis)
                for formatter in (axis.get_major_formatter(), axis.get_minor_formatter()):
                    cast(PlainLogFormatter, formatter).factor = factor
            else:
                axis.set_major_formatter(_scaled(factor))


def _scaled(factor: float) -> FuncFormatter:
    """A linear axis's ticks times *factor*, as :func:`linear_number` writes them."""
    return FuncFormatter(lambda value, pos: linear_number(value * factor))


def legend_below(fig: Figure, *axes: Axes, columns: int = 2) -> None:
    """One legend under the figure for *axes* (a label once): never over the data.

    *fig* must have ``layout="constrained"``, which makes room for it.
    """
    found: dict[str, Any] = {}
    for ax in axes:
        for handle, label in zip(*ax.get_legend_handles_labels(), strict=True):
            found.setdefault(label, handle)
    if found:
        fig.legend(
            list(found.values()),
            list(found),
            loc="outside lower center",
            ncols=min(columns, len(found)),
            fontsize="small",
        )


def linear_number(value: float, pos: int | None = None) -> str:
    """A linear axis's tick as people write it: 100,000 · 2,500.5 · 0.25 (no 1e5 offset)."""
    if value == round(value) and abs(value) >= 1:
        return f"{value:,.0f}"
    return f"{value:,.6g}"


def separators(fig: Figure) -> None:
    """Thousands separators on every linear axis left to matplotlib's default formatter.

    Axes with labels of their own (bars' categories, the nines, log axes) keep them.
    """
    for ax in (*fig.axes, *(child for parent in fig.axes for child in parent.child_axes)):
        for axis in (ax.xaxis, ax.yaxis):
            default = type(axis.get_major_formatter()) is ScalarFormatter
            # "function": a secondary axis (IOPS beside MiB/s) maps a linear one
            if default and axis.get_scale() in ("linear", "function"):
                axis.set_major_formatter(FuncFormatter(linear_number))


def _overlap(texts: Sequence[Text], renderer: RendererBase) -> bool:
    boxes = [t.get_window_extent(renderer) for t in texts]
    return any(a.overlaps(b) for i, a in enumerate(boxes) for b in boxes[i + 1 :])


#: what overlapping value labels try in turn: read upwards, then smaller too
_UNTANGLE = ((90, "small"), (90, "x-small"))


def untangle(fig: Figure, renderer: RendererBase) -> bool:
    """Value labels that overlap once drawn (``7,6357,963``) are made to fit, or left out.

    They are turned to read upwards (as wide as a line is high), then made smaller;
    bars too narrow even then lose their labels (the section's table has the
    numbers).  True when any axes changed (the figure must then be drawn again).
    """
    changed = False
    for ax in fig.axes:
        labels = [t for t in ax.texts if isinstance(t, Annotation) and t.get_text()]
        if not labels or not _overlap(labels, renderer):
            continue
        changed = True
        for rotation, size in _UNTANGLE:
            for label in labels:
                label.set_rotation(rotation)
                label.set_fontsize(size)
            if not _overlap(labels, renderer):
                break
        else:
            for label in labels:
                label.set_visible(False)
        _room_above(ax, [t for t in labels if t.get_visible()], renderer)
    return changed


def _room_above(ax: Axes, labels: Sequence[Text], renderer: RendererBase) -> None:
    """Raise a linear axes' top so that turned labels stay inside it (under its title)."""
    if not labels or ax.get_yscale() != "linear":
        return
    over = max(t.get_window_extent(renderer).y1 for t in labels) - ax.bbox.y1
    if over > 0:
        bottom, top = ax.get_ylim()
        ax.set_ylim(bottom, top + (over / ax.bbox.height) * (top - bottom) * 1.1)


def render(fig: Figure, dpi: int = 100) -> Rendered:
    """PNG and SVG of *fig* cropped to its content, drawn twice: once per format.

    The Agg draw lays the figure out (constrained layout) and its pixels, cropped, are
    the PNG; the layout is then kept as it is, so the SVG draw does not compute it again
    (savefig for each format drew it five times: 17.5 s of CPU for csd quick's 27 graphs).
    The crop is what the pixels show (:func:`_inked`), measured again as matplotlib's
    tight box only when something reaches the canvas's edge.
    Every linear axis reads with thousands separators (:func:`separators`), every latency
    axis in its unit (:func:`scale_latency_axes`).
    """
    scale_latency_axes(fig)
    separators(fig)
    fig.set_dpi(dpi)
    canvas = FigureCanvasAgg(fig)
    canvas.draw()  # type: ignore[no-untyped-call]  # constrained layout places the axes here
    renderer = canvas.get_renderer()  # type: ignore[no-untyped-call]
    if untangle(fig, renderer):  # labels turned upright: laid out and drawn again
        canvas.draw()  # type: ignore[no-untyped-call]
    pixels = np.asarray(canvas.buffer_rgba())  # type: ignore[no-untyped-call]
    bbox = (_inked(pixels, dpi) or fig.get_tightbbox(renderer)).padded(PAD_INCHES)
    fig.set_layout_engine(None)  # the positions found stay: savefig draws the SVG once
    png = _cropped_png(pixels, bbox, dpi)
    svg = io.BytesIO()
    # text as text, not a path per glyph: a quarter less of the SVG's draw, half its size
    with matplotlib.rc_context({"svg.fonttype": "none"}):
        fig.savefig(svg, format="svg", bbox_inches=bbox)
    return Rendered(png, svg.getvalue())


def render_for_test(fig: Figure) -> Rendered:
    """:func:`render` for a test's row in the results table: drawn :data:`TEST_GRAPH_PX` wide
    (a 6.4 in figure at 125 dpi; text grows with it), at most :data:`MAX_WIDTH_PX`."""
    width = fig.get_figwidth()
    dpi = max(100, min(round(TEST_GRAPH_PX / width), int(MAX_WIDTH_PX / width)))
    return render(fig, dpi)


def _inked(pixels: npt.NDArray[np.uint8], dpi: int) -> Bbox | None:
    """The box (inches) of the Agg buffer's pixels that are not white; None when there are
    none, or when they reach the canvas's edge (something may lie beyond it).

    Constrained layout keeps a figure's content inside its canvas, so this is the crop
    at the price of one look at the pixels: measuring matplotlib's tight box again laid
    out every tick label a third time (0.55 s of CPU on csd quick's 27 graphs).
    """
    inked = pixels.view(np.uint32)[:, :, 0] != 0xFFFFFFFF  # not opaque white: RGBA, a word each
    rows, columns = np.flatnonzero(inked.any(axis=1)), np.flatnonzero(inked.any(axis=0))
    height, width = inked.shape
    if not rows.size or rows[0] == 0 or columns[0] == 0:
        return None
    if rows[-1] == height - 1 or columns[-1] == width - 1:
        return None
    x0, x1 = columns[0], columns[-1] + 1
    y0, y1 = height - rows[-1] - 1, height - rows[0]
    return Bbox.from_extents(x0 / dpi, y0 / dpi, x1 / dpi, y1 / dpi)


def _cropped_png(pixels: npt.NDArray[np.uint8], bbox: Bbox, dpi: int) -> bytes:
    """The part of the Agg buffer *pixels* inside *bbox* (inches), white beyond the figure.

    RGB: the canvas is opaque, so an alpha channel would only add a fifth to the encoding.
    """
    height, width = pixels.shape[:2]
    x0, y1 = round(bbox.x0 * dpi), height - round(bbox.y0 * dpi)
    x1, y0 = x0 + round(bbox.width * dpi), y1 - round(bbox.height * dpi)
    out = np.full((y1 - y0, x1 - x0, 3), 255, dtype=np.uint8)
    left, top, right, bottom = max(x0, 0), max(y0, 0), min(x1, width), min(y1, height)
    out[top - y0 : bottom - y0, left - x0 : right - x0] = pixels[top:bottom, left:right, :3]
    buffer = io.BytesIO()
    Image.fromarray(out).save(buffer, format="png")
    return buffer.getvalue()


#: a health sampler's arrays (``t_s`` seconds from the start, ``temp_c``), or None: no sensor
Health = Mapping[str, npt.NDArray[Any]] | None


def temperature_axis(ax: Axes, health: Health, offset_s: float = 0.0) -> None:
    """The device's temperature, dashed on a right-hand axis of *ax*'s time scale.

    Nothing is drawn when the device has no sensor (no samples, or none with a value).
    *offset_s* moves the samples to the graph's time origin.
    """
    if health is None or not np.isfinite(health["temp_c"]).any():
        return
    right = ax.twinx()
    right.plot(
        np.asarray(health["t_s"]) + offset_s,
        health["temp_c"],
        color="#555",
        linestyle="--",
        linewidth=1,
    )
    right.set_ylabel("temperature (°C)", color="#555")


def nines_x(p: float) -> float:
    """Position of percentile *p* on a 'nines' axis: 1 / (1 - p/100) (90 -> 10, 99 -> 100)."""
    return 1.0 / (1.0 - p / 100.0)


def latency_percentiles(measurement: Measurement) -> Figure:
    """Completion-latency percentiles per direction from 90 % up, on a nines axis.

    Percentiles the sample cannot resolve are drawn as hollow markers.
    """
    fig = Figure(figsize=(6.4, 3.6), layout="constrained")
    ax = fig.add_subplot()
    shown: list[float] = []
    for index, (direction, data) in enumerate(sorted(measurement.metrics.items())):
        points = [
            item for item in (data.get("clat") or {}).get("percentiles", []) if item["p"] >= 90
        ]
        if not points:
            continue
        colour = PALETTE[index % len(PALETTE)]
        xs = np.array([nines_x(item["p"]) for item in points])
        ys = np.array([item["us"] for item in points])
        ax.plot(xs, ys, color=colour, label=f"{direction} ({data['iops']:,.0f} IOPS)")
        resolved = np.array([item["resolved"] for item in points])
        ax.scatter(xs[resolved], ys[resolved], color=colour, s=14, zorder=3)
        ax.scatter(
            xs[~resolved],
            ys[~resolved],
            facecolors="white",
            edgecolors=colour,
            s=22,
            zorder=3,
            label="not resolved by the sample" if not resolved.all() else None,
        )
        shown.extend(float(item["p"]) for item in points)
    ax.set_xscale("log")
    ticks = [p for p in NINES if shown and min(shown) <= p <= max(shown)]
    ax.xaxis.set_major_locator(FixedLocator([nines_x(p) for p in ticks]))
    ax.xaxis.set_minor_locator(NullLocator())
    ax.set_xticklabels([f"{p:g}" for p in ticks])
    ax.set_xlabel("percentile (%)")
    latency_axis(ax.yaxis, "completion latency")
    ax.set_title(f"{measurement.workload.get('label', measurement.name)}: tail latency")
    ax.grid(True, which="both", alpha=0.3)
    legend_below(fig, ax)
    return fig


def workload_bars(measurements: Sequence[Measurement], devices: Sequence[str]) -> Figure:
    """One bar per workload and device: SEQ in MiB/s, RND in k-IOPS (the four-corner view)."""
    panels = [
        panel
        for panel in (("seq", "MiB/s", "bw_mib_s", 1.0), ("rnd", "k-IOPS", "iops", 1e-3))
        if any(m.workload.get("pattern") == panel[0] for m in measurements)
    ]  # a pattern nobody measured gets no empty panel
    fig = Figure(figsize=(4.0 * max(len(panels), 1) + 0.5, 3.8), layout="constrained")
    for position, (pattern, unit, key, scale) in enumerate(panels, start=1):
        ax = fig.add_subplot(1, len(panels), position)
        chosen = [m for m in measurements if m.workload.get("pattern") == pattern]
        labels = sorted({_bar_label(m, d) for m in chosen for d in m.metrics})
        width = 0.8 / max(len(devices), 1)
        for index, device in enumerate(devices):
            values = {
                _bar_label(m, d): data[key] * scale
                for m in chosen
                if m.device == device
                for d, data in m.metrics.items()
            }
            xs = np.arange(len(labels)) + index * width
            heights = [values.get(label, 0.0) for label in labels]
            bars = ax.bar(xs, heights, width, color=PALETTE[index % len(PALETTE)], label=device)
            value_labels(ax, bars)
        ax.set_xticks(np.arange(len(labels)) + width * (len(devices) - 1) / 2)
        ax.set_xticklabels(labels, rotation=20, ha="right", fontsize="small")
        ax.set_ylabel(unit)
        ax.set_title(f"{pattern.upper()} ({unit})")
        ax.grid(True, axis="y", alpha=0.3)
    if len(devices) > 1:
        legend_below(fig, *fig.axes, columns=4)
    return fig


def _bar_label(measurement: Measurement, direction: str) -> str:
    workload = measurement.workload
    bs = format_bytes(int(workload["block_size"]))
    return f"{bs} Q{workload['iodepth']}T{workload['numjobs']} {direction}"
