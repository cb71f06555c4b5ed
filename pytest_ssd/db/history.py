"""A series across runs (``pytest-ssd history``): the series a filter finds, and one's rows.

A series is found by its key (or a prefix of it), a part of its test point
and a part of its drive model; each uses an index (``series_keys``,
``measurements.series_key``), so a database of many runs answers at once.  A
drive's repeats of the point in one run are one row: throughput is their mean,
percentiles come from their latency histograms pooled (never averaged).  A point's
repetitions (``rnd-q1-r070-n0``, ``-n1`` ...) are repeats of it: a database recorded
before they were one series keeps a series per repetition, read as one here
(:func:`~pytest_ssd.results.history.without_repetition`): nothing is rewritten.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, fields
from typing import Any

from pytest_ssd.db.arrays import unpack
from pytest_ssd.db.conn import Conn, Row
from pytest_ssd.fio.results import pooled_percentiles
from pytest_ssd.results.history import HistoryRow, SeriesIdentity, without_repetition

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
    #: the keys its measurements are stored under (a database recorded before a point's
    #: repetitions were one series has one per repetition); empty: its own key
    stored: tuple[str, ...] = ()

    @property
    def keys(self) -> tuple[str, ...]:
        """What :func:`history` reads the series from."""
        return self.stored or (self.key,)


#: a stored point that may name a repetition (filtered exactly in Python: LIKE is portable)
_MAY_REPEAT = "%-n%"


def find_series(
    conn: Conn, *, key: str | None = None, point: str | None = None, model: str | None = None
) -> list[FoundSeries]:
    """The series matching every filter given (a key's prefix, parts of point and model)."""
    where, params = ["1 = 1"], []
    for column, value, pattern in (
        ("lower(k.point)", point, "%{}%"),
        ("lower(k.model)", model, "%{}%"),
    ):
        if value:
            where.append(f"{column} LIKE ?")
            params.append(pattern.format(value.lower()))
    if key:  # a repetition's old key is not its series': those are looked at too
        where.append("(k.key LIKE ? OR k.point LIKE ?)")
        params += [f"{key.lower()}%", _MAY_REPEAT]
    rows = conn.execute(
        "SELECT k.key, k.model, k.size_bytes, k.point, k.state, k.profile, k.host_class,"
        " count(*) AS n, count(DISTINCT m.run_id) AS runs, max(m.start) AS last"
        " FROM series_keys k JOIN measurements m ON m.series_key = k.key"
        f" WHERE {' AND '.join(where)}"
        " GROUP BY k.key, k.model, k.size_bytes, k.point, k.state, k.profile, k.host_class",
        params,
    ).fetchall()
    groups: dict[str, list[Row]] = {}
    for row in rows:
        groups.setdefault(without_repetition(_identity(row)).key, []).append(row)
    found = [
        _found(conn, series, group)
        for series, group in groups.items()
        if not key or series.startswith(key.lower())
    ]
    found.sort(key=lambda s: s.key)
    return sorted(found, key=lambda s: s.last, reverse=True)  # newest first, then by key


def _found(conn: Conn, key: str, group: list[Row]) -> FoundSeries:
    """The series *key* stored under the keys of *group* (one, unless per repetition)."""
    identity = without_repetition(_identity(group[0]))
    last = max(r["last"] or "" for r in group)
    measurements = sum(int(r["n"]) for r in group)
    if len(group) == 1 and group[0]["key"] == key:
        return FoundSeries(key, identity, measurements, int(group[0]["runs"]), last)
    stored = tuple(sorted(r["key"] for r in group))
    runs = conn.execute(
        f"SELECT count(DISTINCT run_id) FROM measurements WHERE series_key IN ({_marks(stored)})",
        stored,
    ).fetchone()[0]
    return FoundSeries(key, identity, measurements, int(runs), last, stored)


def _identity(row: Row) -> SeriesIdentity:
    return SeriesIdentity(**{part.name: row[part.name] for part in fields(SeriesIdentity)})


def history(conn: Conn, *keys: str) -> list[HistoryRow]:
    """The series stored under *keys* (:attr:`FoundSeries.keys`): one row per drive, run and
    direction, oldest run first; a point's repetitions are its repeats."""
    rows = conn.execute(
        "SELECT m.id, m.run_id, m.dut_id, m.test, m.name, m.firmware, m.serial,"
        " r.start AS run_start, d.label, d.build, x.direction, x.iops, x.bw_mib_s"
        " FROM measurements m JOIN runs r ON r.id = m.run_id"
        " JOIN run_devices d ON d.run_id = m.run_id AND d.dut_id = m.dut_id"
        " JOIN metrics x ON x.measurement_id = m.id"
        f" WHERE m.series_key IN ({_marks(keys)})"
        " ORDER BY r.start, m.run_id, m.dut_id, x.direction, m.id",
        keys,
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
        build=first["build"],
    )


def _own_p99(conn: Conn, group: list[Row]) -> tuple[float | None, ...]:
    """fio's own p99 of each measurement of *group* (µs), for the spread of repeats: one
    query for the group (its rows share the direction)."""
    ids = [r["id"] for r in group]
    found = conn.execute(
        f"SELECT measurement_id, us FROM percentiles WHERE measurement_id IN ({_marks(ids)})"
        " AND direction = ? AND p = ?",
        (*ids, group[0]["direction"], 99.0),
    ).fetchall()
    us = {r["measurement_id"]: r["us"] for r in found}
    return tuple(None if us.get(i) is None else float(us[i]) for i in ids)


def _marks(values: Sequence[object]) -> str:
    return ", ".join("?" for _ in values)


def _mean(values: Iterable[Any]) -> float | None:
    found = [float(v) for v in values if v is not None]
    return statistics.fmean(found) if found else None


def _percentiles(conn: Conn, group: list[Row]) -> tuple[dict[float, float | None], str]:
    """The group's percentiles from its pooled histograms; fio's own for one run without."""
    first = group[0]
    tests = sorted({r["test"] for r in group})
    # a point's repetitions: a histogram each, under each one's name
    names = sorted({f"{r['name']}.clat-{first['direction']}" for r in group})
    found = conn.execute(
        f"SELECT arrays FROM series WHERE run_id = ? AND dut_id = ? AND name IN ({_marks(names)})"
        f" AND test IN ({_marks(tests)})",
        (first["run_id"], first["dut_id"], *names, *tests),
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
