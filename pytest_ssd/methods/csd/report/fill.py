"""Fill drive and the full-span read across drives (METHOD §4.2, §8).

The curves come from the passes' logs the suite keeps as series (``fill-pass-1``,
``fill-pass-2``, ``speed-read``); the numbers (fio's mean MiB/s, the cache
estimate, latency) from what the tests derived, so a drive whose logs were not
kept still gets its bars and its table row.
"""

from __future__ import annotations

import html
from collections.abc import Callable
from typing import Any

from pytest_ssd.analysis.fill import CacheEstimate, FillPass
from pytest_ssd.db import DriveResults
from pytest_ssd.errors import ParseError
from pytest_ssd.methods.csd.figures.fill import (
    DriveFill,
    bw_vs_data_drives,
    latency_vs_time_drives,
    pass_of,
)
from pytest_ssd.methods.csd.figures.grid import Bar, mib_bars
from pytest_ssd.methods.csd.report.common import CSD, Drives, Part, derived, series
from pytest_ssd.report.sections.base import table
from pytest_ssd.text import latency, significant

FILL = f"{CSD}test_fill_drive.py::test_fill_drive"
READ = f"{CSD}test_fill_drive.py::test_speed_profile_read"
GiB = 1 << 30
#: a derived record's values, and (node id, values) of the record
Values = dict[str, Any]
Record = tuple[str, Values]


def _has_fill(drive: DriveResults, key: str) -> bool:
    return derived(drive, key, "fill") is not None


def _has_read(drive: DriveResults, key: str) -> bool:
    return derived(drive, key, "speed-read") is not None


def _passes(drive: DriveResults, nodeid: str, names: list[str]) -> list[FillPass]:
    """The passes the test *nodeid* stored as series *names* (those it has)."""
    found = [series(drive, nodeid, name) for name in names]
    return [pass_of(s.meta, s.arrays) for s in found if s is not None]


def _cache(values: Values, number: int) -> CacheEstimate:
    gib = values.get(f"pass{number}_cache_gib")
    return CacheEstimate(
        bool(values.get(f"pass{number}_cache_resolved")),
        str(values.get(f"pass{number}_cache_reason", "")),
        None if gib is None else float(gib) * GiB,
    )


def _cache_text(values: Values, number: int) -> str:
    cache = _cache(values, number)
    if cache.cache_bytes is not None:
        return f"{significant(cache.cache_bytes / GiB)} GiB"
    return "none seen" if cache.resolved else "n/r"


def _number(value: object, fmt: str = ",.0f") -> str:
    return "–" if not isinstance(value, int | float) else format(value, fmt)


def _latency_ms(value: object) -> str:
    """A latency given in ms in its unit (2.24 s, not 2.24e+03 ms), as the results table."""
    return "–" if not isinstance(value, int | float) else latency(value * 1000)


#: the table's columns: header, and the cell from the fill's and the read's derived values
COLUMNS: tuple[tuple[str, Callable[[Values, Values], str]], ...] = (
    ("pass 1 MiB/s", lambda fill, _: _number(fill.get("pass1_mib_s"))),
    ("pass 2 MiB/s", lambda fill, _: _number(fill.get("pass2_mib_s"))),
    ("cache (pass 1)", lambda fill, _: _cache_text(fill, 1)),
    ("after the cache MiB/s", lambda fill, _: _number(fill.get("pass1_post_cache_mib_s"))),
    ("cache (pass 2)", lambda fill, _: _cache_text(fill, 2)),
    ("mean latency", lambda fill, _: _latency_ms(fill.get("clat_mean_ms"))),
    ("max window latency", lambda fill, _: _latency_ms(fill.get("lat_max_window_ms"))),
    ("read MiB/s", lambda _, read: _number(read.get("plugin_mib_s"))),
    ("dd MiB/s", lambda _, read: _number(read.get("dd_mib_s"))),
)


def _table(rows: list[tuple[str, Values, Values]]) -> str:
    header = ["drive", *(title for title, _ in COLUMNS)]
    return table(
        header,
        [
            [html.escape(name), *(cell(fill, read) for _, cell in COLUMNS)]
            for name, fill, read in rows
        ],
    )


def _curves(
    drives: Drives, drive: DriveResults, fill: Record | None, read: Record | None
) -> tuple[DriveFill | None, DriveFill | None, list[str]]:
    """The drive's fill passes and its read as logged; notes on what is missing."""
    name = drives.name(drive)
    passes, logged, notes = [], [], []
    try:
        if fill is not None:
            passes = _passes(drive, fill[0], ["fill-pass-1", "fill-pass-2"])
            if not passes:
                notes.append(f"{name}: fill curves left out: no fill logs stored")
        if read is not None:
            logged = _passes(drive, read[0], ["speed-read"])
    except ParseError as exc:
        notes.append(f"{name}: fill curves left out: {exc}")
    values = fill[1] if fill else {}
    caches = tuple(_cache(values, n) for n in range(1, len(passes) + 1))
    gap = values.get("idle_gap_measured_s", values.get("idle_gap_s"))
    return (
        DriveFill(tuple(passes), caches, gap) if passes else None,
        DriveFill(tuple(logged)) if logged else None,
        notes,
    )


def _bars(name: str, colour: str, fill: Values, read: Values) -> list[Bar]:
    """Mean MiB/s (fio's) of each pass and of the read."""
    means = {f"fill pass {n}": fill.get(f"pass{n}_mib_s") for n in (1, 2)}
    means["full-span read"] = read.get("plugin_mib_s")
    return [
        Bar(f"{what}: mean MiB/s", name, float(mean), colour)
        for what, mean in means.items()
        if isinstance(mean, int | float)
    ]


def fill_drive(drives: Drives) -> Part | None:
    """Curves, sorted mean bars and a table of the fill drive and the full-span read."""
    if not drives.tests_of("test_fill_drive.py"):
        return None
    part = Part("Fill drive and full-span read")
    filled, left_out = drives.comparable(FILL, "the fill drive", _has_fill)
    read, read_left_out = drives.comparable(READ, "the full-span read", _has_read)
    part.left_out += left_out + read_left_out
    fills: dict[str, DriveFill] = {}
    reads: dict[str, DriveFill] = {}
    bars: list[Bar] = []
    rows = []
    for drive in drives.all:
        name = drives.name(drive)
        fill = derived(drive, FILL, "fill") if any(d is drive for d in filled) else None
        speed = derived(drive, READ, "speed-read") if any(d is drive for d in read) else None
        if fill is None and speed is None:
            continue
        values, read_values = fill[1] if fill else {}, speed[1] if speed else {}
        rows.append((name, values, read_values))
        bars += _bars(name, drives.colours[name], values, read_values)
        curves, logged, notes = _curves(drives, drive, fill, speed)
        part.left_out += notes
        if curves is not None:
            fills[name] = curves
        if logged is not None:
            reads[name] = logged
    if fills:
        fig = bw_vs_data_drives(fills, drives.colours)
        part.body.append(drives.figure(fig, "csd fill bandwidth vs written"))
        fig = latency_vs_time_drives(fills, drives.colours)
        part.body.append(drives.figure(fig, "csd fill latency vs time"))
    if bars:
        fig = mib_bars(bars, "Fill drive and read: mean bandwidth, highest on top")
        part.body.append(drives.figure(fig, "csd fill mean bandwidth"))
    if reads:
        fig = bw_vs_data_drives(reads, drives.colours, done="read", title="Full-span read")
        part.body.append(drives.figure(fig, "csd read bandwidth vs read"))
    if rows:
        part.body.append(_table(rows))
    return part
