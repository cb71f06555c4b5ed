"""Flat tables for spreadsheets: one row per measurement and direction, or per record."""

from __future__ import annotations

import csv
import io
import json
import re
from collections.abc import Sequence
from typing import Any

from pytest_ssd.db import ResultsDb

#: what a spreadsheet takes for the start of a formula (OWASP, CSV injection)
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
_NUMBER = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?\Z")
#: the percentiles a measurement row carries as columns
PERCENTILES = (50.0, 90.0, 99.0, 99.9, 99.99, 99.999)

_MEASUREMENTS = """
SELECT m.run_id, d.label, m.dut_id AS device, m.test, m.name, m.pattern, m.block_size, m.iodepth,
       m.numjobs, m.read_pct, x.direction, x.iops, x.bw_mib_s, x.bw_mb_s, x.io_bytes, x.runtime_s,
       x.lat_mean_us, x.clat_min_us, x.clat_max_us, x.clat_samples, {percentiles}, m.start, m."end"
FROM measurements m
JOIN metrics x ON x.measurement_id = m.id
JOIN run_devices d ON d.run_id = m.run_id AND d.dut_id = m.dut_id
{where} ORDER BY m.id, x.direction
"""
_PERCENTILE = (
    "(SELECT p.us FROM percentiles p WHERE p.measurement_id = m.id AND p.direction = x.direction"
    " AND abs(p.p - {p}) < 1e-9) AS {name}"
)

#: table name -> the SELECT it exports (``{where}`` filters by run)
TABLES = {
    "measurements": _MEASUREMENTS.format(
        percentiles=", ".join(
            _PERCENTILE.format(p=p, name=f"p{p:g}_us".replace(".", "_")) for p in PERCENTILES
        ),
        where="{where}",
    ),
    "runs": 'SELECT r.id AS run_id, r.start, r."end", r.complete, r.outcome, h.hostname,'
    " h.kernel, h.cpu FROM runs r LEFT JOIN hosts h ON h.id = r.host_id {where} ORDER BY r.start",
    "devices": "SELECT d.run_id, d.label, d.dut_id AS device, v.model, v.serial, v.firmware,"
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
    where = ""
    if runs:
        column = _RUN_COLUMN.get(table, "run_id")
        where = f"WHERE {column} IN ({', '.join('?' for _ in runs)})"
    cur = db.conn.execute(TABLES[table].format(where=where), tuple(runs))
    return [c[0] for c in cur.description], [tuple(r) for r in cur.fetchall()]


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
