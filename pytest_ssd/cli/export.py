"""Flat tables for spreadsheets: one row per measurement and direction, or per record.

Every cell is a number or a short word, never JSON: a value column says its unit in its
name (``bw_mib_s``, ``block_size_bytes``, ``p99.9_us``), a percentile is named as
everywhere else (``p99.9``: the report, the junit properties, results.json's derived
records).  A measurement row says the drive (its host — the test host, else the
controller —, model, serial and firmware) and the build it measured (``--ssd-build``, else
the firmware; empty: not known), the device state it was measured in (the
target of the last state transition of its drive begun before it, empty before any), its
workload (``SEQ 128KiB Q32T1 read``), which of ``--ssd-repeat``'s runs it is (1 when not
repeated) and when, as ISO text and as seconds since the epoch (``start_unix_s``).
A derived record is one row per value (``window.mean`` …), not a JSON cell.
"""

from __future__ import annotations

import bisect
import csv
import datetime
import io
import json
import re
from collections.abc import Sequence
from typing import Any

from pytest_ssd.db import ResultsDb
from pytest_ssd.documents import loads_json

#: what a spreadsheet takes for the start of a formula (OWASP, CSV injection)
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
_NUMBER = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?\Z")
#: the percentiles a measurement row carries as columns
PERCENTILES = (50.0, 90.0, 99.0, 99.9, 99.99, 99.999)

_MEASUREMENTS = """
SELECT m.run_id, d.label, d.description AS host, m.dut_id AS device, v.model, v.serial,
       v.firmware, d.build, m.test, m.name, m.workload, m.pattern,
       m.block_size AS block_size_bytes, m.iodepth, m.numjobs, m.read_pct, x.direction, x.iops,
       x.bw_mib_s, x.bw_mb_s, x.io_bytes, x.runtime_s, x.lat_mean_us, x.clat_min_us,
       x.clat_max_us, x.clat_samples, {percentiles}, m.start, m."end", h.hostname
FROM measurements m
JOIN metrics x ON x.measurement_id = m.id
JOIN run_devices d ON d.run_id = m.run_id AND d.dut_id = m.dut_id
JOIN devices v ON v.id = d.device_id
JOIN runs r ON r.id = m.run_id
LEFT JOIN hosts h ON h.id = r.host_id
{where} ORDER BY m.id, x.direction
"""
_PERCENTILE = (
    "(SELECT p.us FROM percentiles p WHERE p.measurement_id = m.id AND p.direction = x.direction"
    ' AND abs(p.p - {p}) < 1e-9) AS "{name}"'
)
_STATES = (
    "SELECT run_id, dut_id, target, start FROM transitions {where} ORDER BY run_id, dut_id, start"
)

#: table name -> the SELECT it exports (``{where}`` filters by run)
TABLES = {
    "measurements": _MEASUREMENTS.format(
        percentiles=", ".join(_PERCENTILE.format(p=p, name=f"p{p:g}_us") for p in PERCENTILES),
        where="{where}",
    ),
    "runs": 'SELECT r.id AS run_id, r.start, r."end", r.complete, r.outcome, h.hostname,'
    " h.kernel, h.cpu FROM runs r LEFT JOIN hosts h ON h.id = r.host_id {where} ORDER BY r.start",
    "devices": "SELECT d.run_id, d.label, d.dut_id AS device, v.model, v.serial, v.firmware,"
    " d.build,"
    " v.size_bytes, v.transport, d.scratch, d.datasheet FROM run_devices d"
    " JOIN devices v ON v.id = d.device_id {where} ORDER BY d.run_id",
    "derived": 'SELECT run_id, dut_id AS device, test, name, "values" FROM derived {where}'
    " ORDER BY id",
    "verdicts": "SELECT run_id, dut_id AS device, test, datasheet, line, verdict, ratio"
    " FROM verdicts {where} ORDER BY id",
    "transitions": 'SELECT run_id, dut_id AS device, test, target, start, "end", seconds,'
    " bytes_written, bytes_read, bytes_discarded, fio_written FROM transitions {where} ORDER BY id",
    "tests": "SELECT run_id, nodeid, outcome, duration_s, message FROM tests {where} ORDER BY id",
}
_RUN_COLUMN = {"measurements": "m.run_id", "runs": "r.id", "devices": "d.run_id"}


def rows(db: ResultsDb, table: str, runs: Sequence[str]) -> tuple[list[str], list[tuple[Any, ...]]]:
    """Column names and rows of *table*, for the given run ids (all when empty)."""
    cur = db.conn.execute(TABLES[table].format(where=_where(table, runs)), tuple(runs))
    columns, found = [c[0] for c in cur.description], [tuple(r) for r in cur.fetchall()]
    if table == "measurements":
        query = _STATES.format(where=_where("transitions", runs))
        states = db.conn.execute(query, tuple(runs)).fetchall()
        return _measurements(columns, found, [tuple(r) for r in states])
    if table == "derived":
        return _derived(columns, found)
    return columns, found


def _where(table: str, runs: Sequence[str]) -> str:
    """The WHERE clause that keeps *table*'s rows of *runs* (all rows when none is given)."""
    if not runs:
        return ""
    return f"WHERE {_RUN_COLUMN.get(table, 'run_id')} IN ({', '.join('?' for _ in runs)})"


def _measurements(
    columns: list[str], found: list[tuple[Any, ...]], states: list[tuple[Any, ...]]
) -> tuple[list[str], list[tuple[Any, ...]]]:
    """The workload's JSON cell as its label, the device state and the repeat, in columns."""
    begun: dict[tuple[str, str], tuple[list[str], list[str]]] = {}
    for run_id, dut_id, target, start in states:
        starts, targets = begun.setdefault((run_id, dut_id), ([], []))
        starts.append(start or "")
        targets.append(target)
    at, host = columns.index("workload"), columns.index("host")
    out = []
    for row in found:
        record = dict(zip(columns, row, strict=True))
        workload = loads_json(record["workload"])
        starts, targets = begun.get((record["run_id"], record["device"]), ([], []))
        index = bisect.bisect_right(starts, record["start"] or "") - 1
        state = targets[index] if index >= 0 else None
        extra = (workload.get("label"), state, int(workload.get("repeat", 1)))
        # a device's host: its test host, else the controller that ran it
        where = loads_json(record["host"]).get("host") or record["hostname"]
        cells = [*row[:host], where, *row[host + 1 : at], *extra, *row[at + 1 : -1]]
        out.append((*cells, _unix(record["start"]), _unix(record["end"])))
    head = [*columns[:at], "workload", "state", "repeat", *columns[at + 1 : -1]]
    return [*head, "start_unix_s", "end_unix_s"], out


def _unix(when: str | None) -> float | None:
    """An ISO time as seconds since the epoch (a number a spreadsheet plots), None if absent."""
    return datetime.datetime.fromisoformat(when).timestamp() if when else None


def _derived(
    columns: list[str], found: list[tuple[Any, ...]]
) -> tuple[list[str], list[tuple[Any, ...]]]:
    """One row per value of a derived record: its key (``window.mean``), a number or a word."""
    at = columns.index("values")
    out = [
        (*row[:at], key, *_cells(value))
        for row in found
        for key, value in _flat(loads_json(row[at]))
    ]
    return [*columns[:at], "key", "value", "text"], out


def _cells(value: Any) -> tuple[float | None, str | None]:
    """(value, text) of a derived value: a number in the first, a word (true, n/r) in the other."""
    if isinstance(value, bool):
        return None, str(value).lower()
    if isinstance(value, int | float):
        return value, None
    return None, None if value is None else str(value)


def _flat(value: Any, key: str = "") -> list[tuple[str, Any]]:
    """(dotted key, scalar) of every leaf of *value*: ``window.0.iops`` for a list's item."""
    if isinstance(value, dict):
        items = [(f"{key}.{k}" if key else str(k), v) for k, v in value.items()]
    elif isinstance(value, list):
        items = [(f"{key}.{i}" if key else str(i), v) for i, v in enumerate(value)]
    else:
        return [(key, value)]
    return [leaf for k, v in items for leaf in _flat(v, k)]


def as_csv(columns: list[str], data: list[tuple[Any, ...]]) -> str:
    """CSV for spreadsheets: a text cell a spreadsheet would run as a formula starts with ``'``."""
    out = io.StringIO()
    writer = csv.writer(out)  # RFC 4180: CRLF, so a CR inside a cell is quoted, not a new row
    writer.writerow([spreadsheet_safe(c) for c in columns])
    writer.writerows([spreadsheet_safe(cell) for cell in row] for row in data)
    return out.getvalue()


def spreadsheet_safe(cell: Any) -> Any:
    """*cell*, or a text beginning ``= + - @``, tab or CR with a ``'`` before it (OWASP).

    Spreadsheets run such a cell as a formula: a label ``=HYPERLINK(...)`` would.
    Numbers stay numbers, also as text (``-1.5``): a number is no formula.
    """
    if isinstance(cell, str) and cell.startswith(_FORMULA_START) and not _NUMBER.match(cell):
        return "'" + cell
    return cell


def as_json(columns: list[str], data: list[tuple[Any, ...]]) -> str:
    return json.dumps([dict(zip(columns, row, strict=True)) for row in data], indent=1) + "\n"
