"""``pytest-ssd history``: one series across builds and drives, as a table and a graph."""

from __future__ import annotations

import argparse
import io
import itertools
from collections.abc import Sequence
from pathlib import Path

from pytest_ssd.db.history import HISTORY_PERCENTILES, FoundSeries, find_series, history
from pytest_ssd.db.reader import ResultsDb
from pytest_ssd.errors import ConfigError, DatabaseError
from pytest_ssd.results.history import Change, HistoryRow, drive_of
from pytest_ssd.text import latency
from pytest_ssd.verdict.judge import judge

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


def table(one: FoundSeries, rows: Sequence[HistoryRow]) -> str:
    """One row per run, drive and direction; percentiles over the pooled histograms, each in
    the unit that fits it (µs, ms or s: a 70 µs p50 beside a 2 ms one reads 70.0 µs)."""
    ps = " ".join(f"{f'p{p:g}':>10}" for p in HISTORY_PERCENTILES)
    head = (
        f"{'run start':<19} {'run':<29} {'drive':<20} {'serial':<16} {'build':<12}"
        f" {'dir':<5} {'n':>2} {'IOPS':>10} {'MiB/s':>9} {ps}  percentiles from"
    )
    lines = [f"series {one.key}: {one.identity.describe()}", head]
    for r in rows:
        values = " ".join(
            f"{'—' if (us := r.percentiles.get(p)) is None else latency(us):>10}"
            for p in HISTORY_PERCENTILES
        )
        lines.append(
            f"{r.run_start[:19]:<19} {r.run_id:<29} {r.label[:20]:<20} {(r.serial or '—'):<16}"
            f" {r.shown_build[:12]:<12} {r.direction:<5} {r.n:>2} {_number(r.iops, 0):>10}"
            f" {_number(r.bw_mib_s, 1):>9} {values}  {r.source}"
        )
    return "\n".join(lines) + "\n"


def changes(rows: Sequence[HistoryRow]) -> list[Change]:
    """Each drive's builds against its build before, judged on their repeats (IOPS and fio's
    own p99 of each repeat) with the baseline's noise-aware verdicts."""
    found: list[Change] = []
    for drive in dict.fromkeys(drive_of(r) for r in rows):
        mine = [r for r in rows if drive_of(r) == drive]
        builds = list(dict.fromkeys(r.shown_build for r in mine))
        for before, after in itertools.pairwise(builds):
            for metric, key in (("iops", "iops"), ("p99", "p99_us")):
                base, new = _samples(mine, before, metric), _samples(mine, after, metric)
                verdict = judge(after, "", key, base, new)
                if verdict.ratio is not None:
                    found.append(Change(after, drive, metric, verdict.verdict, verdict.ratio))
    return found


def _samples(rows: Sequence[HistoryRow], build: str, metric: str) -> list[float]:
    """A build's repeats of *metric* over its runs."""
    mine = [r for r in rows if r.shown_build == build]
    if metric == "iops":
        return [v for r in mine for v in r.iops_each]
    return [v for r in mine for v in r.p99_each if v is not None]


def of_builds(rows: Sequence[HistoryRow], builds: Sequence[str] | None) -> list[HistoryRow]:
    """The rows of *builds* (``--build``, may repeat; 'unknown build' names the rows without
    one); all without; a ConfigError naming the builds there are when none matches."""
    if not builds:
        return list(rows)
    kept = [r for r in rows if r.shown_build in builds]
    if not kept:
        there = ", ".join(dict.fromkeys(r.shown_build for r in rows)) or "none"
        raise ConfigError(f"--build {', '.join(builds)}: not in this series (its builds: {there})")
    return kept


def graph(one: FoundSeries, rows: Sequence[HistoryRow], output: Path) -> bytes:
    """The series' graph in the format *output*'s suffix names."""
    from pytest_ssd.figures import scale_latency_axes  # noqa: PLC0415  # matplotlib: -o only
    from pytest_ssd.figures.history import history_figure  # noqa: PLC0415

    fmt = FORMATS.get(output.suffix.lower())
    if fmt is None:
        raise ConfigError(f"-o {output}: give a .png or .svg file for the graph")
    fig = history_figure(rows, f"series {one.key}: {one.identity.describe()}", changes(rows))
    scale_latency_axes(fig)  # the p99 axis in the unit of its values, as the table writes them
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
    rows = of_builds(history(db.conn, *one.keys), args.build)
    return table(one, rows), graph(one, rows, args.output) if args.output else None
