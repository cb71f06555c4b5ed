"""``pytest-ssd``: reports, comparisons and exports from the results database, without a run.

Exit codes: 0 done, 1 ``compare --gate`` found a regression, 2 bad command line
(argparse), 3 the database lacks what was asked for or cannot be read (missing,
damaged, not pytest-ssd's), 4 the output cannot be written, or is a file the
command reads (the database), 5 ``compare --gate`` could not judge.
"""

from __future__ import annotations

import argparse
import math
import os
import sqlite3
import sys
from collections.abc import Sequence
from pathlib import Path

from pytest_ssd.cli import commands
from pytest_ssd.db.faults import database_error
from pytest_ssd.db.url import ENV, db_url
from pytest_ssd.errors import ConfigError, DatabaseError, SsdError
from pytest_ssd.results.files import StorageError
from pytest_ssd.results.location import default_db
from pytest_ssd.verdict.summary import REGRESSED, UNDECIDED
from pytest_ssd.verdict.tolerance import parse_tolerance

EXIT_REGRESSED, EXIT_USAGE, EXIT_DB, EXIT_OUTPUT = REGRESSED, 2, 3, 4


def _tolerance(text: str) -> tuple[str, float]:
    try:
        return parse_tolerance(text)
    except SsdError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _percent(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not 0 <= value <= 100:
        raise argparse.ArgumentTypeError(f"{text!r} is not a percent from 0 to 100")
    return value


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(
        prog="pytest-ssd",
        description="Reports, comparisons and exports from pytest-ssd's results database.",
        epilog="Exit codes: 0 done, 1 compare --gate found a regression, 2 bad arguments,"
        " 3 not in the database (or unreadable), 4 cannot write the output (or it is the"
        " database), 5 compare --gate could not judge (more unknown than --allow-unknown"
        " allows, or nothing measured by both).",
    )
    db_help = (
        "the results database: a file, sqlite:///FILE or postgresql://USER@HOST/DATABASE"
        f" (default: as the plugin finds it: ${ENV}, the ini option ssd_db, else"
        " <ssd_report_dir>/results.sqlite from pytest's configuration file, else"
        " reports/results.sqlite beside it)"
    )
    top.add_argument("--db", default=None, metavar="URL", help=db_help)
    # --db after the command too: the subcommand's value wins, absent it leaves the top's
    after = argparse.ArgumentParser(add_help=False)
    after.add_argument("--db", default=argparse.SUPPRESS, metavar="URL", help=db_help)
    sub = top.add_subparsers(dest="command", required=True, metavar="COMMAND")

    p = sub.add_parser("list", parents=[after], help="runs and device labels in the database")
    p.set_defaults(func=commands.list_runs)

    p = sub.add_parser("report", parents=[after], help="rebuild a run's report from the database")
    p.add_argument("run", metavar="RUN-ID", help="a run id (pytest-ssd list), or latest")
    p.add_argument(
        "--compare",
        action="append",
        default=[],
        metavar="LABEL|RUN-ID|all",
        help="overlay earlier drives on every comparison graph (may repeat)",
    )
    p.add_argument("-o", "--output", type=Path, help="the HTML file (default: in the run folder)")
    p.set_defaults(func=commands.report)

    p = sub.add_parser("compare", parents=[after], help="a comparison report of drives by label")
    p.add_argument("labels", nargs="+", metavar="LABEL", help="labels (or run ids); first is base")
    p.add_argument("-o", "--output", type=Path, help="the HTML file (default: beside the db)")
    p.add_argument(
        "--gate",
        action="store_true",
        help="BASE NEW: print each metric's verdict (regressed, improved, same, unknown) per"
        f" drive, exit {EXIT_REGRESSED} when any point regressed and {UNDECIDED} when more"
        " verdicts are unknown than --allow-unknown allows (default: none)",
    )
    p.add_argument(
        "--allow-unknown",
        nargs="?",
        const=100.0,
        default=0.0,
        type=_percent,
        metavar="PERCENT",
        help="with --gate: the share of a drive's verdicts that may be unknown and the gate"
        " still pass (alone: any share; default 0: an unknown fails the gate)",
    )
    _band_options(p, "with --gate: ")
    p.set_defaults(func=commands.compare)

    p = sub.add_parser(
        "calibrate",
        parents=[after],
        help="an unchanged build against itself (A/A): can this host and these repeats carry"
        " a gate, with which bands? exit 1 on a false claim, 5 when nothing was judged",
    )
    p.add_argument(
        "runs",
        nargs="+",
        metavar="RUN",
        help="a run id or label (its newest run): its even repeats against its odd ones"
        " (--ssd-repeat=8 or more); or two runs of one build: the second against the first,"
        " and the bands of 'same' the host needs",
    )
    _band_options(p)
    p.set_defaults(func=commands.calibrate)

    p = sub.add_parser(
        "export",
        parents=[after],
        help="flat tables (CSV or JSON) for spreadsheets, or a run's results.json",
    )
    p.add_argument(
        "--format",
        choices=("csv", "json", "results-json"),
        default="csv",
        help="results-json: the results.json of one --run (latest: the newest), as a run writes it",
    )
    p.add_argument(
        "--table",
        choices=sorted(commands.TABLES),
        default="measurements",
        help="what to export: one row per measurement and direction by default",
    )
    p.add_argument("--run", action="append", default=[], metavar="RUN-ID", help="only these runs")
    p.add_argument("-o", "--output", type=Path, help="the file (default: standard output)")
    p.set_defaults(func=commands.export)

    p = sub.add_parser(
        "sync",
        parents=[after],
        help="upload a run recorded while the lab's database was away (its folder's spool)",
    )
    p.add_argument("run", metavar="RUN", help="the run's folder, or its id in the report folder")
    p.set_defaults(func=commands.sync)

    p = sub.add_parser(
        "history",
        parents=[after],
        help="one series (drive model and size, test point, state, profile, host class)"
        " across builds (--ssd-build, else the firmware) and drives: a table, and a graph"
        " with -o",
    )
    p.add_argument("--series", metavar="KEY", help="the series' key (a prefix will do)")
    p.add_argument("--point", metavar="TEXT", help="a part of the test point (test and job name)")
    p.add_argument("--model", metavar="TEXT", help="a part of the drive model")
    p.add_argument(
        "--build",
        action="append",
        metavar="NAME",
        help="only this build's runs of the series (may repeat; 'unknown build': runs without)",
    )
    p.add_argument("-o", "--output", type=Path, help="the graph: a .png or .svg file")
    p.set_defaults(func=commands.history)

    p = sub.add_parser(
        "site",
        parents=[after],
        help="a static site of every series across builds, with the step changes found as"
        " alerts (index.html, alerts.html, series/KEY.html)",
    )
    p.add_argument("-o", "--output", type=Path, required=True, metavar="DIR", help="its folder")
    p.set_defaults(func=commands.site)
    return top


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        args.db = db_url(args.db or os.environ.get(ENV) or default_db(Path.cwd()))
        output = getattr(args, "output", None)
        if output is not None:  # before anything is read or written
            commands.refuse_missing_folder(output)
            if args.db.path is not None:
                commands.refuse_inputs(output, args.db.path)
        code = args.func(args)
        if code:  # a gate that did not pass: its own code (1 regressed, 5 not judged)
            return int(code)
    except BrokenPipeError:  # `pytest-ssd list | head`: the reader has what it wanted
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except DatabaseError as exc:
        print(f"pytest-ssd: {exc}", file=sys.stderr)
        return EXIT_DB
    except sqlite3.Error as exc:  # a damaged page found outside a ResultsDb block
        print(f"pytest-ssd: {database_error(args.db.file, exc)}", file=sys.stderr)
        return EXIT_DB
    except (commands.OutputError, StorageError) as exc:
        print(f"pytest-ssd: {exc}", file=sys.stderr)
        return EXIT_OUTPUT
    except OSError as exc:
        print(f"pytest-ssd: cannot write {exc.filename}: {exc.strerror}", file=sys.stderr)
        return EXIT_OUTPUT
    except ConfigError as exc:  # arguments that do not go together
        print(f"pytest-ssd: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except SsdError as exc:
        print(f"pytest-ssd: {exc}", file=sys.stderr)
        return EXIT_DB
    return 0


def _band_options(p: argparse.ArgumentParser, when: str = "") -> None:
    """The bands of "same": ``--tolerance`` per metric, then a datasheet's ``[baseline]``."""
    p.add_argument(
        "--tolerance",
        action="append",
        default=[],
        type=_tolerance,
        metavar="METRIC=PERCENT",
        help=f"{when}the band of 'same' for a metric, before the datasheet's"
        " (default: the runs' spread)",
    )
    p.add_argument(
        "--datasheet",
        type=Path,
        metavar="FILE",
        help=f"{when}the bands of its [baseline] table, as a run with --datasheet=FILE judges",
    )
