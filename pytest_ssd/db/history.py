"""A series across runs (``pytest-ssd history``): the series a filter finds, and one's rows.

A series is found by its key (or a prefix of it), a part of its test point
and a part of its drive model; each uses an index (``series_keys``,
``measurements.series_key``), so a database of many runs answers at once.  A
drive's repeats of the point in one run are one row: throughput is their mean,
percentiles come from their latency histograms pooled (never averaged).
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable
from dataclasses import dataclass, fields
from typing import Any

from pytest_ssd.db.arrays import unpack
from pytest_ssd.db.conn import Conn, Row
from pytest_ssd.fio.results import pooled_percentiles
from pytest_ssd.results.history import HistoryRow, SeriesIdentity

#: the percentiles a history row shows
HISTORY_PERCENTILES = (50.0, 99.0, 99.9)


@dataclass(frozen=True)
class FoundSeries:
    """A series in the database: what it is and how much of it there is."""

    key: str
    identity: SeriesIdentity
    measurements: int
    runs: int
    last: str


def find_series(
    conn: Conn, *, key: str | None = None, point: str | None = None, model: str | None = None
) -> list[FoundSeries]:
    """The series matching every filter given (a key's prefix, parts of point and model)."""
    where, params = ["1 = 1"], []
    for column, value, pattern in (
        ("k.key", key, "{}%"),
        ("lower(k.point)", point, "%{}%"),
        ("lower(k.model)", model, "%{}%"),
    ):
        if value:
            where.append(f"{column} LIKE ?")
            params.append(pattern.format(value.lower()))
    rows = conn.execute(
        "SELECT k.key, k.model, k.size_bytes, k.point, k.state, k.profile, k.host_class,"
        " count(*) AS n, count(DISTINCT m.run_id) AS runs, max(m.start) AS last"
        " FROM series_keys k JOIN measurements m ON m.series_key = k.key"
        f" WHERE {' AND '.join(where)}"
        " GROUP BY k.key, k.model, k.size_bytes, k.point, k.state, k.profile, k.host_class"
        " ORDER BY last DESC, k.key",
        params,
    ).fetchall()
    return [
        FoundSeries(r["key"], _identity(r), int(r["n"]), int(r["runs"]), r["last"] or "")
        for r in rows
    ]


def _identity(row: Row) -> SeriesIdentity:
    return SeriesIdentity(**{part.name: row[part.name] for part in fields(SeriesIdentity)})


def history(conn: Conn, key: str) -> list[HistoryRow]:
    """The series *key*: one row per drive, run and direction, oldest run first."""
    rows = conn.execute(
        "SELECT m.id, m.run_id, m.dut_id, m.test, m.name, m.firmware, m.serial,"
        " r.start AS run_start, d.label, x.direction, x.iops, x.bw_mib_s"
        " FROM measurements m JOIN runs r ON r.id = m.run_id"
        " JOIN run_devices d ON d.run_id = m.run_id AND d.dut_id = m.dut_id"
        " JOIN metrics x ON x.measurement_id = m.id"
        " WHERE m.series_key = ? ORDER BY r.start, m.run_id, m.dut_id, x.direction, m.id",
        (key,),
    ).fetchall()
    groups: dict[tuple[str, str, str], list[Row]] = {}
    for row in rows:
        groups.setdefault((row["run_id"], row["dut_id"], row["direction"]), []).append(row)
    return [_row(conn, group) for group in groups.values()]


def _row(conn: Conn, group: list[Row]) -> HistoryRow:
    first = group[0]
    percentiles, source = _percentiles(conn, group)
    return HistoryRow(
        run_id=first["run_id"],
        run_start=first["run_start"],
        label=first["label"],
        firmware=first["firmware"],
        serial=first["serial"],
        direction=first["direction"],
        n=len(group),
        iops=_mean(r["iops"] for r in group),
        bw_mib_s=_mean(r["bw_mib_s"] for r in group),
        percentiles=percentiles,
        source=source,
        iops_each=tuple(float(r["iops"]) for r in group if r["iops"] is not None),
        p99_each=_own_p99(conn, group),
    )


def _own_p99(conn: Conn, group: list[Row]) -> tuple[float | None, ...]:
    """fio's own p99 of each measurement of *group* (µs), for the spread of repeats: one
    query for the group (its rows share the direction)."""
    ids = [r["id"] for r in group]
    marks = ", ".join("?" for _ in ids)
    found = conn.execute(
        f"SELECT measurement_id, us FROM percentiles WHERE measurement_id IN ({marks})"
        " AND direction = ? AND p = ?",
        (*ids, group[0]["direction"], 99.0),
    ).fetchall()
    us = {r["measurement_id"]: r["us"] for r in found}
    return tuple(None if us.get(i) is None else float(us[i]) for i in ids)


def _mean(values: Iterable[Any]) -> float | None:
    found = [float(v) for v in values if v is not None]
    return statistics.fmean(found) if found else None


def _percentiles(conn: Conn, group: list[Row]) -> tuple[dict[float, float | None], str]:
    """The group's percentiles from its pooled histograms; fio's own for one run without."""
    first = group[0]
    tests = sorted({r["test"] for r in group})
    marks = ", ".join("?" for _ in tests)
    found = conn.execute(
        "SELECT arrays FROM series WHERE run_id = ? AND dut_id = ? AND name = ?"
        f" AND test IN ({marks})",
        (first["run_id"], first["dut_id"], f"{first['name']}.clat-{first['direction']}", *tests),
    ).fetchall()
    histograms = []
    for row in found:
        arrays = unpack(row["arrays"])
        histograms.append(zip(arrays["ns"].tolist(), arrays["count"].tolist(), strict=True))
    if histograms:
        return pooled_percentiles(histograms, HISTORY_PERCENTILES), "pooled bins"
    if len(group) == 1:
        own = conn.execute(
            "SELECT p, us FROM percentiles WHERE measurement_id = ? AND direction = ?",
            (first["id"], first["direction"]),
        ).fetchall()
        by_p = {float(r["p"]): r["us"] for r in own}
        if by_p:
            return {p: by_p.get(p) for p in HISTORY_PERCENTILES}, "fio"
    return dict.fromkeys(HISTORY_PERCENTILES), "none"
