"""The commands of ``pytest-ssd``; each prints what it made and raises SsdError otherwise.

Output files are written through a temporary file beside them and a rename (a
failure leaves no partial file), and never onto a file the command reads.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import stat
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from pytest_ssd.cli.export import TABLES, as_csv, as_json, rows
from pytest_ssd.cli.history import history_of
from pytest_ssd.db import DriveRef, ResultsDb, RunInfo
from pytest_ssd.db.export import results_json
from pytest_ssd.db.lab import SPOOL_FILE
from pytest_ssd.db.runid import is_run_id
from pytest_ssd.db.sync import sync_run
from pytest_ssd.db.url import DbUrl
from pytest_ssd.errors import ConfigError, DatabaseError, SsdError
from pytest_ssd.results.files import storage_error, write_atomic
from pytest_ssd.results.location import find_config, report_dir
from pytest_ssd.specs.load import load_datasheet
from pytest_ssd.verdict.checks import KIND, checks_of, counted
from pytest_ssd.verdict.source import compare_checks, compare_runs
from pytest_ssd.verdict.summary import (
    PASSED,
    REGRESSED,
    UNDECIDED,
    DriveVerdicts,
    by_drive,
    gate,
    summary_lines,
)
from pytest_ssd.verdict.tolerance import Tolerances

if TYPE_CHECKING:
    from pytest_ssd.report.build import Rendered

__all__ = [
    "TABLES",
    "OutputError",
    "compare",
    "export",
    "history",
    "list_runs",
    "report",
    "site",
    "sync",
]

#: files SQLite keeps beside a database, which a reader reads too
SIDE_FILES = ("-wal", "-shm", "-journal")


class OutputError(SsdError):
    """The output file given is one the command reads (the database or its side files)."""


def refuse_inputs(output: Path, db: Path) -> None:
    """OutputError when *output* is the database or one of its side files.

    Compared by resolved name (symlinks) and, for files that exist, by device
    and inode (hard links, another path to the same file).
    """
    target = output.resolve()
    for name in (db, *(db.with_name(db.name + side) for side in SIDE_FILES)):
        same = name.resolve() == target
        if not same:
            with contextlib.suppress(OSError):  # either missing: not the same file
                same = output.samefile(name)
        if same:
            what = "the results database" if name == db else f"{name.name}, beside the database"
            raise OutputError(
                f"refusing to write {output}: it is {what} this command reads ({db});"
                " give -o another file"
            )


def list_runs(args: argparse.Namespace) -> None:
    with ResultsDb(args.db) as db:
        runs = db.runs()
        print(f"{'run':<29} {'start':<20} {'complete':<8}  outcome / devices")
        for run in runs:
            outcome = ", ".join(f"{n} {k}" for k, n in sorted(run.outcome.items())) or "—"
            labels = "; ".join(f"{d.dut_id}: {d.label}" for d in run.drives)
            done = "yes" if run.complete else "NO"
            print(f"{run.id:<29} {run.start[:19]:<20} {done:<8}  {outcome} | {labels}")
            for drive in run.drives:  # its qualification checks, when it made any
                found = checks_of(
                    r for r in db.derived_named(run.id, KIND) if r.device == drive.dut_id
                )
                if found:
                    print(f"{'':<29} {drive.dut_id}: qualification {counted(found)}")
        print(f"\n{'label':<40} {'runs':>4}  newest run")
        for label, count, newest in db.labels():
            print(f"{label:<40} {count:>4}  {newest}")


def _beside(db: DbUrl) -> Path:
    """Where outputs go by default: beside an SQLite file; in the working folder for a server."""
    return db.path.parent if db.path is not None else Path.cwd()


def sync(args: argparse.Namespace) -> None:
    """Upload a run's spool (its folder's spool.sqlite) into the database; again adds nothing.

    RUN is the run's folder, or its id: in the report folder here, else where the database's
    record of the run says its folder is (a run made with ``--ssd-report-dir`` elsewhere).
    """
    given = Path(args.run)
    if not (given / SPOOL_FILE).exists() and not given.is_absolute():
        inifile, configured = find_config(Path.cwd())
        given = report_dir(inifile, configured, Path.cwd()) / args.run
    recorded = None
    if not (given / SPOOL_FILE).is_file() and is_run_id(args.run):
        recorded = _recorded_folder(args.db, args.run)
        given = recorded or given
    spool = given / SPOOL_FILE
    if not spool.is_file():
        where = (
            f"{args.db} records its folder as {recorded}"
            if recorded is not None
            else f"{args.db} has no record of its folder"
        )
        raise DatabaseError(
            f"{spool}: no spool here ({where}): give the run's folder, which holds"
            f" {SPOOL_FILE} when the run recorded into a lab's database server (the 'files:'"
            " line at the end of the run; <its --ssd-report-dir>/<run id>)"
        )
    run_id, added = sync_run(spool, args.db)
    done = f"{added} rows added" if added else "nothing to add: it was there already"
    print(f"run {run_id} into {args.db}: {done}")


def _recorded_folder(db: DbUrl, run_id: str) -> Path | None:
    """Where the database says run *run_id*'s folder is (None: no record, or no answer)."""
    try:
        with ResultsDb(db) as found:
            return Path(found.run(run_id).run_dir)
    except SsdError:
        return None


def refuse_missing_folder(output: Path) -> None:
    """OutputError when -o names a file in a folder that does not exist (none is made for it)."""
    folder = output.absolute().parent
    if not folder.is_dir():
        what = "is not a folder" if folder.exists() else "does not exist"
        raise OutputError(
            f"cannot write {output}: {folder} {what}; make it first or give -o another"
        )


def history(args: argparse.Namespace) -> None:
    """One series across runs: the table on standard output, the graph into -o."""
    with ResultsDb(args.db) as db:
        text, picture = history_of(db, args)
    sys.stdout.write(text)
    if picture is not None:
        _write(args.output, picture)


def site(args: argparse.Namespace) -> None:
    """The lab's static site of the database, into -o DIR: only the pages that changed."""
    from pytest_ssd.site_pages import build_site  # noqa: PLC0415  # the site's command only

    with ResultsDb(args.db) as db:
        try:
            done = build_site(db, args.output)
        except OSError as e:
            raise storage_error(args.output, e, "-o") from e
    print(done.line())


def _write(path: Path, data: str | bytes) -> None:
    """Write *path* whole or not at all (a device or pipe such as /dev/stdout: straight)."""
    try:
        if path.exists() and not stat.S_ISREG(path.stat().st_mode):
            with path.open("wb") as fh:
                fh.write(data.encode() if isinstance(data, str) else data)
        else:  # through a symlink: replace the file it points to, not the link
            write_atomic(path.resolve(), data)
    except OSError as exc:
        raise storage_error(path, exc, "-o") from None
    print(path.absolute())


def _write_report(path: Path, rendered: Rendered, figures: Path) -> None:
    """The page and its figures folder (each printed), then a line per section that failed.

    The page embeds its graphs; the folder beside it keeps each as PNG and SVG files.
    """
    _write(path, rendered.html)
    if figures.is_dir():
        print(f"{figures.absolute()}/")
    for line in rendered.problems:
        print(f"pytest-ssd: {line}", file=sys.stderr)


def _page(
    db: ResultsDb,
    run: RunInfo,
    compared: Sequence[DriveRef],
    folder: Path,
    current: Sequence[DriveRef] | None = None,
    *,
    tolerances: Tolerances | None = None,
) -> Rendered:
    """:func:`pytest_ssd.report.build.report_page` with the declared sections, its progress on
    stderr.  The report draws with matplotlib (0.6 s to import): imported by the two commands
    that draw, not at every ``pytest-ssd`` start."""
    from pytest_ssd.cli.sections import declared_sections  # noqa: PLC0415
    from pytest_ssd.report.build import report_page, to_stderr  # noqa: PLC0415

    return report_page(
        db,
        run,
        compared,
        folder,
        current,
        declared=declared_sections(),
        progress=to_stderr,
        tolerances=tolerances,
    )


def report(args: argparse.Namespace) -> None:
    with ResultsDb(args.db) as db:
        run = db.run(args.run)
        compared = db.resolve(args.compare, exclude_run=run.id)
        folder = Path(run.run_dir)
        if not folder.is_dir():
            folder = _beside(args.db) / run.id
        if args.output is None:
            folder.mkdir(parents=True, exist_ok=True)  # a run folder removed: made again here
        output = args.output or folder / "report-from-db.html"
        figures = output.parent / "figures-from-db"
        rendered = _page(db, run, compared, figures)
        _write_report(output, rendered, figures)


def compare(args: argparse.Namespace) -> int:
    """The comparison report; with ``--gate`` the verdicts per drive and the gate's exit code
    (:mod:`pytest_ssd.verdict.summary`)."""
    if args.gate and len(args.labels) != 2:  # BASE NEW
        raise ConfigError(f"compare --gate takes two labels, BASE NEW (given: {len(args.labels)})")
    tolerances = _tolerances(args)  # a bad datasheet is refused before the database is read
    with ResultsDb(args.db) as db:
        verdicts = compare_runs(db, args.labels[0], args.labels[1], tolerances) if args.gate else []
        checks = compare_checks(db, args.labels[0], args.labels[1]) if args.gate else []
        drives = db.resolve(args.labels)
        if not drives:
            raise DatabaseError(f"{args.db}: nothing measured for {', '.join(args.labels)}")
        if len(drives) < 2:
            raise ConfigError(
                f"compare needs two drives or more: {', '.join(map(repr, args.labels))} is"
                f" one ({drives[0].label}, run {drives[0].run_id}); name another label or run id"
                " (pytest-ssd list shows them)"
            )
        base = db.run(drives[0].run_id)
        first = [d for d in drives if d.run_id == base.id]
        others = [d for d in drives if d.run_id != base.id]
        stem = "-".join("".join(c if c.isalnum() else "_" for c in x) for x in args.labels)[:80]
        output = args.output or _beside(args.db) / f"compare-{stem}.html"
        figures = output.parent / f"figures-compare-{stem}"
        page = _page(db, base, others, figures, first, tolerances=tolerances)
        _write_report(output, page, figures)
    if not args.gate:
        return PASSED
    judged = by_drive(verdicts, checks)
    print_verdicts(judged)
    code, said = gate(judged, args.allow_unknown / 100)
    print(said)
    return code


def _tolerances(args: argparse.Namespace) -> Tolerances:
    """The gate's bands: ``--tolerance``, then ``--datasheet``'s ``[baseline]`` table."""
    if args.datasheet is not None and not args.gate:
        raise ConfigError("compare --datasheet goes with --gate: its [baseline] bands judge")
    return _bands(args)


def _bands(args: argparse.Namespace) -> Tolerances:
    sheet = load_datasheet(args.datasheet).baseline if args.datasheet is not None else None
    return Tolerances(dict(args.tolerance), "--tolerance", sheet)


def calibrate(args: argparse.Namespace) -> int:
    """An unchanged build judged against itself (:mod:`pytest_ssd.verdict.calibrate`): one run's
    even repeats against its odd ones, or a second run against a first as the gate judges
    it, with the bands that host needs; the table and each drive's shares; exit 1 on a
    false claim, 5 when nothing could be judged."""
    from pytest_ssd.verdict import calibrate as aa  # noqa: PLC0415

    if len(args.runs) > 2:
        raise ConfigError(f"calibrate takes one run or two (given: {len(args.runs)})")
    tolerances = _bands(args)
    with ResultsDb(args.db) as db:
        if len(args.runs) == 1:
            found = aa.calibrate_run(db, args.runs[0], tolerances)
            print(f"{args.runs[0]}: {aa.SIDES[1]} against {aa.SIDES[0]} (interleaved as taken)")
        else:
            found = compare_runs(db, args.runs[0], args.runs[1], tolerances)
            print(f"{args.runs[1]} against {args.runs[0]}: one build, two runs")
    judged = by_drive(found)
    print_table(judged, "not shown here")
    print("== summary")
    for d in judged:
        print(f"{d.named}: {aa.shares(d.verdicts)}")
    if len(args.runs) == 2:  # what this host's runs of one build need of the band of "same"
        print("bands (a datasheet's [baseline], or --tolerance METRIC=PERCENT):")
        for metric, (near, far) in aa.bands_needed([v for _, v in found]).items():
            print(f"  {metric}: no claim from ±{_pct(near)}, every line 'same' from ±{_pct(far)}")
    claimed = [d.named for d in judged if any(d.counts[word] for word in aa.CLAIMS)]
    if claimed:
        print(f"calibration failed: an unchanged drive was judged changed on {', '.join(claimed)}")
        return REGRESSED
    if not any(d.counts["same"] for d in judged):
        print(
            "calibration not judged: no line was 'same' (4 repeats a side bound an interval:"
            " one run of --ssd-repeat=8 or more, or two of --ssd-repeat=4 or more)"
        )
        return UNDECIDED
    print("calibration passed: no false claim")
    return PASSED


def _pct(share: float) -> str:
    return f"{share * 100:.3g} %"


#: lines a drive's verdicts other than "same" take in the gate's table; the report lists all
GATE_LINES = 12


def print_verdicts(drives: list[DriveVerdicts]) -> None:
    """The gate's table: per drive its lines other than "same" (worst first, at most
    :data:`GATE_LINES`), then a summary a line or two per drive."""
    print_table(drives)
    print("\n".join(["== summary", *summary_lines(drives)]))


def print_table(drives: list[DriveVerdicts], rest: str = "the report lists every line") -> None:
    """Per drive its lines other than "same", worst first, at most :data:`GATE_LINES`."""
    if not any(d.verdicts for d in drives):
        print("no point measured by both: nothing to judge")
    for d in drives:
        print(f"== {d.named}")
        shown = [v for v in d.worst_first() if v.verdict != "same"]
        for v in shown[:GATE_LINES]:
            note = v.reason + (f", {v.repeats_needed} repeats a side" if v.repeats_needed else "")
            text = v.line() if v.ratio is not None else f"{v.point} {v.direction} {v.label}"
            where = f"{v.where()} · " if v.where() else ""
            print(f"{v.verdict:<10} {where}{text}" + (f"  [{note}]" if note else ""))
        if len(shown) > GATE_LINES:
            print(f"... {len(shown) - GATE_LINES} more not 'same': {rest}")
        for check in d.checks:
            if check.verdict not in ("same", "passed"):
                print(f"{check.verdict:<10} {check.line()}")


def export(args: argparse.Namespace) -> None:
    if args.format == "results-json":
        _results_json(args)
        return
    with ResultsDb(args.db) as db:
        for run_id in args.run:
            db.run(run_id)  # an unknown run is an error, not an empty file
        columns, data = rows(db, args.table, args.run)
    text = as_csv(columns, data) if args.format == "csv" else as_json(columns, data)
    if args.output is None:
        sys.stdout.write(text)
    else:
        _write(args.output, text)


def _results_json(args: argparse.Namespace) -> None:
    """One run's results.json (the schema a run writes), from the database."""
    if len(args.run) != 1:
        raise ConfigError("--format=results-json exports one run: give --run RUN-ID (or latest)")
    with ResultsDb(args.db) as db:
        run_id = db.run(args.run[0]).id
        text = json.dumps(results_json(db, run_id), indent=1) + "\n"
    if args.output is None:
        sys.stdout.write(text)
    else:
        _write(args.output, text)
