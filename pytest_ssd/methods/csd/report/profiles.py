"""Quick profiles and sync writes across drives (METHOD §4.1, §4.3).

Quick profiles: per device state, each profile item's best pass as grouped
bars (SEQ in MB/s, RND in IOPS) and a table with MB/s, MiB/s and IOPS.  Sync
writes: MiB/s bars per workload and cSSD round, fastest on top.
"""

from __future__ import annotations

import html
from typing import Any

from pytest_ssd.db import DriveResults, shared_test_id
from pytest_ssd.methods.csd.figures.grid import Bar, Cell, Grid, grid_bars, grid_of_values, mib_bars
from pytest_ssd.methods.csd.report.common import (
    CSD,
    Drives,
    Part,
    measurements_of,
    param_of,
    state_of,
)
from pytest_ssd.methods.csd.workloads.profiles import (
    CDM_PROFILE_ORDER,
    CDM_PROFILES,
    CDM_TITLES,
    DIRECTIONS,
    LINE_RECORD,
)
from pytest_ssd.report.sections.base import row, table

MODULE = f"{CSD}test_quick_profiles.py::"


def _lines(drive: DriveResults) -> dict[str, dict[str, dict[str, Any]]]:
    """The drive's line records merged per state and profile: ``fob`` -> ``default`` -> values."""
    found: dict[str, dict[str, dict[str, Any]]] = {}
    for record in drive.derived:
        if record.name != LINE_RECORD or not record.test.startswith(MODULE):
            continue
        profile = str(record.values.get("profile"))
        state = param_of(shared_test_id(record.test, drive.drive.dut_id)).partition(f"-{profile}-")[
            0
        ]
        found.setdefault(state, {}).setdefault(profile, {}).update(record.values)
    return found


def _grids(lines: dict[str, dict[str, dict[str, Any]]], state: str) -> list[Grid]:
    """A drive's grids of the profiles it ran in *state* (a line not measured shows "–")."""
    profiles = lines.get(state, {})
    return [
        grid_of_values(CDM_TITLES[profile], CDM_PROFILES[profile], profiles[profile])
        for profile in CDM_PROFILE_ORDER
        if profile in profiles
    ]


def _cell(cell: Cell | None, rnd: bool) -> str:
    """One line: MB/s (MiB/s) for SEQ, IOPS (MB/s) for RND; "–" when not measured."""
    if cell is None:
        return "–"
    if rnd:
        return html.escape(f"{cell.iops:,.0f} IOPS ({cell.mb_s:,.1f} MB/s)")
    return html.escape(f"{cell.mb_s:,.1f} MB/s ({cell.mib_s:,.1f} MiB/s)")


def _grid_table(grids: dict[str, list[Grid]]) -> str:
    """One row per profile item, a read and a write column per drive: a line per cell."""
    names = list(grids)
    rows: list[list[str]] = []
    first = next(iter(grids.values()))
    for grid in first:
        for item in grid.rows:
            cells = []
            for name in names:
                other = next((g for g in grids[name] if g.title == grid.title), None)
                found = {r.label: r.cells for r in other.rows} if other else {}
                measured = found.get(item.label, (None,) * len(DIRECTIONS))
                cells += [_cell(measured[index], item.rnd) for index in range(len(DIRECTIONS))]
            rows.append([html.escape(f"{grid.title} {item.label}"), *cells])
    several = len(names) > 1
    heads = [f"{name} {d}" if several else d for name in names for d in DIRECTIONS]
    header = ["test", *(html.escape(h) for h in heads)]
    return table(header, rows, cls="ssd-table ssd-compact")


def quick_profiles(drives: Drives) -> Part | None:
    """Per state, every drive's best pass of each profile item, side by side."""
    lines = {id(d): _lines(d) for d in drives.all}
    states = list(dict.fromkeys(state for found in lines.values() for state in found))
    if not states:
        return None
    part = Part("Quick profiles (CrystalDiskMark-like, best pass)")
    for state in states:
        title = state_of(state)
        grids = {drives.name(d): _grids(lines[id(d)], state) for d in drives.all}
        grids = {name: found for name, found in grids.items() if found}
        part.left_out += [
            f"{drives.name(d)}: left out of the quick profiles at {title}: test_quick_profiles"
            " did not run there"
            for d in drives.all
            if state not in lines[id(d)]
        ]
        fig = grid_bars(grids, drives.colours, f"Quick profiles at {title}: best pass per test")
        part.body.append(f"<h4>{html.escape(title)}</h4>")
        part.body.append(row(drives.figure(fig, f"csd quick profiles {state}"), _grid_table(grids)))
    return part


def _sync_bars(drives: Drives, drive: DriveResults, key: str) -> list[Bar]:
    state = state_of(param_of(key))
    name = drives.name(drive)
    return [
        Bar(
            f"{m.workload.get('label', m.name)} + fsync, {state}",
            name,
            m.metrics["write"]["bw_mib_s"],
            drives.colours[name],
        )
        for m in measurements_of(drive, key)
        if "write" in m.metrics
    ]


def _has_sync(drive: DriveResults, key: str) -> bool:
    return any("write" in m.metrics for m in measurements_of(drive, key))


def sync_writes(drives: Drives) -> Part | None:
    """Sync-write MiB/s of every drive: one panel per workload and round, fastest on top."""
    keys = drives.tests_of("test_sync_writes.py")
    if not keys:
        return None
    part = Part("Sync writes (fsync after every write)")
    bars: list[Bar] = []
    for key in keys:
        what = f"the sync writes in {state_of(param_of(key))}"
        kept, left_out = drives.comparable(key, what, _has_sync)
        part.left_out += left_out
        bars += [bar for d in kept for bar in _sync_bars(drives, d, key)]
    if bars:
        fig = mib_bars(bars, "Sync writes: MiB/s, fastest on top")
        part.body.append(drives.figure(fig, "csd sync writes"))
    return part
