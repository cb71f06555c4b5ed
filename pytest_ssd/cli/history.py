"""``pytest-ssd history``: one series across firmware builds and drives, as a table and a graph."""

from __future__ import annotations

import argparse
import io
from collections.abc import Sequence
from pathlib import Path

from pytest_ssd.db.history import HISTORY_PERCENTILES, FoundSeries, find_series, history
from pytest_ssd.db.reader import ResultsDb
from pytest_ssd.errors import ConfigError, DatabaseError
from pytest_ssd.results.history import HistoryRow
from pytest_ssd.text import latency_unit, significant

#: graph formats by the output's suffix
FORMATS = {".png": "png", ".svg": "svg"}


def chosen(db: ResultsDb, args: argparse.Namespace) -> list[FoundSeries]:
    """The series the filters find; DatabaseError when none does."""
    found = find_series(db.conn, key=args.series, point=args.point, model=args.model)
    if not found:
        given = [f"{k} {v!r}" for k, v in vars(args).items() if k in FILTERS and v]
        what = ", ".join(given) or "any filter"
        raise DatabaseError(
            f"{db.path}: no series matches {what} (runs recorded before schema 5 have none);"
            " 'pytest-ssd history' without filters lists them"
        )
    return found


#: the filters of the command line, as argparse names them
FILTERS = ("series", "point", "model")


def listing(found: Sequence[FoundSeries]) -> str:
    """The series found, newest first: key, runs, measurements and what the series is."""
    lines = [f"{'series':<16} {'runs':>5} {'meas.':>6}  {'last':<19}  what"]
    lines += [
        f"{s.key:<16} {s.runs:>5} {s.measurements:>6}  {s.last[:19]:<19}  {s.identity.describe()}"
        for s in found
    ]
    lines.append(f"{len(found)} series: pick one with --series KEY (a prefix will do)")
    return "\n".join(lines) + "\n"


def _number(value: float | None, digits: int) -> str:
    return "—" if value is None else f"{value:,.{digits}f}"


def _columns(rows: Sequence[HistoryRow]) -> list[tuple[float, str, float, int]]:
    """Per percentile: (p, unit, µs in one, decimals), the unit that keeps the column's
    largest value under four digits before the point (as the report and the CSV write it)."""
    columns = []
    for p in HISTORY_PERCENTILES:
        values = [v for r in rows if (v := r.percentiles.get(p)) is not None]
        columns.append((p, *latency_unit(max(values, default=0.0))))
    return columns


def table(one: FoundSeries, rows: Sequence[HistoryRow]) -> str:
    """One row per run, drive and direction; percentiles over the pooled histograms."""
    columns = _columns(rows)
    ps = " ".join(f"{f'p{p:g} {unit}':>10}" for p, unit, _, _ in columns)
    head = (
        f"{'run start':<19} {'run':<29} {'drive':<20} {'serial':<16} {'firmware':<10}"
        f" {'dir':<5} {'n':>2} {'IOPS':>10} {'MiB/s':>9} {ps}  percentiles from"
    )
    lines = [f"series {one.key}: {one.identity.describe()}", head]
    for r in rows:
        values = " ".join(
            f"{_latency(r.percentiles.get(p), scale, decimals):>10}"
            for p, _, scale, decimals in columns
        )
        lines.append(
            f"{r.run_start[:19]:<19} {r.run_id:<29} {r.label[:20]:<20} {(r.serial or '—'):<16}"
            f" {(r.firmware or '—'):<10} {r.direction:<5} {r.n:>2} {_number(r.iops, 0):>10}"
            f" {_number(r.bw_mib_s, 1):>9} {values}  {r.source}"
        )
    return "\n".join(lines) + "\n"


def _latency(us: float | None, scale: float, decimals: int) -> str:
    """*us* in its column's unit; a value the column's decimals would write as 0 keeps three
    significant digits (a 398.3 µs p99.9 beside a 2.16 s one: 0.000398, not 0.00)."""
    if us is None:
        return "—"
    text = f"{us / scale:,.{decimals}f}"
    return significant(us / scale, 3) if us and not text.strip("0.-") else text


def graph(one: FoundSeries, rows: Sequence[HistoryRow], output: Path) -> bytes:
    """The series' graph in the format *output*'s suffix names."""
    from pytest_ssd.figures.history import history_figure  # noqa: PLC0415  # matplotlib: -o only

    fmt = FORMATS.get(output.suffix.lower())
    if fmt is None:
        raise ConfigError(f"-o {output}: give a .png or .svg file for the graph")
    fig = history_figure(rows, f"series {one.key}: {one.identity.describe()}")
    buffer = io.BytesIO()
    fig.savefig(buffer, format=fmt, dpi=100)
    return buffer.getvalue()


def history_of(db: ResultsDb, args: argparse.Namespace) -> tuple[str, bytes | None]:
    """(the text to print, the graph's bytes when -o asks for one)."""
    found = chosen(db, args)
    exact = [s for s in found if s.key == args.series]
    if len(found) > 1 and not exact:
        if args.output is not None:
            raise ConfigError(
                f"-o draws one series and {len(found)} match: narrow with --series KEY"
            )
        return listing(found), None
    one = (exact or found)[0]
    rows = history(db.conn, one.key)
    return table(one, rows), graph(one, rows, args.output) if args.output else None
