"""The commands of ``pytest-ssd``; each prints what it made and raises SsdError otherwise."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from pytest_ssd.cli.export import TABLES, as_csv, as_json, rows
from pytest_ssd.db import ResultsDb
from pytest_ssd.errors import DatabaseError
from pytest_ssd.report.build import report_page

__all__ = ["TABLES", "compare", "export", "list_runs", "report"]


def list_runs(args: argparse.Namespace) -> None:
    with ResultsDb(args.db) as db:
        runs = db.runs()
        print(f"{'run':<24} {'start':<20} {'complete':<8}  outcome / devices")
        for run in runs:
            outcome = ", ".join(f"{n} {k}" for k, n in sorted(run.outcome.items())) or "—"
            labels = "; ".join(f"{d.dut_id}: {d.label}" for d in run.drives)
            done = "yes" if run.complete else "NO"
            print(f"{run.id:<24} {run.start[:19]:<20} {done:<8}  {outcome} | {labels}")
        print(f"\n{'label':<40} {'runs':>4}  newest run")
        for label, count, newest in db.labels():
            print(f"{label:<40} {count:>4}  {newest}")


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    print(path.absolute())


def report(args: argparse.Namespace) -> None:
    with ResultsDb(args.db) as db:
        run = db.run(args.run)
        compared = db.resolve(args.compare, exclude_run=run.id)
        folder = Path(run.run_dir)
        if not folder.is_dir():
            folder = args.db.parent / run.id
        output = args.output or folder / "report-from-db.html"
        _write(output, report_page(db, run, compared, output.parent / "figures-from-db"))


def compare(args: argparse.Namespace) -> None:
    with ResultsDb(args.db) as db:
        drives = db.resolve(args.labels)
        if not drives:
            raise DatabaseError(f"{args.db}: nothing measured for {', '.join(args.labels)}")
        base = db.run(drives[0].run_id)
        first = [d for d in drives if d.run_id == base.id]
        others = [d for d in drives if d.run_id != base.id]
        stem = "-".join("".join(c if c.isalnum() else "_" for c in x) for x in args.labels)[:80]
        output = args.output or args.db.parent / f"compare-{stem}.html"
        page = report_page(db, base, others, output.parent / f"figures-compare-{stem}", first)
        _write(output, page)


def export(args: argparse.Namespace) -> None:
    with ResultsDb(args.db) as db:
        for run_id in args.run:
            db.run(run_id)  # an unknown run is an error, not an empty file
        columns, data = rows(db, args.table, args.run)
    text = as_csv(columns, data) if args.format == "csv" else as_json(columns, data)
    if args.output is None:
        sys.stdout.write(text)
    else:
        _write(args.output, text)
